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

}  // namespace
