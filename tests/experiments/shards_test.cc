// `bagua run --shard K/N` and `bagua merge` (experiments/shards.h), run as separate processes as a job
// array or GNU parallel runs them.
//
// A sweep of 7 points in 3 shards: shard K holds the points whose sweep index i has i % 3 == K - 1,
//   1/3: p000 p003 p006    2/3: p001 p004    3/3: p002 p005
// and the merge of the three parts is byte for byte the sweep run alone.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/experiments/bagua_command.h"

namespace {

namespace fs = std::filesystem;

using bagua::testing::read_file;
using Result = bagua::testing::CommandResult;

const char* kConfig = "configs/quickstart.json";
// 7 points (not a multiple of 3), 20 iterations each.
const char* kSweep =
    R"(sweep={"axes": {"cluster.nic.bandwidth": ["1 Gbps", "2 Gbps", "5 Gbps", "10 Gbps", "25 Gbps",
                                                  "50 Gbps", "100 Gbps"]}})";

// results.csv and every file under points/: what the merge must make equal to a run alone.
std::map<std::string, std::string> results_of(const fs::path& root) {
  std::map<std::string, std::string> files;
  if (fs::exists(root / "results.csv")) files["results.csv"] = read_file(root / "results.csv");
  if (!fs::exists(root / "points")) return files;
  for (const auto& e : fs::recursive_directory_iterator(root / "points"))
    if (e.is_regular_file()) files[fs::relative(e.path(), root).string()] = read_file(e.path());
  return files;
}

// The point ids of a results.csv, in row order.
std::vector<std::string> row_ids(const fs::path& results) {
  std::vector<std::string> ids;
  std::stringstream s(read_file(results));
  std::string line;
  std::getline(s, line);  // the header
  while (std::getline(s, line))
    ids.push_back(line.substr(0, line.find(',')));
  return ids;
}

class Shards : public bagua::testing::BaguaCommandTest {
 protected:
  Shards() : BaguaCommandTest("bagua_shards_test") {}

  // `bagua ARGS` from the source tree; `env` (shell words such as VAR=value) before it.
  Result bagua(std::vector<std::string> args, const std::string& env = "") const {
    return BaguaCommandTest::bagua(std::move(args), env.empty() ? "" : "env " + env + " ");
  }

  Result run_sweep(const fs::path& out, std::vector<std::string> extra = {},
                   const std::string& env = "") const {
    std::vector<std::string> args = {"run",        kConfig,   "--out",
                                     out.string(), "--quiet", "--set",
                                     kSweep,       "--set",   "schedule.iterations=20"};
    args.insert(args.end(), extra.begin(), extra.end());
    return bagua(args, env);
  }

  // The sweep alone, and its ids in sweep order.
  void run_alone() {
    const Result r = run_sweep(dir_ / "alone");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    alone_ = results_of(dir_ / "alone");
    ids_ = row_ids(dir_ / "alone" / "results.csv");
    ASSERT_EQ(ids_.size(), 7u);
  }

  // Shards 1/3 and 3/3 by --shard; 2/3 from Slurm's variables (an array --array=10-14:2, this task
  // the second: (12 - 10) / 2 + 1 = 2).
  void run_shards(const fs::path& out, std::set<int> which = {1, 2, 3}) const {
    for (int k : which) {
      const Result r = k == 2 ? run_sweep(out, {},
                                          "SLURM_ARRAY_TASK_ID=12 SLURM_ARRAY_TASK_MIN=10 "
                                          "SLURM_ARRAY_TASK_MAX=14 SLURM_ARRAY_TASK_STEP=2 "
                                          "SLURM_ARRAY_TASK_COUNT=3")
                              : run_sweep(out, {"--shard", std::to_string(k) + "/3"});
      ASSERT_EQ(r.exit_code, 0) << "shard " << k << ": " << r.err;
    }
  }

  std::map<std::string, std::string> alone_;
  std::vector<std::string> ids_;
};

TEST_F(Shards, ThreePartsMergeIntoTheSweepRunAlone) {
  run_alone();
  const fs::path out = dir_ / "sharded";
  run_shards(out);
  // Each part holds its own points, in sweep order, and nothing is in DIR itself before the merge.
  const std::vector<std::vector<std::string>> expected = {
      {ids_[0], ids_[3], ids_[6]}, {ids_[1], ids_[4]}, {ids_[2], ids_[5]}};
  for (int k = 1; k <= 3; ++k) {
    const fs::path part = out / "shards" / (std::to_string(k) + "-of-3");
    EXPECT_EQ(row_ids(part / "results.csv"), expected[static_cast<size_t>(k - 1)]) << part;
    EXPECT_TRUE(fs::is_regular_file(part / "part.json")) << part;
  }
  EXPECT_FALSE(fs::exists(out / "results.csv"));

  const Result merged = bagua({"merge", out.string()});
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  EXPECT_EQ(merged.out, "merged 7 points from 3 parts into " + (out / "results.csv").string() + "\n");
  EXPECT_EQ(results_of(out), alone_);
  // A second merge finds everything there and changes nothing.
  const Result again = bagua({"merge", out.string()});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(results_of(out), alone_);
}

// Shard 2/3 never ran: the merge names exactly its points, writes nothing, exit status 2.
TEST_F(Shards, MergeRefusesAMissingPartNamingItsPoints) {
  run_alone();
  const fs::path out = dir_ / "sharded";
  run_shards(out, {1, 3});
  const Result r = bagua({"merge", out.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "config error: merge: missing points in " + (out / "shards").string() + ": " +
                       ids_[1] + ", " + ids_[4] + "; rerun their shards\n");
  EXPECT_FALSE(fs::exists(out / "results.csv"));
  EXPECT_FALSE(fs::exists(out / "points"));
}

// A part whose run did not end (no part.json) counts as absent, and the line says so.
TEST_F(Shards, MergeRefusesAPartThatDidNotEnd) {
  run_alone();
  const fs::path out = dir_ / "sharded";
  run_shards(out);
  fs::remove(out / "shards" / "3-of-3" / "part.json");
  const Result r = bagua({"merge", out.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "config error: merge: missing points in " + (out / "shards").string() + ": " +
                       ids_[2] + ", " + ids_[5] +
                       " (no part.json, their run did not end: 3-of-3); rerun their shards\n");
  EXPECT_FALSE(fs::exists(out / "results.csv"));
}

// Parts of two shardings (3 parts, and shard 1 of 2: p000 p002 p004 p006): those points are twice.
TEST_F(Shards, MergeRefusesADuplicatedPointNamingBothParts) {
  run_alone();
  const fs::path out = dir_ / "sharded";
  run_shards(out);
  const Result half = run_sweep(out, {"--shard", "1/2"});
  ASSERT_EQ(half.exit_code, 0) << half.err;
  const Result r = bagua({"merge", out.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "config error: merge: points in more than one part of " + (out / "shards").string() +
                       ": " + ids_[0] + " (1-of-2 and 1-of-3), " + ids_[2] + " (1-of-2 and 3-of-3), " +
                       ids_[4] + " (1-of-2 and 2-of-3), " + ids_[6] +
                       " (1-of-2 and 1-of-3); remove the parts of the other sharding\n");
  EXPECT_FALSE(fs::exists(out / "results.csv"));
}

// More shards than points: shard 8/8 of 7 points has none, runs nothing, and its part still counts.
TEST_F(Shards, AShardWithoutPointsIsAnEmptyPart) {
  run_alone();
  const fs::path out = dir_ / "sharded";
  for (int k = 1; k <= 8; ++k) {
    const Result r = run_sweep(out, {"--shard", std::to_string(k) + "/8"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  EXPECT_FALSE(fs::exists(out / "shards" / "8-of-8" / "results.csv"));
  const Result merged = bagua({"merge", out.string()});
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  EXPECT_EQ(merged.out, "merged 7 points from 7 parts into " + (out / "results.csv").string() + "\n");
  EXPECT_EQ(results_of(out), alone_);
}

TEST_F(Shards, BadShardsAreOneLineConfigErrors) {
  struct Case {
    std::vector<std::string> args;
    std::string env;
    std::string err;
  };
  const fs::path out = dir_ / "bad";
  const Case cases[] = {
      {{"--shard", "0/3"}, "", "config error: --shard: expected K/N with 1 <= K <= N, got \"0/3\"\n"},
      {{"--shard", "4/3"}, "", "config error: --shard: expected K/N with 1 <= K <= N, got \"4/3\"\n"},
      {{"--shard", "2"}, "", "config error: --shard: expected K/N with 1 <= K <= N, got \"2\"\n"},
      // --array=1,2,5: 3 tasks from 1 to 5, not one range with one step.
      {{},
       "SLURM_ARRAY_TASK_ID=2 SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_MAX=5 SLURM_ARRAY_TASK_COUNT=3",
       "config error: SLURM_ARRAY_TASK_ID: the array (3 tasks, 1 to 5 step 1, this one 2) is not one "
       "range with one step; give --shard K/N\n"},
      {{},
       "SLURM_ARRAY_TASK_ID=2 SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_MAX=5",
       "config error: SLURM_ARRAY_TASK_COUNT is not set, but SLURM_ARRAY_TASK_ID is: cannot tell this "
       "task's shard; give --shard K/N\n"},
  };
  for (const Case& c : cases) {
    const Result r = run_sweep(out, c.args, c.env);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err, c.err);
  }
  EXPECT_FALSE(fs::exists(out));
  const Result none = bagua({"merge", (dir_ / "nothing").string()});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_EQ(none.err, "config error: merge: " + (dir_ / "nothing" / "shards").string() +
                          " is not a folder: no parts to merge (bagua run CONFIG --shard K/N makes "
                          "them)\n");
}

}  // namespace
