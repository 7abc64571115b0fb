// Timelines (output.trace) through the `bagua` command: layer names on the compute slices, the rank and
// iteration filters, and the same format from the threads runtime in real time.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "tests/experiments/bagua_command.h"

namespace {

// Apart from the same-named helpers of test_experiments's other files: the sanitizer presets
// compile several files of a program as one (CMAKE_UNITY_BUILD, CMakePresets.json).
namespace trace_test {

namespace fs = std::filesystem;
using bagua::testing::read_file;
using Result = bagua::testing::CommandResult;
using Json = nlohmann::json;

class Trace : public bagua::testing::BaguaCommandTest {
 protected:
  Trace() : BaguaCommandTest("bagua_trace_test") {}

  // Runs `config` with `sets` into a fresh folder; returns its one point's trace.json, parsed.
  Json run_trace(const std::string& config, const std::vector<std::string>& sets) {
    const fs::path out = dir_ / ("out" + std::to_string(runs_++));
    std::vector<std::string> args = {"run", config, "-q", "--out", out.string()};
    for (const std::string& s : sets) {
      args.push_back("--set");
      args.push_back(s);
    }
    const Result r = bagua(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    for (const auto& e : fs::directory_iterator(out / "points"))
      return Json::parse(read_file(e.path() / "trace.json"));
    ADD_FAILURE() << "no point folder";
    return Json();
  }

  // Complete events ("X") of the trace.
  static std::vector<Json> slices(const Json& trace) {
    std::vector<Json> out;
    for (const Json& e : trace["traceEvents"])
      if (e["ph"] == "X") out.push_back(e);
    return out;
  }
  static size_t count(const std::vector<Json>& xs, int pid, const std::string& prefix) {
    return static_cast<size_t>(std::count_if(xs.begin(), xs.end(), [&](const Json& e) {
      return e["pid"] == pid && e["name"].get<std::string>().rfind(prefix, 0) == 0;
    }));
  }

  int runs_ = 0;
};

const char* kQuickstart = "configs/quickstart.json";

// The quickstart's logistic regression has 4 layers (one bucket each): per iteration and rank, 4
// forward and 4 backward compute slices named after their layer, one "update", and 4 bucket
// allreduces. With trace_ranks [1, 6] and trace_iterations [2, 3], only those two ranks' processes
// exist and each has exactly 2 iterations' worth: 8 forward, 8 backward, 2 updates, 8 buckets.
TEST_F(Trace, SimulatorNamesLayersAndFilters) {
  const Json all = run_trace(kQuickstart, {"schedule.iterations=5", "output.trace=true"});
  const std::vector<Json> xs = slices(all);
  EXPECT_EQ(count(xs, 0, "forward logistic_regression"), 5u * 4);
  EXPECT_EQ(count(xs, 7, "backward logistic_regression"), 5u * 4);
  EXPECT_EQ(count(xs, 3, "update"), 5u);
  EXPECT_EQ(count(xs, 3, "allreduce bucket "), 5u * 4);

  const Json some =
      run_trace(kQuickstart, {"schedule.iterations=5", "output.trace=true", "output.trace_ranks=[1, 6]",
                              "output.trace_iterations=[2, 3]"});
  std::set<int> pids;
  for (const Json& e : some["traceEvents"])
    pids.insert(e["pid"].get<int>());
  EXPECT_EQ(pids, (std::set<int>{1, 6}));
  const std::vector<Json> kept = slices(some);
  for (int pid : {1, 6}) {
    EXPECT_EQ(count(kept, pid, "forward "), 2u * 4);
    EXPECT_EQ(count(kept, pid, "backward "), 2u * 4);
    EXPECT_EQ(count(kept, pid, "update"), 2u);
    EXPECT_EQ(count(kept, pid, "allreduce bucket "), 2u * 4);
  }
  EXPECT_LT(some.dump().size(), all.dump().size() / 4);
}

TEST_F(Trace, FilterMistakesAreOneLineErrors) {
  struct Case {
    std::vector<std::string> sets;
    std::string message;
  };
  const Case cases[] = {
      {{"output.trace_ranks=[0]"}, "output.trace_ranks: needs \"trace\": true"},
      {{"output.trace=true", "output.trace_ranks=[8]"},
       "output.trace_ranks[0]: must be a rank, 0 to 7, got 8"},
      {{"output.trace=true", "output.trace_ranks=[2, 2]"},
       "output.trace_ranks[1]: rank 2 listed twice"},
      {{"output.trace=true", "output.trace_iterations=[3, 1]"},
       "output.trace_iterations: must be [first, last] with 0 <= first <= last < 100"},
      {{"output.trace=true", "output.trace_iterations=4"}, "output.trace_iterations: expected"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"validate", kQuickstart};
    for (const std::string& s : c.sets) {
      args.push_back("--set");
      args.push_back(s);
    }
    const Result r = bagua(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("config error: " + c.message), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

// The threads runtime writes the same format in real time: every rank a process with its compute and
// communication tracks; the profile's emulated layers (100 us forward, 200 us backward each) as named
// compute slices of about their duration; the buckets on the communication track.
TEST_F(Trace, ThreadsRuntimeWritesTheSameTimeline) {
  const Json t = run_trace(
      kQuickstart,
      {"runtime=threads", "cluster.hosts=2", "cluster.devices_per_host=1",
       R"(workload={"name": "profile", "file": "configs/runtime/workloads/small_buckets_synthetic.json", "batch_size": 32})",
       "schedule.iterations=3", "schedule.eval_interval=0", "output.trace=true",
       "output.trace_iterations=[1, 2]"});
  std::set<std::pair<int, int>> lanes;
  for (const Json& e : t["traceEvents"])
    if (e["name"] == "thread_name") lanes.insert({e["pid"].get<int>(), e["tid"].get<int>()});
  EXPECT_TRUE(lanes.count({0, 0}) && lanes.count({0, 1}) && lanes.count({1, 0}) && lanes.count({1, 1}));
  const std::vector<Json> xs = slices(t);
  for (int pid : {0, 1}) {
    EXPECT_EQ(count(xs, pid, "forward layer"), 2u * 24) << pid;  // 24 layers, iterations 1 and 2
    EXPECT_EQ(count(xs, pid, "backward layer"), 2u * 24) << pid;
    EXPECT_GT(count(xs, pid, "allreduce bucket "), 0u) << pid;
  }
  for (const Json& e : xs) {
    const std::string name = e["name"];
    EXPECT_GE(e["ts"].get<double>(), 0) << name;  // after the barrier that starts the clock
    if (name.rfind("forward layer", 0) == 0) {
      EXPECT_GE(e["dur"].get<double>(), 100.0) << name;  // emulated: at least its profiled time
      EXPECT_LT(e["dur"].get<double>(), 100.0 + 50000) << name;
    }
  }
}

}  // namespace trace_test
}  // namespace
