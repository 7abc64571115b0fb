// Exact simulated times of the intra-host phases as NCCL runs them (IntraHostAlgo::kNccl: the
// pipelined chain of core/collectives/nccl.h), worked by hand, and the hierarchical allreduce of a
// 10 MiB bucket on the paper's layout with intra-host "nccl" against "chain".
//
// The host: one host of Q = 3 devices, device links of B = 10 GB/s = 10 bytes per ns and 1 us each
// way, so a message of m bytes between two devices (src.dev.up, dst.dev.down), alone on its links,
// takes u(m) = L + m / B with L = 2000 ns. The simulator shares a link among concurrent flows
// (max-min), where NCCL's sends of one connection go out in order; the cases below say which holds.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <functional>

#include "core/collectives/collectives.h"
#include "core/collectives/nccl.h"
#include "netsim/simulation.h"

namespace bagua::collectives {
namespace {

constexpr int64_t kRouteLatencyNs = 2000;
constexpr double kBytesPerNs = 10;

netsim::ClusterSpec one_host(int devices) {
  netsim::ClusterSpec spec;
  spec.hosts = 1;
  spec.devices_per_host = devices;
  spec.intra_host = {Bandwidth::gigabytes_per_second(10), Time::us(1)};
  spec.nic = {Bandwidth::gbps(100), Time::us(1)};
  spec.topology = {"star", {}};
  spec.device = {1e12, Bandwidth::gigabytes_per_second(100)};
  return spec;
}

int64_t u_ns(int64_t bytes) {
  return kRouteLatencyNs + static_cast<int64_t>(static_cast<double>(bytes) / kBytesPerNs);
}

// The simulated time of `phase` run by every rank on groups built with `options`.
Time simulate(const netsim::ClusterSpec& spec, const IntraHostOptions& options,
              const std::function<void(HierarchicalGroups&)>& phase) {
  netsim::Simulation simulation(spec);
  return simulation.run([&](RankContext& ctx) {
    HierarchicalGroups groups(ctx.transport(), options);
    phase(groups);
  });
}

TEST(IntraHostNcclTime, OneSlicePerHopIsTwoHops) {
  // Q = 3, S = 1 MB. One channel, the slice the whole buffer: the broadcast's slice goes 0 -> 1 ->
  // 2, the reduce's 1 -> 2 -> 0, each hop u(1 MB) = 2000 + 100'000 ns plus NCCL's step latency (the
  // ring under Simple on one node of PCI-class links, 10 GB/s: hwLatencies[PCI][Ring] 5.7 - 1.0 =
  // 4.7 us, nccl_step_latency): 2 (u + 4'700) = 213'400 ns. Two channels of one 500 KB slice each:
  // both slices of a hop leave together and share its links, landing together at 4'700 + L + 1 MB /
  // B, the same 213'400 ns (in order they would too: the second lands at L + 1 MB / B either way,
  // and the next hop waits for it).
  const Buffer data = Buffer::meta(DType::kF32, 1'000'000 / 4);
  for (int channels : {1, 2}) {
    const IntraHostOptions options{IntraHostAlgo::kNccl, Bytes(1'000'000 / channels), channels};
    const Time down = simulate(one_host(3), options,
                               [&](HierarchicalGroups& g) { intra_host_broadcast(g, data, 1); });
    const Time up = simulate(one_host(3), options, [&](HierarchicalGroups& g) {
      intra_host_reduce(g, data, ReduceOp::kSum, 1);
    });
    EXPECT_EQ(down.nanoseconds(), 2 * (u_ns(1'000'000) + 4'700)) << channels << " channel(s)";
    EXPECT_EQ(down.nanoseconds(), 213'400) << channels << " channel(s)";
    EXPECT_EQ(up.nanoseconds(), 213'400) << channels << " channel(s)";
  }
}

TEST(IntraHostNcclTime, SlicesInFlightShareTheLinkWhereTheChainSendsOneAtATime) {
  // Q = 3, S = 1 MB in two slices (or segments) of 500 KB on one channel.
  // kChain sends one segment at a time: (Q + k - 2) u(500 KB) = 3 x 52'000 = 156'000 ns.
  // kNccl has both slices in flight (8 slots): they leave after the step latency (4.7 us, as
  // above), share rank 0's link and land together at 4'700 + L + 1 MB / B = 106'700 ns; rank 1
  // forwards both at once, landing at 213'400 ns. In order (NCCL, or the simulator with in-order
  // transfer per connection) slice 0 would land at 56'700 ns and the pipeline would take 3 x 56'700
  // = 170'100 ns: this is the gap the in-order transfer closes.
  const Buffer data = Buffer::meta(DType::kF32, 1'000'000 / 4);
  const Time chain = simulate(one_host(3), {IntraHostAlgo::kChain, Bytes(500'000)},
                              [&](HierarchicalGroups& g) { intra_host_broadcast(g, data, 1); });
  const Time nccl = simulate(one_host(3), {IntraHostAlgo::kNccl, Bytes(500'000), 1},
                             [&](HierarchicalGroups& g) { intra_host_broadcast(g, data, 1); });
  EXPECT_EQ(chain.nanoseconds(), 3 * u_ns(500'000));
  EXPECT_EQ(chain.nanoseconds(), 156'000);
  EXPECT_EQ(nccl.nanoseconds(), 2 * (u_ns(1'000'000) + 4'700));
}

// The paper's cluster (configs/clusters/paper.json: 16 hosts x 8 V100, NVLink 150 GB/s and 1 us per
// device link, 100 Gbit/s NICs at 5 us, a star) and Bagua's 10 MiB bucket (bucket_cap).
netsim::ClusterSpec paper_cluster() {
  netsim::ClusterSpec spec;
  spec.hosts = 16;
  spec.devices_per_host = 8;
  spec.intra_host = {Bandwidth::gigabytes_per_second(150), Time::us(1)};
  spec.nic = {Bandwidth::gbps(100), Time::us(5)};
  spec.topology = {"star", {}};
  spec.device = {15.7e12, Bandwidth::gigabytes_per_second(900)};
  return spec;
}

struct PaperTimes {
  Time chain_phase;  // intra_host_reduce + intra_host_broadcast, kChain
  Time nccl_phase;   // the same, kNccl
  Time chain;        // hierarchical_allreduce (ring among leaders), kChain
  Time nccl;         // the same, kNccl
  int channels = 0;  // NCCL's channels for the host's 8 ranks and 10 MiB
};

PaperTimes paper_times(const netsim::ClusterSpec& spec) {
  const Buffer data = Buffer::meta(DType::kF32, 10 * 1024 * 1024 / 4);
  const IntraHostOptions chain{IntraHostAlgo::kChain};
  const IntraHostOptions nccl{IntraHostAlgo::kNccl};
  auto phases = [&](HierarchicalGroups& g) {
    intra_host_reduce(g, data, ReduceOp::kSum, 1);
    intra_host_broadcast(g, data, 2);
  };
  auto allreduce = [&](HierarchicalGroups& g) { hierarchical_allreduce(g, data, ReduceOp::kSum, 3); };
  PaperTimes t;
  t.chain_phase = simulate(spec, chain, phases);
  t.nccl_phase = simulate(spec, nccl, [&](HierarchicalGroups& g) {
    if (g.world_rank == 0) t.channels = intra_host_channels(nccl, *g.intra, data.bytes());
    phases(g);
  });
  t.chain = simulate(spec, chain, allreduce);
  t.nccl = simulate(spec, nccl, allreduce);
  return t;
}

TEST(IntraHostNcclTime, PaperLayoutTenMebibyteBucket) {
  // Bounds that hold whatever the link does with concurrent flows: a phase moves S = 10 MiB through
  // one device link at B = 150 GB/s (69.9 us) and the last byte crosses Q - 1 = 7 hops of L = 2 us:
  // each phase takes at least 83.9 us, the two at least 167.8 us.
  // With NCCL's credit slots (transport.model "nccl": 8 slots of 512 KiB per pair) both forms put the
  // same stream on every hop, twenty 512 KiB messages in one order (the chain's segments 0 .. 19, the
  // pipeline's slices (j, channel) of 2 channels x 10), each send completing once it holds a slot:
  // their times differ by NCCL's step latency alone, which the pipeline pays (Simple's ring on NVLink
  // on one node: 3.4 - 0.6 = 2.8 us per message) and the chain does not: 9 x 2.8 = 25.2 us per phase
  // (measured).
  // Measured (arrival completion, the simulator without in-order transfer): intra-host phases chain
  // 285.8 us, nccl 887.7 us on 2 channels; hierarchical allreduce chain 2218.7 us, nccl 2820.6 us
  // (842.9 and 2775.8 us before the step latency). With credit slots: phases chain 511.4 us, nccl
  // 561.8 us; allreduces chain 2444.2 us, nccl 2494.6 us.
  const double lower_us = 2 * (10.0 * 1024 * 1024 / 150e3 + 7 * 2.0);
  const PaperTimes t = paper_times(paper_cluster());
  EXPECT_EQ(t.channels, 2);
  EXPECT_GE(t.chain_phase.microseconds(), lower_us);
  EXPECT_GE(t.nccl_phase.microseconds(), lower_us);
  EXPECT_GT(t.chain, t.chain_phase);
  EXPECT_GT(t.nccl, t.nccl_phase);
  std::printf(
      "16 x 8, 10 MiB: intra-host phases chain %.1f us, nccl %.1f us (%d channels); "
      "hierarchical allreduce chain %.1f us, nccl %.1f us\n",
      t.chain_phase.microseconds(), t.nccl_phase.microseconds(), t.channels, t.chain.microseconds(),
      t.nccl.microseconds());
  netsim::ClusterSpec credit = paper_cluster();
  credit.transport = netsim::TransportModel::nccl();
  const PaperTimes c = paper_times(credit);
  EXPECT_EQ(c.nccl_phase - c.chain_phase, Time::ns(2 * 9 * 2'800));
  EXPECT_EQ(c.nccl - c.chain, Time::ns(2 * 9 * 2'800));
  EXPECT_GE(c.nccl_phase.microseconds(), lower_us);
  std::printf(
      "with transport nccl: intra-host phases chain %.1f us, nccl %.1f us; hierarchical "
      "allreduce chain %.1f us, nccl %.1f us\n",
      c.chain_phase.microseconds(), c.nccl_phase.microseconds(), c.chain.microseconds(),
      c.nccl.microseconds());
}

}  // namespace
}  // namespace bagua::collectives
