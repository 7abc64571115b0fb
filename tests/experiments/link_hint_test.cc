// A config's cluster reaches the transports of a real runtime (World::set_link_hint, experiments/
// backend.cc), so that NCCL's tuner (core/collectives/nccl.h) chooses on it as on the simulator of the
// same config. Before, a real runtime's transport reported no links, the tuner took NCCL's defaults
// (12 GB/s), and on a 100 Mbit/s network it ran LL (twice the bytes on the wire) for a 64 KiB
// allreduce where the simulator ran Simple: the validation's real "nccl" runs took 11.2 ms per 64 KiB
// bucket against the bulk ring's 5.6 ms (results/runtime/validation.md).
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "core/collectives/nccl.h"
#include "experiments/backend.h"
#include "experiments/components.h"
#include "experiments/config.h"
#include "experiments/json_util.h"
#include "netsim/simulation.h"
#include "runtime/threads/world.h"

namespace bagua::experiments {
namespace {

using collectives::NcclChoice;

struct Seen {
  std::optional<LinkHint> hint;
  std::optional<LinkHint> subgroup_hint;
  NcclChoice choice;
};

// What rank 0 of `runtime`'s world reports for the config's 2 hosts x 2 ranks on a 100 Mbit/s, 50 us
// network: its links, its subgroup's, and NCCL's choice for an allreduce of 64 KiB.
Seen seen_on(const std::string& runtime) {
  Json c = parse_json(R"({
    "name": "link_hint_test",
    "cluster": {"hosts": 2, "devices_per_host": 2,
                "intra_host": {"bandwidth": "150 GB/s", "latency": "1 us"},
                "nic": {"bandwidth": "100 Mbps", "latency": "50 us"}},
    "workload": {"name": "linear_regression", "batch_size": 16, "features": 8, "samples": 512},
    "algorithm": {"name": "gradient_allreduce", "allreduce": "nccl"},
    "optimizer": {"name": "sgd", "lr": 0.1},
    "schedule": {"iterations": 1}
  })",
                      "test");
  c["runtime"] = runtime;
  const std::unique_ptr<Components> components = make_components();
  LoadOptions options;
  options.out_dir = "unused";
  PointConfig point = load_experiment_json(c, ".", options, *components).points.front();
  Backends backends(components->runtimes, nullptr, nullptr);
  Seen seen;
  backends.run(
      point,
      [&](RankContext& ctx) {
        Transport& t = ctx.transport();
        const int all[] = {0, 1, 2, 3};
        const std::optional<LinkHint> sub = t.subgroup(all)->link_hint();
        if (t.rank() != 0) return;
        seen.hint = t.link_hint();
        seen.subgroup_hint = sub;
        seen.choice = collectives::nccl_choose(collectives::nccl_topology(t), Bytes(64 << 10));
      },
      nullptr);
  return seen;
}

TEST(LinkHint, ARealRuntimeTunesNcclFromItsConfigsLinksAsTheSimulatorDoes) {
  const Seen sim = seen_on("sim");
  const Seen threads = seen_on("threads");
  ASSERT_TRUE(sim.hint.has_value());
  for (const std::optional<LinkHint>& h : {threads.hint, threads.subgroup_hint}) {
    ASSERT_TRUE(h.has_value());
    EXPECT_EQ(h->inter_host.bytes_per_second(), 100e6 / 8);
    EXPECT_EQ(h->inter_host_latency, Time::us(50));
    EXPECT_EQ(h->intra_host.bytes_per_second(), 150e9);
    EXPECT_EQ(h->intra_host_latency, Time::us(1));
    EXPECT_EQ(h->compute_capability, sim.hint->compute_capability);
    EXPECT_EQ(h->nic_near_device, sim.hint->nic_near_device);
  }
  EXPECT_EQ(threads.choice, sim.choice);
  // On 100 Mbit/s the wire decides: Simple's bytes, not LL's (8 bytes of data per 16 on the wire).
  EXPECT_EQ(sim.choice.protocol, collectives::NcclProtocol::kSimple);
}

// A world no config describes (a job launched without a cluster) reports no links: NCCL's defaults,
// 12 GB/s, under which the same 64 KiB allreduce runs LL.
TEST(LinkHint, WithoutLinksTheTunerTakesNcclsDefaults) {
  std::optional<LinkHint> hint = LinkHint{};
  NcclChoice choice;
  runtime::threads::ThreadsWorld(4, 2).run([&](RankContext& ctx) {
    if (ctx.transport().rank() != 0) return;
    hint = ctx.transport().link_hint();
    choice = collectives::nccl_choose(collectives::nccl_topology(ctx.transport()), Bytes(64 << 10));
  });
  EXPECT_FALSE(hint.has_value());
  EXPECT_EQ(choice.protocol, collectives::NcclProtocol::kLL);
}

}  // namespace
}  // namespace bagua::experiments
