// Service ranks (core/services.h) through the runner: cluster.cpu_hosts and byteps's servers on them.
// The workers alone train and give results; their gradients are colocated BytePS's; bad CPU hosts and
// mismatched algorithms are refused with one line naming the field.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/check.h"
#include "experiments/backend.h"
#include "experiments/components.h"
#include "experiments/config.h"
#include "experiments/json_util.h"
#include "experiments/runner.h"

namespace bagua::experiments {
namespace {

// `hosts` x `devices` workers training a linear regression with byteps (`servers`), optionally
// beside `cpu_hosts` CPU hosts, on `runtime`.
Json config(const std::string& runtime, int hosts, int devices, const std::string& servers,
            int cpu_hosts) {
  Json c = parse_json(R"({
    "name": "service_ranks_test",
    "cluster": {"intra_host": {"bandwidth": "150 GB/s", "latency": "1 us"},
                "nic": {"bandwidth": "10 Gbps", "latency": "5 us"}},
    "workload": {"name": "linear_regression", "batch_size": 16, "features": 8, "samples": 512},
    "optimizer": {"name": "sgd", "lr": 0.1},
    "schedule": {"iterations": 6}
  })",
                      "test");
  c["runtime"] = runtime;
  c["cluster"]["hosts"] = hosts;
  c["cluster"]["devices_per_host"] = devices;
  // Small partitions, so that a tensor is cut into several and both servers hold some.
  c["algorithm"] = Json{{"name", "byteps"}, {"servers", servers}, {"partition_bytes", 8}};
  if (cpu_hosts > 0) c["cluster"]["cpu_hosts"] = Json{{"count", cpu_hosts}};
  return c;
}

class ServiceRanksTest : public ::testing::Test {
 protected:
  PointConfig point(const Json& c) const {
    LoadOptions options;
    options.out_dir = "unused";
    return load_experiment_json(c, ".", options, *components_).points.front();
  }
  RanksRun run(const Json& c) {
    Backends backends(components_->runtimes, nullptr, nullptr);
    return run_ranks(point(c), *components_, backends, /*iterations=*/-1, {});
  }
  // The one-line error of loading and trying `c` (as `bagua run` does before running), or "".
  std::string error_of(const Json& c) {
    try {
      LoadOptions options;
      options.out_dir = "unused";
      const Experiment e = load_experiment_json(c, ".", options, *components_);
      Backends backends(components_->runtimes, nullptr, nullptr);
      check_points(e, *components_, backends);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  }
  std::unique_ptr<Components> components_ = make_components();
};

TEST_F(ServiceRanksTest, CpuServersAverageTheGradientsColocatedBytepsDoes) {
  // Two hosts: each partition's sum is a + b, whichever host's copy comes first, so the servers on CPU
  // hosts give colocated BytePS's losses bit for bit, on the simulator and on threads; on three hosts
  // the order of the sum differs (colocated: the server's own host first), the same to float rounding.
  for (const std::string runtime : {"sim", "threads"}) {
    for (const auto& [hosts, devices] : std::vector<std::pair<int, int>>{{2, 2}, {3, 1}}) {
      SCOPED_TRACE(runtime + " " + std::to_string(hosts) + " x " + std::to_string(devices));
      const RanksRun colocated = run(config(runtime, hosts, devices, "colocated", 0));
      const RanksRun cpu = run(config(runtime, hosts, devices, "cpu_hosts", 2));
      // Only the workers give results.
      ASSERT_EQ(cpu.ranks.size(), static_cast<size_t>(hosts * devices));
      ASSERT_EQ(colocated.ranks.size(), cpu.ranks.size());
      for (size_t r = 0; r < cpu.ranks.size(); ++r) {
        ASSERT_EQ(cpu.ranks[r].iterations.size(), 6u);
        for (size_t i = 0; i < 6; ++i) {
          const double want = colocated.ranks[r].iterations[i].loss;
          const double got = cpu.ranks[r].iterations[i].loss;
          ASSERT_TRUE(std::isfinite(got));
          if (hosts == 2)
            ASSERT_EQ(got, want) << "rank " << r << " iteration " << i;
          else
            ASSERT_NEAR(got, want, 1e-6 * std::max(1.0, std::fabs(want)))
                << "rank " << r << " iteration " << i;
        }
      }
      // The loss falls: the sums really came back (no update at all would leave it where it was).
      EXPECT_LT(cpu.ranks[0].iterations.back().loss, cpu.ranks[0].iterations.front().loss);
    }
  }
}

TEST_F(ServiceRanksTest, TheSimulatorRunsTheServersOnTheirOwnHostsAndLinks) {
  // 2 x 2 workers and 2 CPU hosts: the report lists 6 ranks (the service ranks after the workers) and
  // the CPU hosts' NIC links carry the pushes and pulls; only the 4 workers give results.
  const Json c = config("sim", 2, 2, "cpu_hosts", 2);
  const RanksRun run_ = run(c);
  const size_t params = make_workload(point(c), *components_, 4)->make_model(0)->num_params();
  ASSERT_TRUE(run_.report.has_value());
  EXPECT_EQ(run_.report->ranks.size(), 6u);
  EXPECT_EQ(run_.ranks.size(), 4u);
  int64_t into_servers = 0;
  int64_t out_of_servers = 0;
  for (const LinkStats& l : run_.report->links) {
    if (l.name == "cpu0.nic.down" || l.name == "cpu1.nic.down") into_servers += l.carried.count();
    if (l.name == "cpu0.nic.up" || l.name == "cpu1.nic.up") out_of_servers += l.carried.count();
  }
  // Each of the 2 hosts' local roots pushes every parameter's float once per iteration, and pulls as
  // many back: 2 x 4 B x params x 6 iterations into the servers, as many out.
  EXPECT_GT(params, 0u);
  EXPECT_EQ(into_servers, static_cast<int64_t>(2 * 4 * params * 6));
  EXPECT_EQ(out_of_servers, into_servers);
}

TEST_F(ServiceRanksTest, BadCpuHostsAreRefusedNamingTheField) {
  Json c = config("sim", 2, 1, "cpu_hosts", 2);
  EXPECT_EQ(error_of(c), "");
  c["cluster"]["cpu_hosts"]["count"] = 0;
  EXPECT_EQ(error_of(c).rfind("cluster.cpu_hosts.count: ", 0), 0u) << error_of(c);
  c["cluster"]["cpu_hosts"]["count"] = -2;
  EXPECT_EQ(error_of(c).rfind("cluster.cpu_hosts.count: ", 0), 0u) << error_of(c);
  c["cluster"]["cpu_hosts"] = Json{{"count", 2}, {"nic", {{"bandwidth", "0 Gbps"}}}};
  EXPECT_EQ(error_of(c).rfind("cluster.cpu_hosts.nic.bandwidth: ", 0), 0u) << error_of(c);
  c["cluster"]["cpu_hosts"] = Json{{"count", 2}, {"disks", 1}};
  EXPECT_NE(error_of(c).find("cluster.cpu_hosts"), std::string::npos) << error_of(c);
  // The CPUs' memory bandwidth (what the servers' sums achieve): a rate, on the CPU hosts or on every
  // worker host (cluster.cpu), each error one line naming its path.
  for (const char* bad : {"0 GB/s", "-1 GB/s", "fast", "1e-6 bps"}) {
    c["cluster"]["cpu_hosts"] = Json{{"count", 2}, {"memory_bandwidth", bad}};
    EXPECT_EQ(error_of(c).rfind("cluster.cpu_hosts.memory_bandwidth: ", 0), 0u) << error_of(c);
    EXPECT_EQ(error_of(c).find('\n'), std::string::npos) << error_of(c);
    c["cluster"]["cpu_hosts"] = Json{{"count", 2}};
    c["cluster"]["cpu"] = Json{{"memory_bandwidth", bad}};
    EXPECT_EQ(error_of(c).rfind("cluster.cpu.memory_bandwidth: ", 0), 0u) << error_of(c);
    EXPECT_EQ(error_of(c).find('\n'), std::string::npos) << error_of(c);
    c["cluster"].erase("cpu");
  }
  c["cluster"]["cpu"] = Json{{"peak_flops", "1 TFLOP/s"}};
  EXPECT_EQ(error_of(c).rfind("cluster.cpu", 0), 0u) << error_of(c);
  EXPECT_NE(error_of(c).find("peak_flops"), std::string::npos) << error_of(c);
  c["cluster"].erase("cpu");
  EXPECT_EQ(error_of(c), "");
  // A real runtime's CPUs are measured, not modelled: a sweep of their bandwidth is refused there.
  for (const char* path : {"cluster.cpu.memory_bandwidth", "cluster.cpu_hosts.memory_bandwidth"}) {
    Json swept = config("threads", 2, 1, "cpu_hosts", 2);
    swept["sweep"] = Json{{"axes", {{path, {"10 GB/s", "20 GB/s"}}}}};
    EXPECT_EQ(error_of(swept).rfind(std::string("sweep.axes.") + path +
                                        ": a sweep of a simulated network value on runtime \"threads\"",
                                    0),
              0u)
        << error_of(swept);
  }
  c["cluster"]["cpu_hosts"] = Json{{"count", 2}};
  c["cluster"]["topology"] = Json{{"name", "leaf_spine"}, {"hosts_per_leaf", 1}};
  EXPECT_EQ(error_of(c),
            "cluster.cpu_hosts: the leaf_spine topology does not place CPU hosts (star does: on its "
            "switch)");
}

TEST_F(ServiceRanksTest, AnAlgorithmAndAClusterThatDisagreeAreRefused) {
  // CPU hosts for an algorithm that runs nothing on them.
  Json c = config("sim", 2, 1, "colocated", 2);
  EXPECT_EQ(error_of(c),
            "cluster.cpu_hosts: algorithm \"byteps\" runs nothing on service ranks (byteps with "
            "\"servers\": \"cpu_hosts\" does)");
  c["algorithm"] = Json{{"name", "gradient_allreduce"}};
  EXPECT_NE(error_of(c).find("algorithm \"gradient_allreduce\" runs nothing"), std::string::npos);
  // Servers on CPU hosts without any.
  c = config("threads", 2, 1, "cpu_hosts", 0);
  EXPECT_EQ(error_of(c),
            "algorithm.servers: \"cpu_hosts\" needs CPU hosts to run the servers on "
            "(cluster.cpu_hosts)");
}

TEST_F(ServiceRanksTest, WithoutCpuHostsTheResolvedConfigIsAsBefore) {
  // A cluster without cpu_hosts resolves without the key (so the point ids and hashes of every
  // existing config stay), one with them lists the count (and, on the simulator, their NIC).
  EXPECT_FALSE(point(config("sim", 2, 1, "colocated", 0)).resolved["cluster"].contains("cpu_hosts"));
  const Json with = point(config("sim", 2, 1, "cpu_hosts", 3)).resolved["cluster"]["cpu_hosts"];
  EXPECT_EQ(with["count"], 3);
  EXPECT_EQ(with["nic"]["latency"], "5 us");
  // Their CPU: default_cpu()'s memory bandwidth, or the worker hosts' cluster.cpu when given, or
  // their own; cluster.cpu is written only when given.
  EXPECT_EQ(with["memory_bandwidth"], "300 Gbps");
  EXPECT_FALSE(point(config("sim", 2, 1, "cpu_hosts", 3)).resolved["cluster"].contains("cpu"));
  Json c = config("sim", 2, 1, "cpu_hosts", 3);
  c["cluster"]["cpu"] = Json{{"memory_bandwidth", "20 GB/s"}};
  EXPECT_EQ(point(c).resolved["cluster"]["cpu"]["memory_bandwidth"], "160 Gbps");
  EXPECT_EQ(point(c).resolved["cluster"]["cpu_hosts"]["memory_bandwidth"], "160 Gbps");
  EXPECT_EQ(point(c).cluster.cpu_hosts.cpu.memory_bandwidth, Bandwidth::gigabytes_per_second(20));
  c["cluster"]["cpu_hosts"]["memory_bandwidth"] = "40 GB/s";
  EXPECT_EQ(point(c).cluster.cpu_hosts.cpu.memory_bandwidth, Bandwidth::gigabytes_per_second(40));
  EXPECT_EQ(point(c).cluster.cpu.memory_bandwidth, Bandwidth::gigabytes_per_second(20));
}

}  // namespace
}  // namespace bagua::experiments
