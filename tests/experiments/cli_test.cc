// The `bagua` command itself, run as a child process on the configs of this tree.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/experiments/bagua_command.h"

namespace {

namespace fs = std::filesystem;

using bagua::testing::read_file;
using bagua::testing::write_file;
using Result = bagua::testing::CommandResult;

class Cli : public bagua::testing::BaguaCommandTest {
 protected:
  Cli() : BaguaCommandTest("bagua_cli_test") {}

  // Every file under `root`: relative path -> content.
  static std::map<std::string, std::string> snapshot(const fs::path& root) {
    std::map<std::string, std::string> files;
    if (!fs::exists(root)) return files;
    for (const auto& e : fs::recursive_directory_iterator(root))
      if (e.is_regular_file()) files[fs::relative(e.path(), root).string()] = read_file(e.path());
    return files;
  }
};

const char* kQuickstart = "configs/quickstart.json";

TEST_F(Cli, ConfigErrorsExitNonZeroWithOneLineAndWriteNothing) {
  struct Case {
    std::string set;
    std::string first_words;  // the start of the error line
  };
  const Case cases[] = {
      {"schedule.iterationz=5",
       "config error: schedule.iterationz: unknown key, did you mean \"iterations\"? (known: "
       "iterations,"},
      {"algorithm.hierarchical=3", "config error: algorithm.hierarchical: expected bool, got 3"},
      {"cluster.nic.bandwidth=0 Gbps",
       "config error: cluster.nic.bandwidth: must be > 0, got \"0 Gbps\""},
      {"cluster.nic.latency=5 lightyears",
       "config error: cluster.nic.latency: unknown time unit \"lightyears\""},
      {"cluster.nic.bandwidth=100",
       "config error: cluster.nic.bandwidth: expected a bandwidth with a unit"},
      {R"(sweep={"mode": "zip", "axes": {"seed": [1, 2], "schedule.iterations": [5]}})",
       "config error: sweep.axes.schedule.iterations: zip needs axes of equal length"},
      // A world the algorithm's init refuses (shift_one pairs ranks up): found by the dry run.
      {R"(algorithm={"name": "decentralized", "peer_selection_mode": "shift_one", "hierarchical": false})",
       "config error: "},
  };
  const fs::path fresh = dir_ / "fresh";
  const fs::path existing = dir_ / "existing";
  write_file(existing / "results.csv", "from an earlier run\n");
  write_file(existing / "points" / "p000-00000000" / "summary.json", "{}");
  const auto before = snapshot(existing);
  for (const Case& c : cases) {
    for (const fs::path& out : {fresh, existing}) {
      std::vector<std::string> args = {"run", kQuickstart, "--out", out.string(), "--set", c.set};
      if (c.set.rfind("algorithm=", 0) == 0) {
        for (const char* s : {"cluster.hosts=3", "cluster.devices_per_host=1"}) {
          args.push_back("--set");
          args.push_back(s);
        }
      }
      const Result r = bagua(args);
      EXPECT_EQ(r.exit_code, 2) << c.set << "\n" << r.err;
      EXPECT_EQ(r.err.rfind(c.first_words, 0), 0u) << c.set << "\n" << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;  // exactly one line
      EXPECT_EQ(r.out, "");
      EXPECT_FALSE(fs::exists(fresh)) << c.set;
      EXPECT_EQ(snapshot(existing), before) << c.set;
    }
  }
  // The world-size error names the algorithm's reason.
  const Result r = bagua(
      {"validate", kQuickstart, "--set",
       R"(algorithm={"name": "decentralized", "peer_selection_mode": "shift_one", "hierarchical": false})",
       "--set", "cluster.hosts=3", "--set", "cluster.devices_per_host=1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("shift_one needs an even number of ranks"), std::string::npos) << r.err;
}

TEST_F(Cli, AClosedStandardOutputEndsTheCommandWithOneLineAndAFailingStatus) {
  // `bagua validate ... | head -1` with SIGPIPE ignored: the writes after head has gone fail (EPIPE).
  // Standard output closed outright fails every write the same way (EBADF), without the race of
  // when head exits. Without the check the command exited 0 with its output lost.
  const fs::path err = dir_ / "stderr";
  const std::string cmd = "cd " + bagua::testing::shell_quote(BAGUA_SOURCE_DIR) + " && " +
                          bagua::testing::shell_quote(BAGUA_BINARY) + " validate " + kQuickstart +
                          " </dev/null >&- 2>" + bagua::testing::shell_quote(err.string());
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_EQ(read_file(err), "error: could not write to standard output\n");
}

TEST_F(Cli, ValidateAndList) {
  Result r = bagua({"validate", kQuickstart});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("valid, 1 point"), std::string::npos) << r.out;
  r = bagua({"list"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* name : {"gradient_allreduce", "logistic_regression", "sgd", "minmax_uint8",
                           "profile", "star", "leaf_spine", "peer_selection_mode"})
    EXPECT_NE(r.out.find(name), std::string::npos) << name;
  // The topologies come from their registry, each with its parameters.
  const size_t topologies = r.out.find("topologies:\n");
  ASSERT_NE(topologies, std::string::npos) << r.out;
  for (const char* line : {"  fat_tree  ", "      k (integer, required, >= 2, <= 256)", "  rail_optimized  ",
                           "  torus  ", "      z (integer, default 1, >= 1, <= 4096)",
                           "      spine_bandwidth (bandwidth, optional)"})
    EXPECT_NE(r.out.find(line, topologies), std::string::npos) << line;
  r = bagua({"run"});
  EXPECT_NE(r.exit_code, 0);  // the config is required
}

TEST_F(Cli, SameConfigTwiceGivesIdenticalFiles) {
  const std::vector<std::string> sets = {"--set", "schedule.iterations=20", "--set",
                                         "output.trace=true", "--quiet"};
  std::vector<std::string> a = {"run", kQuickstart, "--out", (dir_ / "a").string()};
  std::vector<std::string> b = {"run", kQuickstart, "--out", (dir_ / "b").string()};
  a.insert(a.end(), sets.begin(), sets.end());
  b.insert(b.end(), sets.begin(), sets.end());
  ASSERT_EQ(bagua(a).exit_code, 0);
  ASSERT_EQ(bagua(b).exit_code, 0);
  const auto files_a = snapshot(dir_ / "a");
  const auto files_b = snapshot(dir_ / "b");
  // experiment.json, results.csv; iterations, links, ranks, summary, trace
  ASSERT_EQ(files_a.size(), 7u);
  EXPECT_TRUE(files_a == files_b);
}

TEST_F(Cli, AnInterruptedSweepResumesWithoutLosingOrDuplicatingRows) {
  const fs::path out = dir_ / "sweep";
  const std::vector<std::string> args = {
      "run",
      kQuickstart,
      "--out",
      out.string(),
      "--quiet",
      "--jobs",
      "2",
      "--set",
      "schedule.iterations=5",
      "--set",
      R"(sweep={"axes": {"cluster.nic.bandwidth": ["1 Gbps", "10 Gbps", "100 Gbps"]}})"};
  ASSERT_EQ(bagua(args).exit_code, 0);
  const auto complete = snapshot(out);
  const std::string results = complete.at("results.csv");
  ASSERT_EQ(std::count(results.begin(), results.end(), '\n'), 4);  // header + 3 rows
  const std::string last_row = results.substr(results.rfind('\n', results.size() - 2) + 1);
  const std::string last_id = last_row.substr(0, last_row.find(','));

  // 1. The last row torn mid-line.
  write_file(out / "results.csv", results.substr(0, results.size() - last_row.size() / 2));
  ASSERT_EQ(bagua(args).exit_code, 0);
  EXPECT_TRUE(snapshot(out) == complete);

  // 2. The last point's folder complete, its row never written.
  write_file(out / "results.csv", results.substr(0, results.size() - last_row.size()));
  ASSERT_EQ(bagua(args).exit_code, 0);
  EXPECT_TRUE(snapshot(out) == complete);

  // 3. The last point never finished: no folder, no row (and a half-written folder left behind).
  write_file(out / "results.csv", results.substr(0, results.size() - last_row.size()));
  fs::remove_all(out / "points" / last_id);
  write_file(out / "points" / ("." + last_id + ".partial") / "iterations.csv", "half");
  Result r =
      bagua({"run", kQuickstart, "--out", out.string(), "--set", "schedule.iterations=5", "--set",
             R"(sweep={"axes": {"cluster.nic.bandwidth": ["1 Gbps", "10 Gbps", "100 Gbps"]}})"});
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_TRUE(snapshot(out) == complete);
  size_t skipped = 0;
  for (size_t at = r.err.find("already done"); at != std::string::npos;
       at = r.err.find("already done", at + 1))
    ++skipped;
  EXPECT_EQ(skipped, 2u) << r.err;

  // 4. The last point's summary.json cut short (and no row): the point runs again.
  write_file(out / "results.csv", results.substr(0, results.size() - last_row.size()));
  write_file(out / "points" / last_id / "summary.json", "{\"point\": ");
  ASSERT_EQ(bagua(args).exit_code, 0);
  EXPECT_TRUE(snapshot(out) == complete);

  // 5. Everything done: nothing runs, nothing changes.
  r = bagua(args);
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_TRUE(snapshot(out) == complete);
}

double number(const nlohmann::json& v) {
  return v.is_number() ? v.get<double>() : std::nan("");
}

// The quickstart's acceptance: training converges, and 8 ranks with batch 32 and exact gradient
// averaging reach the full loss of 1 rank with batch 256 (the IID partition deals the shuffled data in
// per-rank batch blocks, so both see the same samples at every step).
TEST_F(Cli, QuickstartMatchesOneRankWithTheWholeBatch) {
  ASSERT_EQ(bagua({"run", kQuickstart, "--out", (dir_ / "eight").string(), "--quiet"}).exit_code, 0);
  ASSERT_EQ(bagua({"run", kQuickstart, "--out", (dir_ / "one").string(), "--quiet", "--set",
                   "cluster.hosts=1", "--set", "cluster.devices_per_host=1", "--set",
                   "workload.batch_size=256"})
                .exit_code,
            0);
  auto summary = [&](const std::string& name) {
    for (const auto& e : fs::directory_iterator(dir_ / name / "points"))
      return nlohmann::json::parse(read_file(e.path() / "summary.json"));
    return nlohmann::json();
  };
  const nlohmann::json eight = summary("eight");
  const nlohmann::json one = summary("one");
  EXPECT_EQ(eight["world_size"], 8);
  EXPECT_EQ(one["world_size"], 1);

  // Loss decreases: the first iteration's batch loss (at the initial weights) is above the final full
  // loss.
  const std::string csv =
      read_file(fs::directory_iterator(dir_ / "eight" / "points")->path() / "iterations.csv");
  const std::string first_row =
      csv.substr(csv.find('\n') + 1, csv.find('\n', csv.find('\n') + 1) - csv.find('\n') - 1);
  std::vector<std::string> fields;
  std::stringstream row(first_row);
  for (std::string f; std::getline(row, f, ',');)
    fields.push_back(f);
  ASSERT_GE(fields.size(), 6u);
  const double first_loss = std::stod(fields[5]);
  const double final_full = number(eight["final_full_loss"]);
  EXPECT_LT(final_full, 0.5 * first_loss);

  const double single = number(one["final_full_loss"]);
  ASSERT_TRUE(std::isfinite(single));
  EXPECT_LT(std::fabs(final_full - single), 0.01 * single) << final_full << " vs " << single;
  // The time split adds up.
  EXPECT_NEAR(number(eight["compute_per_iteration_s"]) + number(eight["exposed_comm_per_iteration_s"]),
              number(eight["time_per_iteration_s"]), 1e-12);
}

// The network presets run through `bagua run`: configs/network/tcp_sockets.json (paper_tcp: 4 MiB TCP
// windows, a 9.6 GB/s socket ceiling per host, NCCL credit slots, 1 us per message, each peer's
// messages one ordered stream) and
// configs/network/rdma.json (paper_rdma: the same without window and ceiling). At 1 ms per NIC link a
// route between hosts has L of about 2 ms, so a connection moves at most 4 MiB / 4 ms = 1 GB/s: the
// whole-model exchange of decentralized SGD is then far slower over TCP than over RDMA, where it runs
// at 12.5 GB/s. At 5 us the window does not bind (4 MiB / 20 us is far above line rate) and only the
// ceiling does: TCP is slower there too, by less.
// The fields of one CSV line: commas inside double quotes belong to the field, "" is a quote.
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '"' && quoted && i + 1 < line.size() && line[i + 1] == '"') {
      fields.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

TEST_F(Cli, NetworkPresetsRunAndTheTcpWindowCostsLatency) {
  std::map<std::string, std::map<std::string, double>> seconds;  // config -> "algorithm@latency" -> s
  for (const char* name : {"tcp_sockets", "rdma"}) {
    const fs::path out = dir_ / name;
    const Result r = bagua({"run", std::string("configs/network/") + name + ".json", "--out",
                            out.string(), "--quiet", "--jobs", "2"});
    ASSERT_EQ(r.exit_code, 0) << name << "\n" << r.err;
    std::stringstream csv(read_file(out / "results.csv"));
    std::string line;
    std::getline(csv, line);
    const std::vector<std::string> header = csv_fields(line);
    auto column = [&](const std::string& c) {
      return static_cast<size_t>(std::find(header.begin(), header.end(), c) - header.begin());
    };
    const size_t algorithm = column("algorithm_name");
    const size_t latency = column("cluster.nic.latency");
    const size_t time = column("time_per_iteration_s");
    ASSERT_LT(std::max({algorithm, latency, time}), header.size()) << line;
    int rows = 0;
    while (std::getline(csv, line)) {
      const std::vector<std::string> fields = csv_fields(line);
      ASSERT_EQ(fields.size(), header.size()) << line;
      seconds[name][fields[algorithm] + "@" + fields[latency]] = std::stod(fields[time]);
      ++rows;
    }
    EXPECT_EQ(rows, 4) << name;
  }
  const auto& tcp = seconds["tcp_sockets"];
  const auto& rdma = seconds["rdma"];
  for (const char* algorithm : {"gradient_allreduce", "decentralized"}) {
    SCOPED_TRACE(algorithm);
    const std::string fast = std::string(algorithm) + "@5 us";
    const std::string slow = std::string(algorithm) + "@1 ms";
    ASSERT_EQ(tcp.count(fast) + tcp.count(slow) + rdma.count(fast) + rdma.count(slow), 4u);
    EXPECT_GT(tcp.at(fast), rdma.at(fast));  // the socket ceiling
    EXPECT_GT(tcp.at(slow), rdma.at(slow));  // the ceiling and the window
    // The window makes latency cost more over TCP than over RDMA.
    EXPECT_GT(tcp.at(slow) - tcp.at(fast), rdma.at(slow) - rdma.at(fast));
  }
}

}  // namespace
