// The `bagua` command under mpirun: every registered algorithm runs unchanged as an Open MPI job from
// one config (configs/runtime/all_algorithms.json), and gives the simulator's losses.
//
// Why the losses must be equal bit for bit: on both runtimes every rank runs the same algorithm code on
// the same data (same seed, world size and host layout); the collectives are written once over the
// Transport, and which rank adds which chunk in which order depends only on the ranks and tags, never
// on timing (MPI matches messages by source and tag in posting order, as the simulator does); the
// results are gathered to rank 0 and averaged over ranks in rank order. So every float operation is the
// same one, in the same order. Two exceptions:
//   - allreduce "native" is Open MPI's MPI_Allreduce, which sums in its own order; the simulator has no
//     native allreduce and runs the ring. Float32 sums in another order differ by rounding, a relative
//     1e-7 per addition, growing over 24 steps: equal to a relative 1e-5.
//   - horovod fuses the tensors that one cycle of its background loop finds ready, which depends on real
//     time: the fused groups, and so the ring's chunks and the summation order, differ (rounding, as
//     for "native").
//   - async_model_average averages in a background loop every few milliseconds of real time: how many
//     rounds fall between two steps depends on timing, so only convergence is checked.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/experiments/scratch.h"

#if !defined(BAGUA_BINARY) || !defined(BAGUA_SOURCE_DIR) || !defined(BAGUA_MPI_LAUNCH) || \
    !defined(BAGUA_NUMPROC_FLAG) || !defined(BAGUA_NCCL_BUILT)
#error \
    "the build defines BAGUA_BINARY, BAGUA_SOURCE_DIR, BAGUA_MPI_LAUNCH, BAGUA_NUMPROC_FLAG, BAGUA_NCCL_BUILT"
#endif

namespace {

namespace fs = std::filesystem;
using bagua::testing::lines_of;
using Json = nlohmann::json;

const char* kConfig = "configs/runtime/all_algorithms.json";

using bagua::testing::read_file;
using bagua::testing::run_command;
using Result = bagua::testing::CommandResult;

// One CSV line into fields ("" quotes a quote inside a quoted field).
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

// A CSV file: its header and its rows, every row checked to have the header's number of fields.
struct Csv {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  size_t column(const std::string& name) const {
    const auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? header.size() : static_cast<size_t>(it - header.begin());
  }
};

Csv read_csv(const fs::path& p) {
  Csv csv;
  const std::string text = read_file(p);
  EXPECT_TRUE(!text.empty() && text.back() == '\n') << p << " does not end with a complete line";
  const std::vector<std::string> lines = lines_of(text);
  if (lines.empty()) return csv;
  csv.header = csv_fields(lines[0]);
  for (size_t i = 1; i < lines.size(); ++i) {
    csv.rows.push_back(csv_fields(lines[i]));
    EXPECT_EQ(csv.rows.back().size(), csv.header.size()) << p << " line " << i + 1 << ": " << lines[i];
  }
  return csv;
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

class MpiCli : public bagua::testing::ScratchDirTest {
 protected:
  MpiCli() : ScratchDirTest("bagua_mpi_cli_test") {}

  // Runs `bagua ARGS` from the source tree; under mpirun with `ranks` processes when ranks > 0.
  Result bagua(int ranks, std::vector<std::string> args) const {
    const std::string launcher = ranks > 0 ? std::string(BAGUA_MPI_LAUNCH) + " " + BAGUA_NUMPROC_FLAG +
                                                 " " + std::to_string(ranks) + " "
                                           : "";
    args.insert(args.begin(), BAGUA_BINARY);
    return run_command(BAGUA_SOURCE_DIR, launcher, args, dir_);
  }

  // The config's algorithm objects, in sweep order.
  static std::vector<Json> swept_algorithms() {
    const Json config = Json::parse(read_file(fs::path(BAGUA_SOURCE_DIR) / kConfig), nullptr,
                                    /*allow_exceptions=*/true, /*ignore_comments=*/true);
    return config.at("sweep").at("axes").at("algorithm").get<std::vector<Json>>();
  }

  // The config on `hosts` x `per_host` ranks under mpirun, then the same config in the simulator;
  // every check of the file's header comment.
  void every_algorithm(int hosts, int per_host) {
    const int ranks = hosts * per_host;
    const std::vector<std::string> layout = {"--set", "cluster.hosts=" + std::to_string(hosts), "--set",
                                             "cluster.devices_per_host=" + std::to_string(per_host)};
    std::vector<std::string> mpi_args = {"run", kConfig, "--out", (dir_ / "mpi").string()};
    mpi_args.insert(mpi_args.end(), layout.begin(), layout.end());
    const Result mpi = bagua(ranks, mpi_args);
    ASSERT_EQ(mpi.exit_code, 0) << mpi.out << mpi.err;

    std::vector<std::string> sim_args = {"run",     kConfig, "--out",      (dir_ / "sim").string(),
                                         "--quiet", "--set", "runtime=sim"};
    sim_args.insert(sim_args.end(), layout.begin(), layout.end());
    const Result sim = bagua(0, sim_args);
    ASSERT_EQ(sim.exit_code, 0) << sim.err;

    const std::vector<Json> algorithms = swept_algorithms();
    const size_t n = algorithms.size();
    ASSERT_GE(n, 8u);

    // Results written once, by rank 0 only: one summary on stdout, one progress line per point, one
    // row per point in sweep order, every line whole.
    EXPECT_EQ(count_of(mpi.out, "runtime_all_algorithms: " + std::to_string(n) + " points\n"), 1u)
        << mpi.out;
    EXPECT_EQ(count_of(mpi.out, "results: "), 1u) << mpi.out;
    for (size_t i = 1; i <= n; ++i)
      EXPECT_EQ(count_of(mpi.err, "[" + std::to_string(i) + "/" + std::to_string(n) + "] "), 1u)
          << "progress line " << i << "\n"
          << mpi.err;
    const Csv results = read_csv(dir_ / "mpi" / "results.csv");
    ASSERT_EQ(results.rows.size(), n);
    const size_t runtime_col = results.column("runtime");
    const size_t size_col = results.column("world_size");
    ASSERT_LT(runtime_col, results.header.size());
    ASSERT_LT(size_col, results.header.size());
    std::set<std::string> ids;
    for (size_t i = 0; i < n; ++i) {
      const std::vector<std::string>& row = results.rows[i];
      char prefix[32];
      std::snprintf(prefix, sizeof prefix, "p%03zu-", i);
      EXPECT_EQ(row[0].rfind(prefix, 0), 0u) << row[0];
      ids.insert(row[0]);
      EXPECT_EQ(row[runtime_col], "mpi");
      EXPECT_EQ(row[size_col], std::to_string(ranks));
    }
    EXPECT_EQ(ids.size(), n);
    size_t folders = 0;
    for (const auto& e : fs::directory_iterator(dir_ / "mpi" / "points")) {
      ++folders;
      EXPECT_TRUE(ids.count(e.path().filename().string())) << e.path();
    }
    EXPECT_EQ(folders, n);

    const Csv sim_results = read_csv(dir_ / "sim" / "results.csv");
    ASSERT_EQ(sim_results.rows.size(), n);
    for (size_t i = 0; i < n; ++i) {
      const Json& algorithm = algorithms[i];
      SCOPED_TRACE("point " + std::to_string(i) + ": " + algorithm.dump() + " on " +
                   std::to_string(hosts) + " x " + std::to_string(per_host) + " ranks");
      const fs::path mpi_point = dir_ / "mpi" / "points" / results.rows[i][0];
      const fs::path sim_point = dir_ / "sim" / "points" / sim_results.rows[i][0];
      const Json summary = Json::parse(read_file(mpi_point / "summary.json"));
      EXPECT_EQ(summary.at("world_size"), ranks);
      EXPECT_EQ(summary.at("config").at("algorithm").at("name"), algorithm.at("name"));
      EXPECT_FALSE(fs::exists(mpi_point / "links.csv"));  // a simulator file

      const Csv real = read_csv(mpi_point / "iterations.csv");
      const Csv model = read_csv(sim_point / "iterations.csv");
      const int64_t iterations = summary.at("iterations").get<int64_t>();
      ASSERT_EQ(real.rows.size(), static_cast<size_t>(iterations));
      ASSERT_EQ(model.rows.size(), real.rows.size());
      const size_t loss = real.column("loss");
      const size_t full_loss = real.column("full_loss");
      ASSERT_LT(full_loss, real.header.size());

      // Training converges: the full-data loss after the last step is well below the loss at the
      // initial weights (the first iteration's batch loss), and below the first evaluation's.
      const double initial = std::stod(real.rows.front()[loss]);
      const double first_eval = std::stod(real.rows[7][full_loss]);  // eval_interval 8
      const double final_full = std::stod(real.rows.back()[full_loss]);
      EXPECT_LT(final_full, 0.5 * initial);
      EXPECT_LT(final_full, first_eval);

      const std::string name = algorithm.at("name");
      if (name == "async_model_average") continue;
      const bool native = algorithm.value("allreduce", "") == "native" || name == "horovod";
      // The first iteration where MPI and the simulator disagree, if any (one failure per point).
      for (size_t it = 0; it < real.rows.size(); ++it) {
        bool same = true;
        for (size_t col : {loss, full_loss}) {
          const std::string& a = real.rows[it][col];
          const std::string& b = model.rows[it][col];
          if (!native || a.empty() || b.empty()) {
            // The shortest decimal text that reads back exactly: equal text is equal bits.
            same = same && a == b;
          } else {
            same = same && std::abs(std::stod(a) - std::stod(b)) <= 1e-5 * std::abs(std::stod(b));
          }
        }
        if (!same) {
          ADD_FAILURE() << "iteration " << it << ": mpi loss " << real.rows[it][loss] << ", full loss "
                        << real.rows[it][full_loss] << "; simulator loss " << model.rows[it][loss]
                        << ", full loss " << model.rows[it][full_loss];
          break;
        }
      }
    }
  }
};

// The config sweeps every algorithm `bagua list` names (a newly registered one must be added to it).
TEST_F(MpiCli, TheConfigCoversEveryRegisteredAlgorithm) {
  const Result list = bagua(0, {"list"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  std::set<std::string> registered;
  bool in_algorithms = false;
  for (const std::string& line : lines_of(list.out)) {
    if (line.empty() || line[0] != ' ') {
      in_algorithms = line == "algorithms:";
    } else if (in_algorithms && line.size() > 2 && line[2] != ' ') {
      registered.insert(line.substr(2, line.find(' ', 2) - 2));  // "  name  description"
    }
  }
  std::set<std::string> swept;
  for (const Json& a : swept_algorithms())
    swept.insert(a.at("name").get<std::string>());
  EXPECT_GE(registered.size(), 8u) << list.out;
  EXPECT_EQ(swept, registered);
}

// 2 hosts x 2 ranks: the hierarchical variants reduce within a host, then among the 2 host leaders.
TEST_F(MpiCli, EveryAlgorithmOnFourRanksInTwoHostsMatchesTheSimulator) {
  every_algorithm(2, 2);
}

// 2 ranks on one host: the hierarchical variants have a single leader (the inter-host level is one
// rank).
TEST_F(MpiCli, EveryAlgorithmOnTwoRanksInOneHostMatchesTheSimulator) {
  every_algorithm(1, 2);
}

// Fashion-MNIST under mpirun (configs/runtime/fashion_mnist.json: gradient allreduce, decentralized on
// a ring, diloco; 2 hosts x 2 ranks): the test accuracies, mean, smallest and largest over ranks and the
// averaged model's, at every evaluation, are the simulator's bit for bit (the reasons of the file's header: the same float
// operations in the same order, on each rank the same images), and training moved them from the 10% of
// the zero initial weights (which predict class 0 for every image) to well above.
TEST_F(MpiCli, FashionMnistAccuraciesMatchTheSimulator) {
  const char* config = "configs/runtime/fashion_mnist.json";
  const Result mpi = bagua(4, {"run", config, "--out", (dir_ / "mpi").string()});
  ASSERT_EQ(mpi.exit_code, 0) << mpi.out << mpi.err;
  const Result sim =
      bagua(0, {"run", config, "--out", (dir_ / "sim").string(), "--quiet", "--set", "runtime=sim"});
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  const Csv mpi_results = read_csv(dir_ / "mpi" / "results.csv");
  const Csv sim_results = read_csv(dir_ / "sim" / "results.csv");
  ASSERT_EQ(mpi_results.rows.size(), 3u);
  ASSERT_EQ(sim_results.rows.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    SCOPED_TRACE("point " + mpi_results.rows[i][0]);
    const Csv real = read_csv(dir_ / "mpi" / "points" / mpi_results.rows[i][0] / "iterations.csv");
    const Csv model = read_csv(dir_ / "sim" / "points" / sim_results.rows[i][0] / "iterations.csv");
    ASSERT_EQ(real.rows.size(), 48u);
    ASSERT_EQ(model.rows.size(), 48u);
    const size_t accuracy = real.column("test_accuracy");
    ASSERT_LT(accuracy, real.header.size());
    size_t evaluations = 0;
    for (size_t it = 0; it < real.rows.size(); ++it) {
      for (const char* column : {"test_accuracy", "test_accuracy_min", "test_accuracy_max",
                                 "test_accuracy_avg_model", "full_loss"})
        EXPECT_EQ(real.rows[it][real.column(column)], model.rows[it][model.column(column)])
            << column << " at iteration " << it;
      if (real.rows[it][accuracy].empty()) continue;
      ++evaluations;
      EXPECT_FALSE(real.rows[it][real.column("test_accuracy_avg_model")].empty()) << it;
    }
    EXPECT_EQ(evaluations, 3u);  // every 16 steps
    EXPECT_GT(std::stod(real.rows.back()[accuracy]), 0.6);
  }
}

// A config every rank refuses (shift_one pairs ranks up, and 3 ranks cannot be paired) fails under
// mpirun exactly as in the simulator: exit status 2, one line (rank 0's), the same line, nothing
// written; not an abort with one message per rank.
TEST_F(MpiCli, AConfigErrorOfEveryRankEndsTheJobAsInTheSimulator) {
  const std::vector<std::string> sets = {
      "--set",
      "cluster.hosts=3",
      "--set",
      "cluster.devices_per_host=1",
      "--set",
      R"(sweep={"axes": {"algorithm": [{"name": "decentralized", "hierarchical": false,
                                        "peer_selection_mode": "shift_one"}]}})"};
  std::vector<std::string> mpi_args = {"run", kConfig, "--out", (dir_ / "mpi").string()};
  std::vector<std::string> sim_args = {"run",   kConfig,      "--out", (dir_ / "sim").string(),
                                       "--set", "runtime=sim"};
  mpi_args.insert(mpi_args.end(), sets.begin(), sets.end());
  sim_args.insert(sim_args.end(), sets.begin(), sets.end());
  const Result sim = bagua(0, sim_args);
  const Result mpi = bagua(3, mpi_args);
  ASSERT_EQ(sim.exit_code, 2) << sim.err;
  ASSERT_EQ(sim.err.rfind("config error: ", 0), 0u) << sim.err;
  EXPECT_NE(sim.err.find("shift_one needs an even number of ranks"), std::string::npos) << sim.err;
  EXPECT_EQ(mpi.exit_code, 2) << mpi.err;
  // mpirun adds its own report of the failed job; bagua's own output is the simulator's line.
  const std::vector<std::string> lines = lines_of(mpi.err);
  const auto ours = std::count_if(lines.begin(), lines.end(), [](const std::string& l) {
    return l.rfind("config error:", 0) == 0 || l.rfind("rank ", 0) == 0 || l.rfind("error:", 0) == 0;
  });
  EXPECT_EQ(ours, 1) << mpi.err;
  const auto line = std::find_if(lines.begin(), lines.end(),
                                 [](const std::string& l) { return l.rfind("config error:", 0) == 0; });
  EXPECT_EQ(line == lines.end() ? "" : *line + "\n", sim.err) << mpi.err;
  EXPECT_EQ(count_of(mpi.err, "MPI_ABORT"), 0u) << mpi.err;
  EXPECT_FALSE(fs::exists(dir_ / "mpi"));
  EXPECT_FALSE(fs::exists(dir_ / "sim"));
}

// "runtime": "nccl" on a machine that cannot run it (this bagua built without NCCL, or no GPU): one
// line from rank 0 naming the runtime, exit status 2, nothing written, no crash; alone and under
// mpirun.
TEST_F(MpiCli, NcclWithoutNcclOrGpuFailsWithOneLine) {
  // Built with NCCL, the world refuses to start (no device, or fewer devices than ranks on a node).
  const std::string expected_start =
      BAGUA_NCCL_BUILT ? "config error: nccl runtime: rank 0 "
                       : "config error: runtime: \"nccl\" is not available: this bagua was built "
                         "without CUDA and NCCL";
  for (int ranks : {0, 2}) {
    SCOPED_TRACE(ranks == 0 ? "without mpirun" : "under mpirun -np 2");
    const fs::path out = dir_ / ("nccl" + std::to_string(ranks));
    const int per_host = ranks == 0 ? 1 : ranks;
    const Result r = bagua(
        ranks, {"run", kConfig, "--out", out.string(), "--set", "runtime=nccl", "--set",
                "cluster.hosts=1", "--set", "cluster.devices_per_host=" + std::to_string(per_host),
                "--set", "schedule.iterations=1"});
    if (BAGUA_NCCL_BUILT && r.exit_code == 0)
      GTEST_SKIP() << "this machine has GPUs: the nccl runtime ran";
    EXPECT_EQ(r.exit_code, 2) << r.err;
    // mpirun may add its own report of the failed job; bagua's own output is one line.
    const std::vector<std::string> lines = lines_of(r.err);
    size_t ours = 0;
    for (const std::string& line : lines) {
      if (line.rfind("config error:", 0) == 0 || line.rfind("error:", 0) == 0 ||
          line.rfind("rank ", 0) == 0) {
        ++ours;
        EXPECT_EQ(line.rfind(expected_start, 0), 0u) << line;
      }
      EXPECT_EQ(line.find("terminate called"), std::string::npos) << line;
      EXPECT_EQ(line.find("Signal"), std::string::npos) << line;
    }
    EXPECT_EQ(ours, 1u) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_FALSE(fs::exists(out));
  }
}

// `bagua calibrate` under mpirun on 2 emulated hosts x 2 ranks (the config's layout): either it writes a
// cluster file of that layout that a config can extend, or — this machine may be too busy for the
// measurement to stand out of its noise — it says so in one line, exit status 2, and writes nothing. Never
// a crash, a hang, a partial file.
TEST_F(MpiCli, CalibrateWritesAClusterFileOrSaysWhyNot) {
  const fs::path file = dir_ / "calibrated.json";
  const Result r = bagua(4, {"calibrate", kConfig, "--set", "cluster.hosts=2", "--set",
                             "cluster.devices_per_host=2", "--out", file.string()});
  const std::vector<std::string> lines = lines_of(r.err);
  if (r.exit_code == 2) {
    ASSERT_FALSE(lines.empty());
    EXPECT_EQ(lines.front().rfind("config error: calibrate: ", 0), 0u) << r.err;
    EXPECT_NE(lines.front().find("rerun on a quieter machine"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(file));
    EXPECT_FALSE(fs::exists(file.string() + ".tmp"));
    return;
  }
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("calibrated 2 x 2 ranks: nic "), std::string::npos) << r.out;
  const Json cluster = Json::parse(read_file(file), nullptr, true, /*ignore_comments=*/true);
  EXPECT_EQ(cluster.at("hosts"), 2);
  EXPECT_EQ(cluster.at("devices_per_host"), 2);
  // The file is a cluster the simulator takes: the config, on it, validates.
  const Result v = bagua(0, {"validate", kConfig, "--set", "runtime=sim", "--set",
                             "cluster={\"extends\": \"" + file.string() + "\"}"});
  EXPECT_EQ(v.exit_code, 0) << v.err;
}

// Without mpirun there is one rank, and nothing to measure.
TEST_F(MpiCli, CalibrateAloneSaysItNeedsTwoRanks) {
  const fs::path file = dir_ / "alone.json";
  const Result r = bagua(0, {"calibrate", "--out", file.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "config error: calibrate: needs 2 ranks or more (run it under mpirun -np 2)\n");
  EXPECT_FALSE(fs::exists(file));
}

}  // namespace

// output.trace under mpirun: rank 0 gathers every process's spans into one timeline in the simulator's
// format: each rank a process with its compute and communication tracks, the algorithm's buckets on the
// communication track (the quickstart's 4 one-layer buckets per iteration), from the barrier on.
TEST_F(MpiCli, TraceOfAJobHasEveryRanksTimeline) {
  const Result mpi = bagua(2, {"run", "configs/quickstart.json", "-q", "--out", (dir_ / "mpi").string(),
                               "--set", "runtime=mpi", "--set", "cluster.hosts=2", "--set",
                               "cluster.devices_per_host=1", "--set", "schedule.iterations=3", "--set",
                               "output.trace=true", "--set", "output.trace_iterations=[1, 2]"});
  ASSERT_EQ(mpi.exit_code, 0) << mpi.err;
  std::vector<fs::path> points;
  for (const auto& e : fs::directory_iterator(dir_ / "mpi" / "points"))
    points.push_back(e.path());
  ASSERT_EQ(points.size(), 1u);
  const Json trace = Json::parse(read_file(points[0] / "trace.json"));
  std::map<int, int> buckets;  // pid -> allreduce bucket slices
  std::set<std::pair<int, int>> lanes;
  for (const Json& e : trace["traceEvents"]) {
    if (e["name"] == "thread_name") lanes.insert({e["pid"].get<int>(), e["tid"].get<int>()});
    if (e["ph"] != "X") continue;
    EXPECT_GE(e["ts"].get<double>(), 0) << e.dump();
    if (e["name"].get<std::string>().rfind("allreduce bucket ", 0) == 0) {
      EXPECT_EQ(e["tid"], 1);
      ++buckets[e["pid"].get<int>()];
    }
  }
  EXPECT_EQ(lanes, (std::set<std::pair<int, int>>{{0, 0}, {0, 1}, {1, 0}, {1, 1}}));
  EXPECT_EQ(buckets, (std::map<int, int>{{0, 2 * 4}, {1, 2 * 4}}));
}
