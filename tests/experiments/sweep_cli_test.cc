// `bagua run` on a sweep, as a user runs it (a child process): choosing points, addressing axes with
// --set, a held lock, an unwritable --out, a network sweep on a real runtime, progress lines.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "experiments/config.h"
#include "experiments/result_store.h"
#include "experiments/results.h"
#include "tests/experiments/bagua_command.h"

namespace {

// Apart from the same-named helpers of test_experiments's other files: the sanitizer presets
// compile several files of a program as one (CMAKE_UNITY_BUILD, CMakePresets.json).
namespace sweep_cli_test {

namespace fs = std::filesystem;
using bagua::testing::read_file;
using bagua::testing::run_command;
using Result = bagua::testing::CommandResult;

const char* kQuickstart = "configs/quickstart.json";
const char* kThreeBandwidths =
    R"(sweep={"axes": {"cluster.nic.bandwidth": ["1 Gbps", "10 Gbps", "100 Gbps"]}})";

class SweepCli : public bagua::testing::BaguaCommandTest {
 protected:
  SweepCli() : BaguaCommandTest("bagua_sweep_cli_test") {}

  // quickstart, 3 iterations, the bandwidth sweep, into dir_/out, plus `more`.
  Result run_sweep(std::vector<std::string> more) const {
    std::vector<std::string> args = {
        "run",   kQuickstart,     "--out", (dir_ / "out").string(), "--set", "schedule.iterations=3",
        "--set", kThreeBandwidths};
    args.insert(args.end(), more.begin(), more.end());
    return bagua(args);
  }
  size_t rows() const {
    const std::string text = read_file(dir_ / "out" / "results.csv");
    return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) - 1;
  }
};

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

bool one_line(const std::string& s) {
  return !s.empty() && s.find('\n') == s.size() - 1;
}

TEST_F(SweepCli, PointAndWhereRunOnePointOrTheMatchingOnes) {
  Result r = run_sweep({"--where", "cluster.nic.bandwidth=10 Gbps", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(rows(), 1u);
  EXPECT_NE(read_file(dir_ / "out" / "results.csv").find(",10 Gbps,sim,"), std::string::npos);
  EXPECT_NE(r.out.find("1 point of 3"), std::string::npos) << r.out;
  // --point by index, then by its index part: the one left, and then nothing new.
  r = run_sweep({"--point", "2", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(rows(), 2u);
  r = run_sweep({"--point", "p000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(rows(), 3u);
  EXPECT_EQ(count(r.err, "already done"), 0u) << r.err;  // only p000 was asked for, and it ran
  // The whole sweep now: every point done already, the folder is the same experiment's.
  r = run_sweep({});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(count(r.err, "already done"), 3u) << r.err;

  // Mistakes: one line each, exit 2.
  r = run_sweep({"--where", "cluster.nic.bandwidth=3 Gbps"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(one_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("no point of the sweep matches"), std::string::npos) << r.err;
  r = run_sweep({"--where", "cluster.nic.latency=5 us"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--where cluster.nic.latency: not an axis of the sweep (axes: "
                       "cluster.nic.bandwidth)"),
            std::string::npos)
      << r.err;
  r = run_sweep({"--point", "p007"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--point p007: no such point"), std::string::npos) << r.err;
}

TEST_F(SweepCli, SetAddressesASweepAxisOrFixesASweptPath) {
  const std::string set_axis = R"(sweep.cluster.nic.bandwidth=["25 Gbps", "50 Gbps"])";
  Result r = bagua({"validate", kQuickstart, "--set", kThreeBandwidths, "--set", set_axis});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("valid, 2 points"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cluster.nic.bandwidth=\"50 Gbps\""), std::string::npos) << r.out;
  // A new axis after the existing one: 3 x 2 points, the new axis varying fastest.
  r = bagua({"validate", kQuickstart, "--set", kThreeBandwidths, "--set", "sweep.seed=[1, 2]"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("valid, 6 points"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cluster.nic.bandwidth=\"1 Gbps\" seed=2"), std::string::npos) << r.out;
  // Setting the swept path fixes it: no sweep left.
  r = bagua(
      {"validate", kQuickstart, "--set", kThreeBandwidths, "--set", "cluster.nic.bandwidth=40 Gbps"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("valid, 1 point,"), std::string::npos) << r.out;
  // sweep.mode still means the mode; an axis needs an array.
  r = bagua({"validate", kQuickstart, "--set", kThreeBandwidths, "--set", "sweep.seed=[1, 2, 3]",
             "--set", "sweep.mode=zip"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("valid, 3 points"), std::string::npos) << r.out;
  r = bagua({"validate", kQuickstart, "--set", "sweep.seed=3"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(one_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("--set sweep.seed: an axis's values must be a non-empty array, got 3"),
            std::string::npos)
      << r.err;
}

TEST_F(SweepCli, ASecondRunIntoAHeldFolderIsRefusedNamingTheHolder) {
  // This test process holds the folder's lock, as a running bagua would.
  const fs::path out = dir_ / "out";
  bagua::experiments::ExperimentDir holder(out, "quickstart", "0000000000000000", {}, false);
  const Result r = run_sweep({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(one_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("another bagua run is writing into it (pid " + std::to_string(::getpid()) +
                       " on host "),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(out / "results.csv"));
}

TEST_F(SweepCli, AnUnwritableOutIsRefusedBeforeAnyPointRuns) {
  bagua::testing::write_file(dir_ / "file", "not a folder");
  const Result r = bagua({"run", kQuickstart, "--out", (dir_ / "file" / "out").string(), "--set",
                          "schedule.iterations=3", "--set", kThreeBandwidths});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(one_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("cannot create the folder"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("[1/3]"), std::string::npos) << r.err;
}

TEST_F(SweepCli, ANetworkSweepOnARealRuntimeIsRejected) {
  const Result r = bagua({"validate", kQuickstart, "--set", "runtime=threads", "--set",
                          "schedule.iterations=3", "--set", kThreeBandwidths});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(one_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("config error: sweep.axes.cluster.nic.bandwidth: a sweep of a simulated "
                       "network value on runtime \"threads\""),
            std::string::npos)
      << r.err;
}

TEST_F(SweepCli, ProgressHasAnEtaOnStderrAndNoneWithQuiet) {
  Result r = run_sweep({"--jobs", "1", "--progress-interval", "0.000001"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(count(r.err, ", ETA "), 2u) << r.err;
  EXPECT_EQ(count(r.err, ": iteration "), 9u) << r.err;  // 3 points x 3 iterations
  EXPECT_NE(r.err.find(": iteration 3 of 3, simulated time "), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("ETA"), std::string::npos);
  fs::remove_all(dir_ / "out");
  r = run_sweep({"--jobs", "1", "--progress-interval", "0.000001", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
}

// scripts/plot_convergence.py with Debian's python3 (python3-matplotlib, scripts/setup).
Result plot(const std::vector<std::string>& args, const fs::path& scratch) {
  std::vector<std::string> words = {"/usr/bin/python3"};
  words.insert(words.end(), args.begin(), args.end());
  return run_command(BAGUA_SOURCE_DIR, "", words, scratch);
}

TEST_F(SweepCli, PlotConvergenceAndADivergedPointFromTheCommandLine) {
  // A profile workload's point: times, no loss (the cells are empty).
  const fs::path point = dir_ / "profile" / "points" / "p000-00000000";
  bagua::testing::write_file(
      point / "summary.json",
      R"({"point": "p000-00000000", "swept": {"cluster.nic.bandwidth": "1 Gbps"}, "world_size": 8,
          "status": "ok", "config": {"name": "vgg", "description": "100 Gbps", "runtime": "sim",
          "algorithm": {"name": "gradient_allreduce"}}})");
  bagua::testing::write_file(point / "iterations.csv",
                             "iteration,time_s,iteration_s,compute_s,exposed_comm_s,loss,full_loss\n"
                             "0,0.5,0.5,0.1,0.4,,\n1,1,0.5,0.1,0.4,,\n");
  const fs::path scratch = dir_ / "scratch";
  fs::create_directories(scratch);
  Result r = plot(
      {"scripts/plot_convergence.py", (dir_ / "profile").string(), "-o", (dir_ / "x.png").string()},
      scratch);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("no loss to plot (a profile workload has none"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "x.png"));

  // A description names one configuration ("100 Gbps"); a sweep's title says what varies instead.
  r = plot({"-c",
            "import sys; sys.path.insert(0, 'scripts'); import plot_convergence as p; "
            "print(p.default_title([({'swept': {'cluster.nic.bandwidth': b}, 'config': {'name': "
            "'quickstart', 'description': '100 Gbps'}}, []) for b in ['1 Gbps', '10 Gbps']]))"},
           scratch);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "quickstart: cluster.nic.bandwidth = 1 Gbps, 10 Gbps\n");

  // A real sweep with a diverged point: drawn (the diverged curve up to its divergence), exit 0.
  r = bagua({"run", kQuickstart, "--out", (dir_ / "lr").string(), "-q", "--set",
             R"(workload={"name": "linear_regression", "features": 16, "samples": 1024})", "--set",
             "schedule.iterations=30", "--set", "sweep.optimizer.lr=[0.1, 100]"});
  ASSERT_EQ(r.exit_code, 1) << r.err;  // one point diverged
  EXPECT_NE(r.out.find("1 of 2 points did not complete (0 failed, 1 diverged); a rerun retries only "
                       "those"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("diverged: loss inf at iteration "), std::string::npos) << r.out;
  // The rerun runs the diverged point alone (and it diverges again, the same way).
  const std::string rows = read_file(dir_ / "lr" / "results.csv");
  const Result again =
      bagua({"run", kQuickstart, "--out", (dir_ / "lr").string(), "--set",
             R"(workload={"name": "linear_regression", "features": 16, "samples": 1024})", "--set",
             "schedule.iterations=30", "--set", "sweep.optimizer.lr=[0.1, 100]"});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_EQ(count(again.err, "already done, skipped"), 1u) << again.err;
  EXPECT_EQ(count(again.err, "DIVERGED"), 1u) << again.err;
  EXPECT_EQ(read_file(dir_ / "lr" / "results.csv"), rows);
  r = plot({"scripts/plot_convergence.py", (dir_ / "lr").string(), "-o", (dir_ / "lr.png").string()},
           scratch);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir_ / "lr.png"));
}

}  // namespace sweep_cli_test
}  // namespace
