#include "experiments/result_store.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/check.h"
#include "experiments/results.h"
#include "tests/experiments/scratch.h"

namespace bagua::experiments {
namespace {

namespace fs = std::filesystem;
using bagua::testing::read_file;
using bagua::testing::write_file;

class ResultStoreTest : public bagua::testing::ScratchDirTest {
 protected:
  // dir_ does not exist when a test starts: the store creates it on its first write.
  ResultStoreTest() : ScratchDirTest("bagua_store_test", /*create=*/false) {}

  const std::vector<std::string> header_ = {"point", "x", "value"};
};

TEST_F(ResultStoreTest, CreatesNothingUntilTheFirstWrite) {
  ResultStore store(dir_, header_);
  EXPECT_FALSE(fs::exists(dir_));
  store.append_row({"p0", "1", "10"});
  EXPECT_EQ(read_file(dir_ / "results.csv"), "point,x,value\np0,1,10\n");
}

TEST_F(ResultStoreTest, NeverWritesARowTwice) {
  {
    ResultStore store(dir_, header_);
    store.append_row({"p0", "1", "10"});
    store.append_row({"p0", "1", "10"});
  }
  ResultStore again(dir_, header_);
  EXPECT_TRUE(again.has_row("p0"));
  again.append_row({"p0", "1", "10"});
  again.append_row({"p1", "2", "20"});
  EXPECT_EQ(read_file(dir_ / "results.csv"), "point,x,value\np0,1,10\np1,2,20\n");
}

TEST_F(ResultStoreTest, ATornLastLineIsCutOffAndItsRowWrittenAgain) {
  // An interrupted run: p0's row complete, p1's row torn mid-line, p1's folder complete.
  write_file(dir_ / "results.csv", "point,x,value\np0,1,10\np1,2,2");
  write_file(dir_ / "points" / "p1" / "summary.json", R"({"point": "p1"})");
  ResultStore store(dir_, header_);
  EXPECT_EQ(read_file(dir_ / "results.csv"), "point,x,value\np0,1,10\n");
  EXPECT_TRUE(store.has_row("p0"));
  EXPECT_FALSE(store.has_row("p1"));
  ASSERT_TRUE(store.read_summary("p1").has_value());
  EXPECT_EQ((*store.read_summary("p1"))["point"], "p1");
  EXPECT_FALSE(store.read_summary("p2").has_value());
  store.append_row({"p1", "2", "20"});
  EXPECT_EQ(read_file(dir_ / "results.csv"), "point,x,value\np0,1,10\np1,2,20\n");
}

TEST_F(ResultStoreTest, ATornHeaderIsWrittenAgain) {
  write_file(dir_ / "results.csv", "point,x,va");
  ResultStore store(dir_, header_);
  store.append_row({"p0", "1", "10"});
  EXPECT_EQ(read_file(dir_ / "results.csv"), "point,x,value\np0,1,10\n");
}

TEST_F(ResultStoreTest, AnotherExperimentsResultsAreRefused) {
  write_file(dir_ / "results.csv", "point,y,value\np0,1,10\n");
  try {
    ResultStore store(dir_, header_);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("holds results of another experiment"), std::string::npos);
  }
  EXPECT_EQ(read_file(dir_ / "results.csv"), "point,y,value\np0,1,10\n");  // untouched
}

TEST_F(ResultStoreTest, PointFoldersAppearComplete) {
  ResultStore store(dir_, header_);
  // Leftovers of an interrupted write, and of an older run.
  write_file(dir_ / "points" / ".p0.partial" / "iterations.csv", "half");
  write_file(dir_ / "points" / "p0" / "stale.txt", "old");
  store.write_point("p0", {{"iterations.csv", "a\n"}, {"summary.json", "{\"point\": \"p0\"}"}});
  EXPECT_FALSE(fs::exists(dir_ / "points" / ".p0.partial"));
  EXPECT_FALSE(fs::exists(dir_ / "points" / "p0" / "stale.txt"));
  EXPECT_EQ(read_file(dir_ / "points" / "p0" / "iterations.csv"), "a\n");
  EXPECT_EQ((*store.read_summary("p0"))["point"], "p0");
}

TEST_F(ResultStoreTest, RowsGoInPointOrder) {
  ResultStore store(dir_, header_);
  OrderedRows rows(store, 4);
  rows.done(2, std::vector<std::string>{"p2", "c", "3"});
  EXPECT_FALSE(fs::exists(dir_ / "results.csv"));  // p0 and p1 are not done
  rows.done(0, std::vector<std::string>{"p0", "a", "1"});
  EXPECT_EQ(read_file(dir_ / "results.csv"), "point,x,value\np0,a,1\n");
  rows.done(1, std::nullopt);  // e.g. its row was already there
  EXPECT_EQ(read_file(dir_ / "results.csv"), "point,x,value\np0,a,1\np2,c,3\n");
  rows.done(3, std::vector<std::string>{"p3", "d", "4"});
  EXPECT_EQ(read_file(dir_ / "results.csv"), "point,x,value\np0,a,1\np2,c,3\np3,d,4\n");
}

TEST_F(ResultStoreTest, AFileInTheWayIsAConfigError) {
  write_file(dir_, "not a directory");
  EXPECT_THROW(ResultStore(dir_, header_), ConfigError);
}

// With statuses: the header ends in status, error.
const std::vector<std::string> kWithStatus = {"point", "x", "value", "status", "error"};

TEST_F(ResultStoreTest, ARowNotOkIsReplacedInPlaceWhenItsPointRunsAgain) {
  {
    ResultStore store(dir_, kWithStatus);
    store.append_row({"p0", "1", "10", "ok", ""});
    store.append_row({"p1", "2", "", "failed", "error: boom, at step 3"});  // quoted: a comma
    store.append_row({"p2", "3", "30", "diverged", "diverged: loss inf at iteration 4 on rank 0"});
  }
  ResultStore store(dir_, kWithStatus);
  EXPECT_EQ(store.row_status("p1"), "failed");
  EXPECT_EQ(store.row_status("p2"), "diverged");
  EXPECT_FALSE(store.row_status("p3").has_value());
  EXPECT_EQ(store.rows_with_status("ok"), std::vector<std::string>({"p0"}));
  EXPECT_EQ(store.rows_with_status("ok", /*negate=*/true), std::vector<std::string>({"p1", "p2"}));
  store.append_row({"p0", "1", "99", "ok", ""});  // an ok row is never written twice
  store.append_row({"p1", "2", "20", "ok", ""});
  EXPECT_EQ(read_file(dir_ / "results.csv"),
            "point,x,value,status,error\np0,1,10,ok,\np1,2,20,ok,\n"
            "p2,3,30,diverged,diverged: loss inf at iteration 4 on rank 0\n");
  EXPECT_EQ(store.row_status("p1"), "ok");
  EXPECT_FALSE(fs::exists(dir_ / "results.csv.tmp"));
}

TEST_F(ResultStoreTest, AResultsFileWithoutStatusesKeepsItsColumns) {
  write_file(dir_ / "results.csv", "point,x,value\np0,1,10\n");
  ResultStore store(dir_, kWithStatus);
  EXPECT_EQ(store.row_status("p0"), "ok");
  store.append_row({"p2", "3", "", "failed", "error: boom"});  // no row: it could never be replaced
  EXPECT_FALSE(store.row_status("p2").has_value());
  store.append_row({"p1", "2", "20", "ok", ""});
  store.append_row({"p2", "3", "30", "ok", ""});  // its rerun
  EXPECT_EQ(read_file(dir_ / "results.csv"), "point,x,value\np0,1,10\np1,2,20\np2,3,30\n");
}

}  // namespace
}  // namespace bagua::experiments
