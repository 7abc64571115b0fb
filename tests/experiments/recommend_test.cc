// `bagua recommend`, run as a child process on the quickstart config, against separate `bagua run`s.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/experiments/bagua_command.h"

namespace {

namespace fs = std::filesystem;
using bagua::testing::read_file;
using Result = bagua::testing::CommandResult;
using Json = nlohmann::ordered_json;

class Recommend : public bagua::testing::BaguaCommandTest {
 protected:
  Recommend() : BaguaCommandTest("bagua_recommend_test") {}

  Json recommend_json(const std::vector<std::string>& extra) const {
    std::vector<std::string> args = {"recommend", "configs/quickstart.json", "--json", "-j", "2"};
    args.insert(args.end(), extra.begin(), extra.end());
    const Result r = bagua(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Json::parse(r.out);
  }
};

const char* kCandidates =
    "gradient_allreduce,bytegrad,decentralized(peer_selection_mode=ring),local_sgd(period=2),"
    "bytegrad(compressor=sign),low_precision_decentralized";

// The ranking is the one separate `bagua run`s of the same points give: the same point ids (the same
// resolved configs) and the same time per iteration, bit for bit, in increasing order.
TEST_F(Recommend, RanksExactlyAsSeparateRuns) {
  const Json list = recommend_json({"--algorithms", kCandidates, "--iterations", "6"});
  ASSERT_EQ(list.size(), 6u);
  std::vector<double> times;
  for (size_t i = 0; i < list.size(); ++i) {
    const Json& e = list[i];
    EXPECT_EQ(e["rank"].get<int>(), static_cast<int>(i) + 1);
    Json algorithm = e["params"];
    algorithm["name"] = e["algorithm"];
    const fs::path out = dir_ / ("run" + std::to_string(i));
    const Result r = bagua({"run", "configs/quickstart.json", "-q", "--out", out.string(), "--set",
                            "algorithm=" + algorithm.dump(), "--set",
                            "schedule.iterations=" + e["iterations"].dump()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string id = e["point"].get<std::string>();
    const std::string summary = read_file(out / "points" / id / "summary.json");
    ASSERT_FALSE(summary.empty()) << "the run did not make point " << id;
    const double t = Json::parse(summary)["time_per_iteration_s"].get<double>();
    EXPECT_EQ(t, e["time_per_iteration_s"].get<double>()) << e["algorithm"];
    times.push_back(t);
    // local_sgd's period of 2: 1 + a multiple of 2 iterations, so that the window spans whole periods.
    EXPECT_EQ(e["iterations"].get<int>(), e["algorithm"] == "local_sgd" ? 7 : 6);
  }
  EXPECT_TRUE(std::is_sorted(times.begin(), times.end()));
  EXPECT_LT(times.front(), times.back());  // the candidates differ: the order is not vacuous
}

// Speed-ups are over gradient_allreduce when ddp is not a candidate. Hand-worked latency: the
// quickstart's four one-layer buckets, each a flat ring allreduce over 8 ranks on 2 hosts x 4, take
// 2 (P - 1) = 14 bulk-synchronous steps, and each step waits for its one inter-host hop: device to host
// fabric 1 us, NIC to switch 5 us, switch to NIC 5 us, host fabric to device 1 us = 12 us. The latency
// bound is 4 x 14 x 12 us = 672 us; the bytes (at most 33 floats per bucket) add nanoseconds.
TEST_F(Recommend, SpeedupsAndHandWorkedLatency) {
  const Json list = recommend_json({"--algorithms", kCandidates, "--iterations", "6"});
  const Json* allreduce = nullptr;
  for (const Json& e : list)
    if (e["algorithm"] == "gradient_allreduce") allreduce = &e;
  ASSERT_NE(allreduce, nullptr);
  EXPECT_EQ((*allreduce)["speedup"].get<double>(), 1.0);
  EXPECT_NEAR((*allreduce)["latency_bound_s"].get<double>(), 672e-6, 1e-6);
  for (const Json& e : list) {
    EXPECT_EQ(e["speedup_over"], "gradient_allreduce");
    EXPECT_DOUBLE_EQ(e["speedup"].get<double>(), (*allreduce)["time_per_iteration_s"].get<double>() /
                                                     e["time_per_iteration_s"].get<double>());
    EXPECT_GE(e["latency_bound_s"].get<double>(), 0);
    EXPECT_LE(e["latency_bound_s"].get<double>(), e["time_per_iteration_s"].get<double>());
    EXPECT_GT(e["inter_host_bytes_per_iteration"].get<double>(), 0) << e["algorithm"];
  }
}

// Caveats follow what the convergence suite measured: a biased compressor without error feedback and
// decentralized disagreement are flagged with the suite's figure; exact methods have none.
TEST_F(Recommend, CaveatsQuoteTheConvergenceSuite) {
  const Json list = recommend_json(
      {"--algorithms",
       "gradient_allreduce,bytegrad(compressor=sign),bytegrad(compressor=sign,error_feedback=true),"
       "decentralized(peer_selection_mode=ring)",
       "--iterations", "3"});
  ASSERT_EQ(list.size(), 4u);
  for (const Json& e : list) {
    const std::string caveats = e["caveats"].dump();
    const Json& p = e["params"];
    if (e["algorithm"] == "gradient_allreduce" || p.value("error_feedback", false)) {
      EXPECT_TRUE(e["caveats"].empty()) << e.dump();
    } else if (e["algorithm"] == "bytegrad") {
      EXPECT_NE(caveats.find("biased compressor (sign) without error feedback"), std::string::npos);
      EXPECT_NE(caveats.find("\\\"bytegrad sign\\\": final loss up to"), std::string::npos) << caveats;
    } else {
      EXPECT_NE(caveats.find("\\\"decentralized ring\\\": final loss up to"), std::string::npos)
          << caveats;
    }
  }
}

// A grid sweep over "algorithm" gives the candidates; the other axes are the points, ranked apart.
// qadam is timed in its compressed phase and reported with its own warm-up.
TEST_F(Recommend, AlgorithmAxisGivesTheCandidates) {
  Json config = Json::parse(read_file(fs::path(BAGUA_SOURCE_DIR) / "configs/quickstart.json"), nullptr,
                            /*allow_exceptions=*/true, /*ignore_comments=*/true);
  config["schedule"]["iterations"] = 4;
  config["sweep"] = Json::parse(R"({"mode": "grid", "axes": {
      "algorithm": [{"name": "gradient_allreduce"}, {"name": "qadam", "warmup_steps": 50}],
      "cluster.nic.bandwidth": ["1 Gbps", "100 Gbps"]}})");
  bagua::testing::write_file(dir_ / "sweep.json", config.dump(2));
  const Result r = bagua({"recommend", (dir_ / "sweep.json").string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json list = Json::parse(r.out);
  ASSERT_EQ(list.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    const Json& e = list[i];
    EXPECT_EQ(e["swept"].size(), 1u);
    EXPECT_EQ(e["swept"]["cluster.nic.bandwidth"], i < 2 ? "1 Gbps" : "100 Gbps");
    if (e["algorithm"] == "qadam") {
      EXPECT_EQ(e["params"]["warmup_steps"], 50);
      EXPECT_EQ(e["iterations"], 2 + 4);  // one warm-up step, one more, then the window of 4
    }
  }
  EXPECT_EQ(list[0]["rank"], 1);
  EXPECT_EQ(list[2]["rank"], 1);
}

TEST_F(Recommend, TextTableAndErrors) {
  Result r = bagua({"recommend", "configs/quickstart.json", "--algorithms",
                    "gradient_allreduce,bytegrad", "--iterations", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("fastest: bytegrad"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ahead of the runner-up gradient_allreduce"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("why:"), std::string::npos);

  r = bagua({"recommend", "configs/quickstart.json", "--algorithms", "gradient_allreduce,nosuch"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("config error: --algorithms: unknown algorithm \"nosuch\"", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  r = bagua({"recommend", "configs/quickstart.json", "--algorithms", "bytegrad(compressor)"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("expected key=value"), std::string::npos) << r.err;
  // A parameter the algorithm does not have is the config loader's one-line error, naming the candidate.
  r = bagua({"recommend", "configs/quickstart.json", "--algorithms", "bytegrad(compresor=sign)"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("config error: --algorithms: bytegrad: algorithm.compresor: unknown key", 0),
            0u)
      << r.err;
  // A world the candidate cannot use (shift_one pairs ranks: 3 ranks) is reported, the others ranked.
  r = bagua({"recommend", "configs/quickstart.json", "--set", "cluster.hosts=3", "--set",
             "cluster.devices_per_host=1", "--algorithms",
             "gradient_allreduce,decentralized(peer_selection_mode=shift_one,hierarchical=false)",
             "--iterations", "3"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("decentralized: not applicable: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fastest: gradient_allreduce"), std::string::npos) << r.out;
}

// A cluster with CPU hosts (cluster.cpu_hosts): the quickstart's 2 x 4 workers beside 2 CPU hosts on the
// same switch. byteps runs once per placement of its servers; every candidate that runs nothing on the
// CPU hosts runs on the quickstart's own cluster (the same hosts, NICs and topology without them).
class RecommendCpuHosts : public Recommend {
 protected:
  // The quickstart with `cpu_hosts` CPU hosts (and, when given, the sweep), written to the scratch
  // folder; returns its path.
  fs::path cpu_config(int cpu_hosts, const Json& sweep = Json()) const {
    Json config = Json::parse(read_file(fs::path(BAGUA_SOURCE_DIR) / "configs/quickstart.json"),
                              nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/true);
    config["cluster"]["cpu_hosts"] = Json{{"count", cpu_hosts}};
    if (!sweep.is_null()) config["sweep"] = sweep;
    const fs::path path = dir_ / "cpu_hosts.json";
    bagua::testing::write_file(path, config.dump(2));
    return path;
  }
};

// The ranking is that of separate `bagua run`s of the same points: the rows that run without the CPU
// hosts are `bagua run`s of the quickstart itself, the row with servers on them a run of the config with
// its CPU hosts; the same point ids, the same times bit for bit, in increasing order.
TEST_F(RecommendCpuHosts, RanksExactlyAsSeparateRunsWithAndWithoutTheCpuHosts) {
  const fs::path config = cpu_config(2);
  const Result rec = bagua({"recommend", config.string(), "--json", "-j", "2", "--algorithms",
                            "ddp,byteps,gradient_allreduce,bytegrad", "--iterations", "6"});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  const Json list = Json::parse(rec.out);
  // byteps leaves its servers open: one row per placement.
  ASSERT_EQ(list.size(), 5u) << list.dump(2);
  std::vector<double> times;
  double colocated = 0, on_cpu_hosts = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    const Json& e = list[i];
    SCOPED_TRACE(e["label"].get<std::string>());
    EXPECT_EQ(e["rank"].get<int>(), static_cast<int>(i) + 1);
    EXPECT_EQ(e["speedup_over"], "ddp");
    const bool servers_on_cpu_hosts =
        e["algorithm"] == "byteps" && e["params"]["servers"] == "cpu_hosts";
    EXPECT_EQ(e["cpu_hosts"], servers_on_cpu_hosts ? 2 : 0);
    EXPECT_EQ(e["cpu_hosts_dropped"], servers_on_cpu_hosts ? 0 : 2);
    if (e["algorithm"] == "byteps") {
      EXPECT_EQ(e["label"], "byteps(servers=" + e["params"]["servers"].get<std::string>() + ")");
    } else {
      EXPECT_EQ(e["label"], e["algorithm"]);
    }
    Json algorithm = e["params"];
    algorithm["name"] = e["algorithm"];
    const fs::path out = dir_ / ("run" + std::to_string(i));
    const std::string run_config =
        servers_on_cpu_hosts ? config.string() : std::string("configs/quickstart.json");
    const Result r =
        bagua({"run", run_config, "-q", "--out", out.string(), "--set", "algorithm=" + algorithm.dump(),
               "--set", "schedule.iterations=" + e["iterations"].dump()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string id = e["point"].get<std::string>();
    const std::string summary = read_file(out / "points" / id / "summary.json");
    ASSERT_FALSE(summary.empty()) << "the run did not make point " << id;
    const double t = Json::parse(summary)["time_per_iteration_s"].get<double>();
    EXPECT_EQ(t, e["time_per_iteration_s"].get<double>());
    times.push_back(t);
    if (e["algorithm"] == "byteps") (servers_on_cpu_hosts ? on_cpu_hosts : colocated) = t;
  }
  EXPECT_TRUE(std::is_sorted(times.begin(), times.end()));
  // The placements differ (the CPU hosts' NICs carry the pushes and pulls): the two rows are not one.
  EXPECT_GT(colocated, 0);
  EXPECT_GT(on_cpu_hosts, 0);
  EXPECT_NE(colocated, on_cpu_hosts);

  // The text says which rows ran without the CPU hosts, and the table has their column.
  const Result text = bagua(
      {"recommend", config.string(), "-j", "2", "--algorithms", "ddp,byteps", "--iterations", "6"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("the cluster's 2 CPU hosts serve the candidates that run servers on them"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("CPU hosts\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("    ddp (without the 2 CPU hosts: it has no use for them): sends "),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("    byteps(servers=colocated) (without the 2 CPU hosts: it has no use for "
                          "them): sends "),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("    byteps(servers=cpu_hosts) (servers on the 2 CPU hosts): sends "),
            std::string::npos)
      << text.out;
}

// Which placements are ranked: a byteps entry that chooses its servers runs there only; the list of
// every registered algorithm ranks both placements even where the config's own byteps chose one. On
// a cluster without CPU hosts nothing changes: one byteps row, no CPU hosts anywhere.
TEST_F(RecommendCpuHosts, PlacementsRanked) {
  const Json sweep = Json::parse(R"({"mode": "grid", "axes": {"algorithm": [
      {"name": "ddp"}, {"name": "byteps", "servers": "cpu_hosts"}]}})");
  Result r = bagua({"recommend", cpu_config(2, sweep).string(), "--json", "--iterations", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json list = Json::parse(r.out);
  ASSERT_EQ(list.size(), 2u);
  for (const Json& e : list)
    EXPECT_EQ(e["label"], e["algorithm"]);  // no namesake: the plain name

  // Every registered algorithm, the config's own being byteps on the CPU hosts.
  cpu_config(2);
  r = bagua({"recommend", (dir_ / "cpu_hosts.json").string(), "--json", "-j", "2", "--iterations", "3",
             "--set", "algorithm={\"name\": \"byteps\", \"servers\": \"cpu_hosts\"}"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  list = Json::parse(r.out);
  std::vector<std::string> placements;
  for (const Json& e : list) {
    if (e["algorithm"] == "byteps") {
      placements.push_back(e["params"]["servers"].get<std::string>());
      EXPECT_EQ(e["cpu_hosts"], placements.back() == "cpu_hosts" ? 2 : 0);
    } else {
      EXPECT_EQ(e["cpu_hosts_dropped"], 2) << e["algorithm"];
    }
  }
  std::sort(placements.begin(), placements.end());
  EXPECT_EQ(placements, (std::vector<std::string>{"colocated", "cpu_hosts"}));

  // Without CPU hosts: the one default placement, and no note.
  r = bagua({"recommend", "configs/quickstart.json", "--json", "--algorithms", "ddp,byteps",
             "--iterations", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  list = Json::parse(r.out);
  ASSERT_EQ(list.size(), 2u);
  for (const Json& e : list) {
    EXPECT_EQ(e["cpu_hosts"], 0);
    EXPECT_EQ(e["cpu_hosts_dropped"], 0);
    EXPECT_EQ(e["label"], e["algorithm"]);
  }
  r = bagua(
      {"recommend", "configs/quickstart.json", "--algorithms", "ddp,byteps", "--iterations", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("CPU hosts"), std::string::npos) << r.out;
  // The config's own byteps on CPU hosts the cluster does not have keeps its placement (and cannot
  // run): nothing is moved to the colocated servers behind the user's back.
  r = bagua({"recommend", "configs/quickstart.json", "--json", "-j", "2", "--iterations", "3", "--set",
             "algorithm={\"name\": \"byteps\", \"servers\": \"cpu_hosts\"}"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int byteps_rows = 0;
  for (const Json& e : Json::parse(r.out)) {
    if (e["algorithm"] != "byteps") continue;
    ++byteps_rows;
    EXPECT_TRUE(e["rank"].is_null()) << e.dump();
    EXPECT_EQ(e["params"]["servers"], "cpu_hosts");
  }
  EXPECT_EQ(byteps_rows, 1);
}

// What still cannot run keeps its one line: servers on CPU hosts the cluster does not have are "not
// applicable" while the others are ranked; CPU hosts on a topology that does not place them, or a bad
// cpu_hosts field, are the config loader's one-line error. `bagua run` of a sweep over algorithms on a
// cluster with CPU hosts refuses the points that run nothing on them with one line naming
// cluster.cpu_hosts, before anything is written (it drops nothing the user asked for).
TEST_F(RecommendCpuHosts, WhatCannotRunSaysSoInOneLine) {
  Result r = bagua({"recommend", "configs/quickstart.json", "--algorithms",
                    "ddp,byteps(servers=cpu_hosts)", "--iterations", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("    byteps: not applicable: algorithm.servers: \"cpu_hosts\" needs CPU hosts "
                       "to run the servers on (cluster.cpu_hosts)\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("fastest: ddp"), std::string::npos) << r.out;

  // CPU hosts on a topology that cannot place them: the cluster itself is refused, as `bagua run`
  // refuses it, with the topology's one line.
  const fs::path config = cpu_config(2);
  r = bagua({"recommend", config.string(), "--set",
             "cluster.topology={\"name\": \"leaf_spine\", \"hosts_per_leaf\": 1}", "--algorithms",
             "ddp,byteps", "--iterations", "3"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "config error: cluster.cpu_hosts: the leaf_spine topology does not place CPU hosts (star "
            "does: on its switch)\n");

  r = bagua({"recommend", config.string(), "--set", "cluster.cpu_hosts.count=0", "--algorithms",
             "ddp,byteps"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("config error: cluster.cpu_hosts.count: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;

  const Json sweep = Json::parse(R"({"mode": "grid", "axes": {"algorithm": [
      {"name": "byteps", "servers": "cpu_hosts"}, {"name": "ddp"}]}})");
  const fs::path out = dir_ / "sweep_run";
  r = bagua({"run", cpu_config(2, sweep).string(), "-q", "--out", out.string(), "--set",
             "schedule.iterations=3"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("config error: cluster.cpu_hosts: algorithm \"ddp\" runs nothing on service "
                        "ranks (byteps with \"servers\": \"cpu_hosts\" does) (point ",
                        0),
            0u)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(fs::exists(out / "results.csv"));
}

// configs/recommend/vgg16_cpu_hosts.json, made small (2 GPU hosts and 2 CPU hosts instead of 16 and 16,
// 2 iterations): its axis gives six rows, byteps one per placement, and only byteps(servers=cpu_hosts)
// runs with the CPU hosts.
TEST_F(RecommendCpuHosts, TheReadmeConfigRanksBothPlacementsAgainstDdp) {
  const Result r =
      bagua({"recommend", "configs/recommend/vgg16_cpu_hosts.json", "--json", "-j", "2", "--set",
             "cluster.hosts=2", "--set", "cluster.cpu_hosts.count=2", "--iterations", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json list = Json::parse(r.out);
  std::vector<std::string> labels;
  for (const Json& e : list) {
    labels.push_back(e["label"].get<std::string>());
    ASSERT_FALSE(e["rank"].is_null()) << e.dump();
    EXPECT_EQ(e["speedup_over"], "ddp");
    const bool on_cpu_hosts = e["label"] == "byteps(servers=cpu_hosts)";
    EXPECT_EQ(e["cpu_hosts"], on_cpu_hosts ? 2 : 0) << e["label"];
    EXPECT_EQ(e["cpu_hosts_dropped"], on_cpu_hosts ? 0 : 2) << e["label"];
    if (e["algorithm"] == "ddp") {
      EXPECT_EQ(e["speedup"].get<double>(), 1.0);
    }
  }
  std::sort(labels.begin(), labels.end());
  EXPECT_EQ(labels,
            (std::vector<std::string>{"bytegrad", "byteps(servers=colocated)",
                                      "byteps(servers=cpu_hosts)", "ddp", "decentralized", "horovod"}));
}

}  // namespace
