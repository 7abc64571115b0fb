// A sweep under mpirun whose points use the mpi runtime goes on past a point that fails
// (runtime/mpi/world.h: every rank agrees on the point's outcome; docs/running_sweeps.md): the point
// is recorded diverged, the next point runs, the exit status and the summary count it, and a rerun
// retries only that point.
//
// The sweep: configs/runtime/all_algorithms.json, gradient_allreduce (flat, ring), 4 ranks (2 hosts x
// 2), 24 iterations, over optimizer.lr = 0.5, 1e300, 0.25. Worked out by hand for the middle point:
// the weights start at zero, so iteration 0's batch loss is ln 2 = 0.693147 on every rank (logistic
// loss log(1 + e^0)); its update w := 0 - 1e300 * g exceeds the float maximum (3.4e38) for every
// non-zero gradient entry, so the weights become +-inf (the same on every rank: the allreduced
// gradient is the same), and iteration 1's loss is nan on every rank (inf - inf in the logits). So the
// point diverges at iteration 1, keeps iteration 0 (loss 0.693147), and the points around it are ok.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/experiments/scratch.h"

#if !defined(BAGUA_BINARY) || !defined(BAGUA_SOURCE_DIR) || !defined(BAGUA_MPI_LAUNCH) || \
    !defined(BAGUA_NUMPROC_FLAG)
#error "the build defines BAGUA_BINARY, BAGUA_SOURCE_DIR, BAGUA_MPI_LAUNCH, BAGUA_NUMPROC_FLAG"
#endif

namespace {

namespace fs = std::filesystem;
using bagua::testing::lines_of;
using Json = nlohmann::json;
using bagua::testing::read_file;
using bagua::testing::run_command;

// The results.csv row of each point, by the point's position in the sweep (rows are in sweep order).
std::vector<std::string> rows_of(const fs::path& out) {
  std::vector<std::string> rows = lines_of(read_file(out / "results.csv"));
  if (!rows.empty()) rows.erase(rows.begin());  // the header
  return rows;
}

class MpiSweepFailure : public bagua::testing::ScratchDirTest {
 protected:
  MpiSweepFailure() : ScratchDirTest("bagua_mpi_sweep_failure_test") {}

  bagua::testing::CommandResult run_sweep() {
    const std::vector<std::string> words = {
        BAGUA_BINARY,
        "run",
        "configs/runtime/all_algorithms.json",
        "--out",
        (dir_ / "out").string(),
        "--set",
        R"(sweep={"axes": {"optimizer.lr": [0.5, 1e300, 0.25]}})",
        "--set",
        R"(algorithm={"name": "gradient_allreduce", "hierarchical": false})"};
    return run_command(BAGUA_SOURCE_DIR,
                       std::string(BAGUA_MPI_LAUNCH) + " " + BAGUA_NUMPROC_FLAG + " 4 ", words, dir_);
  }
};

TEST_F(MpiSweepFailure, ADivergedMiddlePointIsRecordedTheNextRunsAndARerunRetriesOnlyIt) {
  const bagua::testing::CommandResult first = run_sweep();
  // bagua's exit status 1 (a point did not complete) on rank 0; mpirun exits with it.
  EXPECT_EQ(first.exit_code, 1) << first.err;
  EXPECT_NE(first.out.find("1 of 3 points did not complete (0 failed, 1 diverged); a rerun retries "
                           "only those"),
            std::string::npos)
      << first.out;
  EXPECT_EQ(first.err.find("watchdog"), std::string::npos) << first.err;

  const fs::path out = dir_ / "out";
  const std::vector<std::string> rows = rows_of(out);
  ASSERT_EQ(rows.size(), 3u) << read_file(out / "results.csv");
  const std::regex ok(R"(p000-[0-9a-f]+,0\.5,mpi,4,gradient_allreduce,.*,ok,)");
  const std::regex diverged(
      R"(p001-[0-9a-f]+,1e\+300,mpi,4,gradient_allreduce,.*,diverged,diverged: loss nan at )"
      R"(iteration 1 on rank [0-3])");
  const std::regex ok_after(R"(p002-[0-9a-f]+,0\.25,mpi,4,gradient_allreduce,.*,ok,)");
  EXPECT_TRUE(std::regex_match(rows[0], ok)) << rows[0];
  EXPECT_TRUE(std::regex_match(rows[1], diverged)) << rows[1];
  EXPECT_TRUE(std::regex_match(rows[2], ok_after)) << rows[2];

  // The diverged point's summary and its one kept iteration (loss ln 2, see the header).
  std::string diverged_id;
  for (const auto& entry : fs::directory_iterator(out / "points"))
    if (entry.path().filename().string().rfind("p001-", 0) == 0)
      diverged_id = entry.path().filename().string();
  ASSERT_FALSE(diverged_id.empty());
  const Json summary = Json::parse(read_file(out / "points" / diverged_id / "summary.json"));
  EXPECT_EQ(summary.value("status", ""), "diverged");
  EXPECT_EQ(summary.value("diverged_at_iteration", -1), 1);
  const std::vector<std::string> iterations =
      lines_of(read_file(out / "points" / diverged_id / "iterations.csv"));
  ASSERT_EQ(iterations.size(), 2u) << "a header and iteration 0";
  EXPECT_EQ(iterations[1].rfind("0,", 0), 0u) << iterations[1];
  EXPECT_NE(iterations[1].find(",0.6931471"), std::string::npos) << iterations[1];

  // The rerun skips the ok points and runs only the diverged one again: same rows, the ok ones byte
  // for byte.
  const bagua::testing::CommandResult again = run_sweep();
  EXPECT_EQ(again.exit_code, 1) << again.err;
  const std::vector<std::string> err = lines_of(again.err);
  auto has = [&](const std::regex& re) {
    for (const std::string& line : err)
      if (std::regex_match(line, re)) return true;
    return false;
  };
  EXPECT_TRUE(has(std::regex(R"(\[1/3\] p000-[0-9a-f]+ optimizer\.lr=0\.5: already done, skipped)")))
      << again.err;
  EXPECT_TRUE(has(std::regex(R"(\[2/3\] p001-[0-9a-f]+ optimizer\.lr=1e\+300: DIVERGED .*)")))
      << again.err;
  EXPECT_TRUE(has(std::regex(R"(\[3/3\] p002-[0-9a-f]+ optimizer\.lr=0\.25: already done, skipped)")))
      << again.err;
  const std::vector<std::string> rerun_rows = rows_of(out);
  ASSERT_EQ(rerun_rows.size(), 3u);
  EXPECT_EQ(rerun_rows[0], rows[0]);
  EXPECT_TRUE(std::regex_match(rerun_rows[1], diverged)) << rerun_rows[1];
  EXPECT_EQ(rerun_rows[2], rows[2]);
}

}  // namespace
