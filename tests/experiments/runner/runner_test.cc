// The runner's promises for a sweep: a failing or diverged point is recorded and the sweep goes on; a
// rerun retries only those; a results folder belongs to one experiment and one run at a time.
#include "experiments/runner.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <string>

#include "core/check.h"
#include "experiments/backend.h"
#include "experiments/components.h"
#include "experiments/config.h"
#include "experiments/result_store.h"
#include "experiments/results.h"
#include "tests/experiments/scratch.h"

namespace bagua::experiments {
namespace {

namespace fs = std::filesystem;
using bagua::testing::read_file;
using bagua::testing::write_file;

// While set, the test algorithm "fails_at" throws in before_forward of step `step` on rank 1: a point
// that fails at run time, after check_points (which runs zero iterations) let it through.
std::atomic<bool> g_failing{true};

// Trains each rank alone (no communication): all that matters here is where it throws.
class FailsAt : public Algorithm {
 public:
  explicit FailsAt(int64_t step) : step_(step) {}
  std::string name() const override { return "fails_at"; }
  void before_forward(TrainState& s) override {
    if (g_failing && s.step == step_ && s.ctx.transport().rank() == 1)
      throw std::runtime_error("rank 1 broke at step " + std::to_string(s.step));
  }

 private:
  int64_t step_;
};

std::unique_ptr<Components> components_with_failing_algorithm() {
  std::unique_ptr<Components> c = make_components();
  c->algorithms.add("fails_at", "fails on rank 1 at a step (tests only)",
                    ParamSchema().add_int("step", -1, "the step that fails; -1: none", -1),
                    [](const Params& p, const AlgorithmDeps&) -> std::unique_ptr<Algorithm> {
                      return std::make_unique<FailsAt>(p.get_int("step"));
                    });
  return c;
}

// Two hosts x 2 devices, a linear regression, 8 iterations, a sweep given by the test.
Json config_with(const std::string& sweep, const std::string& algorithm, double lr) {
  Json config = parse_json(R"({
    "name": "runner_test",
    "cluster": {"hosts": 2, "devices_per_host": 2,
                "intra_host": {"bandwidth": "150 GB/s", "latency": "1 us"},
                "nic": {"bandwidth": "100 Gbps", "latency": "5 us"}},
    "workload": {"name": "linear_regression", "batch_size": 16, "features": 8, "samples": 512},
    "optimizer": {"name": "sgd", "lr": 0.1},
    "schedule": {"iterations": 8, "eval_interval": 2}
  })",
                           "test");
  config["algorithm"] = parse_json(algorithm, "algorithm");
  config["optimizer"]["lr"] = lr;
  config["sweep"] = parse_json(sweep, "sweep");
  return config;
}

class RunnerTest : public bagua::testing::ScratchDirTest {
 protected:
  RunnerTest() : ScratchDirTest("bagua_runner_test") {}

  Experiment load(const Json& config) const {
    LoadOptions options;
    options.out_dir = (dir_ / "out").string();
    return load_experiment_json(config, ".", options, *components_);
  }
  int run(const Experiment& e, const RunOptions& options = {}) {
    Backends backends(components_->runtimes, nullptr, nullptr);
    out_.str("");
    progress_.str("");
    return run_experiment(e, *components_, backends, options, out_, progress_);
  }
  fs::path out_dir() const { return dir_ / "out"; }

  std::unique_ptr<Components> components_ = components_with_failing_algorithm();
  std::ostringstream out_, progress_;
};

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

TEST_F(RunnerTest, AFailingPointIsRecordedTheOthersRunAndARerunRetriesOnlyIt) {
  // Three points; the middle one fails at step 3 (on rank 1) while g_failing is set.
  const Experiment e =
      load(config_with(R"({"axes": {"algorithm.step": [-1, 3, -1]}})", R"({"name": "fails_at"})", 0.1));
  g_failing = true;
  EXPECT_EQ(run(e), 1);
  const std::string rows = read_file(out_dir() / "results.csv");
  ASSERT_EQ(count(rows, "\n"), 4u) << rows;  // header + every point, the failed one too
  EXPECT_EQ(count(rows, ",ok,\n"), 2u) << rows;
  EXPECT_NE(
      rows.find(e.points[1].id + ",3,sim,4,fails_at,,,,,,,failed,error: rank 1 broke at step 3\n"),
      std::string::npos)
      << rows;
  const Json failed = read_json_file(out_dir() / "points" / e.points[1].id / "summary.json", "s");
  EXPECT_EQ(failed["status"], "failed");
  EXPECT_EQ(failed["error"], "error: rank 1 broke at step 3");
  EXPECT_TRUE(failed["time_per_iteration_s"].is_null());
  EXPECT_TRUE(fs::exists(out_dir() / "points" / e.points[2].id / "summary.json"));
  EXPECT_NE(out_.str().find("1 of 3 points did not complete (1 failed, 0 diverged)"), std::string::npos)
      << out_.str();

  // The rerun runs only the failed point; it fails again: nothing else changes.
  EXPECT_EQ(run(e), 1);
  EXPECT_EQ(count(progress_.str(), "already done, skipped"), 2u) << progress_.str();
  EXPECT_EQ(read_file(out_dir() / "results.csv"), rows);

  // The cause gone, the rerun completes it: its row is replaced in place, the others kept byte for
  // byte.
  g_failing = false;
  EXPECT_EQ(run(e), 0);
  EXPECT_EQ(count(progress_.str(), "already done, skipped"), 2u) << progress_.str();
  const std::string fixed = read_file(out_dir() / "results.csv");
  EXPECT_EQ(count(fixed, "\n"), 4u) << fixed;
  EXPECT_EQ(count(fixed, ",ok,\n"), 3u) << fixed;
  const size_t first_eol = rows.find('\n', rows.find('\n') + 1);
  EXPECT_EQ(fixed.substr(0, first_eol), rows.substr(0, first_eol));  // header and p0
  EXPECT_EQ(fixed.substr(fixed.rfind('\n', fixed.size() - 2)),
            rows.substr(rows.rfind('\n', rows.size() - 2)));  // p2, still last
  const size_t p1 = fixed.find("\n" + e.points[1].id + ",3,sim,4,fails_at,");
  ASSERT_NE(p1, std::string::npos) << fixed;
  const std::string p1_row = fixed.substr(p1 + 1, fixed.find('\n', p1 + 1) - p1);
  EXPECT_EQ(p1_row.substr(p1_row.size() - 5), ",ok,\n") << p1_row;
  EXPECT_EQ(count(p1_row, ",,"), 0u) << p1_row;  // every metric present
  g_failing = true;
}

TEST_F(RunnerTest, ADivergedPointStopsAtItsIterationWithNoEmptyCellsDeterministically) {
  // Gradient descent on least squares diverges when the step exceeds 2 / (the Hessian's largest
  // eigenvalue); with unit-variance features that eigenvalue is about 1 (a little more, for 8 features
  // from 128 samples per rank), so a step of 10 multiplies the error by about 9 per step and the loss
  // overflows to inf well within 50 iterations, while a step of 0.1 converges.
  Json config =
      config_with(R"({"axes": {"optimizer.lr": [0.1, 10]}})", R"({"name": "gradient_allreduce"})", 0.1);
  config["schedule"]["iterations"] = 50;
  const Experiment e = load(config);
  EXPECT_EQ(run(e), 1);
  const fs::path point = out_dir() / "points" / e.points[1].id;
  const Json s = read_json_file(point / "summary.json", "s");
  ASSERT_EQ(s["status"], "diverged") << s.dump(2);
  const int64_t at = s["diverged_at_iteration"].get<int64_t>();
  EXPECT_GT(at, 0);
  EXPECT_LT(at, 50);
  EXPECT_EQ(s["iterations"], at);  // the metrics cover the iterations before it
  EXPECT_NE(s["error"].get<std::string>().find("at iteration " + std::to_string(at) + " on rank "),
            std::string::npos)
      << s["error"];
  // iterations.csv: one row per iteration before the divergence, every loss cell a finite number.
  const std::string iterations = read_file(point / "iterations.csv");
  EXPECT_EQ(count(iterations, "\n"), static_cast<size_t>(at) + 1) << iterations;
  std::istringstream lines(iterations);
  std::string line;
  auto fields = [](const std::string& l) {
    std::vector<std::string> f(1);
    for (char ch : l)
      if (ch == ',')
        f.emplace_back();
      else
        f.back() += ch;
    return f;
  };
  std::getline(lines, line);  // header
  const std::vector<std::string> header = fields(line);
  const size_t loss_col =
      static_cast<size_t>(std::find(header.begin(), header.end(), "loss") - header.begin());
  ASSERT_LT(loss_col, header.size()) << line;
  while (std::getline(lines, line)) {
    const std::string loss = fields(line)[loss_col];
    ASSERT_FALSE(loss.empty()) << line;
    EXPECT_TRUE(std::isfinite(std::stod(loss))) << line;
  }
  const std::string rows = read_file(out_dir() / "results.csv");
  EXPECT_NE(rows.find(",diverged,diverged: loss "), std::string::npos) << rows;
  EXPECT_EQ(s["error"].get<std::string>().rfind("diverged: ", 0), 0u);
  const Json ok = read_json_file(out_dir() / "points" / e.points[0].id / "summary.json", "s");
  EXPECT_EQ(ok["status"], "ok");
  EXPECT_EQ(ok["iterations"], 50);

  // The same config again, into another folder: the same bytes (the same rank and iteration named).
  const std::string first = read_file(point / "summary.json") + read_file(point / "iterations.csv");
  LoadOptions again;
  again.out_dir = (dir_ / "again").string();
  const Experiment e2 = load_experiment_json(config, ".", again, *components_);
  EXPECT_EQ(run(e2), 1);
  const fs::path point2 = dir_ / "again" / "points" / e2.points[1].id;
  EXPECT_EQ(read_file(point2 / "summary.json") + read_file(point2 / "iterations.csv"), first);
}

TEST_F(RunnerTest, AFolderBelongsToOneExperiment) {
  const Experiment a = load(config_with(R"({"axes": {"optimizer.lr": [0.1, 0.2]}})",
                                        R"({"name": "gradient_allreduce"})", 0.1));
  ASSERT_EQ(run(a), 0);
  const Json record = read_json_file(out_dir() / "experiment.json", "e");
  EXPECT_EQ(record["name"], "runner_test");
  EXPECT_EQ(record["config_hash"], config_hash(a));
  EXPECT_FALSE(fs::exists(out_dir() / ".lock"));  // released

  // Another config (one more point) into the same folder: refused, naming both hashes.
  const Experiment b = load(config_with(R"({"axes": {"optimizer.lr": [0.1, 0.2, 0.3]}})",
                                        R"({"name": "gradient_allreduce"})", 0.1));
  ASSERT_NE(config_hash(a), config_hash(b));
  try {
    run(b);
    FAIL() << "a second experiment ran into the folder";
  } catch (const ConfigError& err) {
    const std::string what = err.what();
    EXPECT_NE(what.find("config hash " + config_hash(a)), std::string::npos) << what;
    EXPECT_NE(what.find("config hash " + config_hash(b)), std::string::npos) << what;
    EXPECT_NE(what.find("--fresh"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  // --fresh: the old folder moved aside, whole; the new experiment's in its place.
  const std::string old_rows = read_file(out_dir() / "results.csv");
  RunOptions fresh;
  fresh.fresh = true;
  ASSERT_EQ(run(b, fresh), 0);
  EXPECT_NE(progress_.str().find("moved the previous results of"), std::string::npos);
  EXPECT_EQ(read_json_file(out_dir() / "experiment.json", "e")["config_hash"], config_hash(b));
  size_t moved = 0;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    if (entry.path().filename().string().rfind("out.old-", 0) != 0) continue;
    ++moved;
    EXPECT_EQ(read_file(entry.path() / "results.csv"), old_rows);
    EXPECT_FALSE(fs::exists(entry.path() / ".lock"));
  }
  EXPECT_EQ(moved, 1u);
}

TEST_F(RunnerTest, AFolderFromBeforeExperimentJsonGetsItAndKeepsItsRows) {
  const Experiment a = load(config_with(R"({"axes": {"optimizer.lr": [0.1, 0.2]}})",
                                        R"({"name": "gradient_allreduce"})", 0.1));
  ASSERT_EQ(run(a), 0);
  // As written before statuses and experiment.json existed: no status columns, no experiment.json.
  std::string legacy;
  {
    std::istringstream lines(read_file(out_dir() / "results.csv"));
    std::string line;
    while (std::getline(lines, line))
      legacy += line.substr(0, line.rfind(',', line.rfind(',') - 1)) + "\n";
  }
  ASSERT_EQ(legacy.substr(0, legacy.find('\n')).find("status"), std::string::npos) << legacy;
  write_file(out_dir() / "results.csv", legacy);
  fs::remove(out_dir() / "experiment.json");
  ASSERT_EQ(run(a), 0);
  EXPECT_EQ(count(progress_.str(), "already done, skipped"), 2u) << progress_.str();
  EXPECT_EQ(read_file(out_dir() / "results.csv"), legacy);  // not a byte rewritten
  EXPECT_EQ(read_json_file(out_dir() / "experiment.json", "e")["config_hash"], config_hash(a));

  // Such a folder holding rows of another experiment is refused.
  fs::remove(out_dir() / "experiment.json");
  const Experiment b = load(
      config_with(R"({"axes": {"optimizer.lr": [0.3]}})", R"({"name": "gradient_allreduce"})", 0.1));
  EXPECT_THROW(run(b), ConfigError);
}

TEST_F(RunnerTest, ALockedFolderIsRefusedNamingItsHolder) {
  const Experiment a = load(
      config_with(R"({"axes": {"optimizer.lr": [0.1]}})", R"({"name": "gradient_allreduce"})", 0.1));
  std::set<std::string> ids;
  for (const PointConfig& p : a.points)
    ids.insert(p.id);
  {
    const ExperimentDir holder(out_dir(), a.name, config_hash(a), ids, false);
    EXPECT_NE(read_file(out_dir() / ".lock").find("pid " + std::to_string(::getpid()) + " on host "),
              std::string::npos);
    try {
      run(a);
      FAIL() << "a second run got the lock";
    } catch (const ConfigError& err) {
      const std::string what = err.what();
      EXPECT_NE(what.find("another bagua run is writing into it (pid " + std::to_string(::getpid())),
                std::string::npos)
          << what;
      EXPECT_NE(what.find(" since "), std::string::npos) << what;
    }
    EXPECT_FALSE(fs::exists(out_dir() / "results.csv"));  // no point ran
  }
  EXPECT_EQ(run(a), 0);  // released
}

TEST_F(RunnerTest, AnUnwritableFolderIsFoundBeforeAnyPointRuns) {
  write_file(dir_ / "a_file", "x");
  LoadOptions options;
  options.out_dir = (dir_ / "a_file" / "results").string();
  const Experiment e = load_experiment_json(
      config_with(R"({"axes": {"optimizer.lr": [0.1]}})", R"({"name": "gradient_allreduce"})", 0.1),
      ".", options, *components_);
  try {
    run(e);
    FAIL() << "ran into a folder that cannot exist";
  } catch (const ConfigError& err) {
    EXPECT_EQ(std::string(err.what()).rfind("--out " + *options.out_dir + ": ", 0), 0u) << err.what();
    EXPECT_NE(std::string(err.what()).find("cannot create the folder"), std::string::npos)
        << err.what();
  }
  EXPECT_EQ(progress_.str().find("[1/1]"), std::string::npos);
}

TEST_F(RunnerTest, ProgressGivesAnEtaAndLinesWithinALongPoint) {
  Json config = config_with(R"({"axes": {"optimizer.lr": [0.1, 0.2, 0.3]}})",
                            R"({"name": "gradient_allreduce"})", 0.1);
  const Experiment e = load(config);
  RunOptions options;
  options.jobs = 1;
  options.progress_interval_s = 1e-9;  // a line after every iteration
  ASSERT_EQ(run(e, options), 0);
  const std::string p = progress_.str();
  EXPECT_EQ(count(p, ", ETA "), 2u) << p;  // after the first and second of three points
  // 8 iterations per point, rank 0's simulated time at each.
  EXPECT_EQ(count(p, ": iteration "), 24u) << p;
  EXPECT_NE(p.find("  " + e.points[0].id + ": iteration 8 of 8, simulated time "), std::string::npos)
      << p;
  options.quiet = true;
  fs::remove_all(out_dir());
  ASSERT_EQ(run(e, options), 0);
  EXPECT_EQ(progress_.str(), "");
}

TEST(NetworkSweep, OnARealRuntimeIsRejectedNamingThePath) {
  const std::unique_ptr<Components> c = make_components();
  Json config = config_with(R"({"axes": {"cluster.nic.bandwidth": ["1 Gbps", "10 Gbps"]}})",
                            R"({"name": "gradient_allreduce"})", 0.1);
  config["runtime"] = "threads";
  const Experiment e = load_experiment_json(config, ".", {}, *c);
  Backends backends(c->runtimes, nullptr, nullptr);
  try {
    check_points(e, *c, backends);
    FAIL() << "a network sweep on threads was accepted";
  } catch (const ConfigError& err) {
    EXPECT_EQ(std::string(err.what()).rfind("sweep.axes.cluster.nic.bandwidth: ", 0), 0u) << err.what();
    EXPECT_NE(std::string(err.what()).find("\"threads\""), std::string::npos) << err.what();
  }
  // The same sweep on the simulator, and a sweep of the algorithm on threads, are fine.
  config["runtime"] = "sim";
  EXPECT_NO_THROW(check_points(load_experiment_json(config, ".", {}, *c), *c, backends));
  config["runtime"] = "threads";
  config["sweep"] = parse_json(R"({"axes": {"optimizer.lr": [0.1, 0.2]}})", "s");
  EXPECT_NO_THROW(check_points(load_experiment_json(config, ".", {}, *c), *c, backends));
}

TEST(FlowGranularity, AWorkloadThatHoldsDataIsRefusedBeforeAnyPointRuns) {
  // NCCL's collectives at flow granularity move no bytes (core/collectives/nccl_flow.h): a workload
  // with data is refused, naming the setting and the workload, by check_points (before any point
  // runs); the same config at slice granularity runs.
  const std::unique_ptr<Components> c = make_components();
  Json config = config_with(R"({"axes": {"optimizer.lr": [0.1, 0.2]}})",
                            R"({"name": "gradient_allreduce", "allreduce": "nccl"})", 0.1);
  config["cluster"]["collective_granularity"] = "flow";
  Backends backends(c->runtimes, nullptr, nullptr);
  try {
    check_points(load_experiment_json(config, ".", {}, *c), *c, backends);
    FAIL() << "a data workload at flow granularity was accepted";
  } catch (const ConfigError& err) {
    EXPECT_EQ(std::string(err.what()).rfind("cluster.collective_granularity: ", 0), 0u) << err.what();
    EXPECT_NE(std::string(err.what()).find("\"linear_regression\""), std::string::npos) << err.what();
  }
  config["cluster"]["collective_granularity"] = "slice";
  EXPECT_NO_THROW(check_points(load_experiment_json(config, ".", {}, *c), *c, backends));
}

}  // namespace
}  // namespace bagua::experiments
