// Exact simulated times of NCCL's pipelined ring on a star, worked by hand, and the claim the pipeline
// exists for: on many hosts of many ranks the bulk ring pays the network latency on every one of its
// 2(P - 1) steps, the pipelined ring only where a slice's path crosses hosts.
//
// The star (sim_time_test.cc's): hosts of one device, NIC links of B = 100 Gbit/s = 12.5 bytes per ns
// and 1 us each way, device links 1 PB/s with no latency: a message of m bytes between two hosts,
// alone on its links, takes u(m) = L + m / B with L = 2000 ns. The simulator shares a link among
// concurrent flows (max-min); NCCL's network sends go out in order. The cases below keep one flow per
// link at a time (a window of one slice) or all flows of a link starting and ending together, where
// the two agree.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>

#include "core/collectives/nccl.h"
#include "core/ops.h"
#include "netsim/simulation.h"
#include "tests/support/worlds.h"

namespace bagua::collectives {
namespace {

// Apart from the same-named helpers of test_collectives's other files: the sanitizer presets
// compile several files of a program as one (CMAKE_UNITY_BUILD, CMakePresets.json).
namespace nccl_sim_time_test {

constexpr int64_t kRouteLatencyNs = 2000;
constexpr double kBytesPerNs = 12.5;

netsim::ClusterSpec star(int hosts, int devices_per_host = 1, Time nic_latency = Time::us(1)) {
  return testing::timing_star(hosts, devices_per_host, nic_latency);
}

Time simulate(const netsim::ClusterSpec& spec, const std::function<void(Transport&)>& body) {
  netsim::Simulation simulation(spec);
  return simulation.run([&](RankContext& ctx) { body(ctx.transport()); });
}

int64_t u_ns(int64_t bytes) {
  return kRouteLatencyNs + static_cast<int64_t>(static_cast<double>(bytes) / kBytesPerNs);
}

// A pipeline of slices of `slice_bytes` with `in_flight` slices in flight per peer.
PipelineOptions pipeline(int64_t slice_bytes, int in_flight, int channels = 1) {
  PipelineOptions o;
  o.channels = channels;
  o.step = Bytes(slice_bytes);
  o.slice_steps = 1;
  o.slots = in_flight;
  return o;
}

TEST(NcclSimulatedTime, BroadcastWithOneSliceInFlightIsTheChainFormula) {
  // P = 4, S = 5 MB in n = 4 slices of 1.25 MB, one in flight: slice j leaves position p at
  // (p + j) u, so the last lands after P + n - 2 = 6 u = 6 x 102'000 = 612'000 ns.
  const Buffer data = Buffer::meta(DType::kF32, 5'000'000 / 4);
  const Time t = simulate(
      star(4), [&](Transport& tr) { pipelined_broadcast(tr, data, 0, 1, pipeline(1'250'000, 1)); });
  EXPECT_EQ(t.nanoseconds(), 6 * u_ns(1'250'000));
  EXPECT_EQ(t.nanoseconds(), 612'000);
}

TEST(NcclSimulatedTime, RingAllreduceWithOneSliceInFlight) {
  // P = 3, S = 3 x 2.5 MB: chunks of 2.5 MB in n = 2 slices of 1.25 MB, one in flight. Every rank's
  // send of slice m (in posting order) waits for its send m - 1 to land, and its input arrived from
  // the left one u earlier: sends go back to back, 2 (P - 1) n = 8 slices of u = 102'000 ns:
  // 816'000 ns (the bulk ring: 2 (P - 1) (L + 2.5 MB / B) = 4 x 202'000 = 808'000 ns).
  const Buffer data = Buffer::meta(DType::kF32, 3 * 2'500'000 / 4);
  const Time t = simulate(star(3), [&](Transport& tr) {
    pipelined_ring_allreduce(tr, data, ReduceOp::kSum, 1, pipeline(1'250'000, 1));
  });
  EXPECT_EQ(t.nanoseconds(), 8 * u_ns(1'250'000));
  const Time bulk =
      simulate(star(3), [&](Transport& tr) { ring_allreduce(tr, data, ReduceOp::kSum, 1); });
  EXPECT_EQ(bulk.nanoseconds(), 4 * u_ns(2'500'000));
}

TEST(NcclSimulatedTime, TwoRankRingWithTheWholeChunkInFlight) {
  // P = 2, S = 2 x 5 MB: chunks of 5 MB in n = 4 slices of 1.25 MB, all four in flight. Step 0's four
  // slices share each NIC link from time 0 and land together at L + 5 MB / B = 402'000 ns; step 1's
  // are sent then and land at 804'000 ns, the bulk ring's time.
  const Buffer data = Buffer::meta(DType::kF32, 2 * 5'000'000 / 4);
  const Time t = simulate(star(2), [&](Transport& tr) {
    pipelined_ring_allreduce(tr, data, ReduceOp::kSum, 1, pipeline(1'250'000, 4));
  });
  EXPECT_EQ(t.nanoseconds(), 2 * u_ns(5'000'000));
  EXPECT_EQ(t.nanoseconds(), 804'000);
}

TEST(NcclSimulatedTime, SmallLLAllreduceOnTwoHosts) {
  // "allreduce": "nccl" forced to LL on 2 hosts of one rank, S = 4000 B (1000 f32). NCCL's choice
  // under LL is the ring: 6.6 + 2 x (5.0 + 1.0) = 18.6 us + 4000 B / 6.25 GB/s = 19.24 us, against
  // the tree's 6.8 + 2 x (5.0 + 1.0) = 18.8 us + 4000 B / (1.513 GB/s x .8) = 22.1 us (both cross
  // hosts with hwLat[NET][Tree][LL] = 5.0 as ppn = 1, plus the star's 1 us NIC latency once), on one
  // channel (4000 B < 2 x 512 threads x 8 x 2 ranks). The ring's chunks are 2000 B, one slice each (LL slices hold 32 KiB); on the wire a
  // slice is 2000 / 8 = 250 lines of 16 B = 4000 B. Step 0 (reduce-scatter) and step 1 (allgather)
  // each move one slice per rank, alone on its NIC links: 2 u(4000) = 2 x (2000 + 320) = 4640 ns;
  // LL pays no step latency (nccl_step_latency: the GPU's work beyond LL's).
  // Under Simple NCCL's choice is the tree (8.4 + 2 x (14 + 2 x 1.0) = 40.4 us + 4000 / (5.75 GB/s x
  // .9) = 41.17 us): each rank sends its half up (2000 B), the root sends it back down, each message
  // 9.0 us late (hwLatencies[NET][Tree] Simple 14 less LL 5.0; nccl_step_latency leaves out the 1 us
  // latencyInter, which the route pays): 2 x (9'000 + u(2000)) = 2 x (9'000 + 2'160) = 22'320 ns.
  // Without the step latency (the simulator before it) Simple took 4'320 ns and LL was the slower;
  // now LL is 4.8 times faster, NCCL's model 2.1 times (19.24 against 41.17 us, which charges the
  // per-call base latencies and the latencyInter the simulator leaves to the network).
  NcclChoice ll_model;
  NcclChoice simple_model;
  const Buffer data = Buffer::meta(DType::kF32, 1000);
  const Time ll = simulate(star(2), [&](Transport& tr) {
    if (tr.rank() == 0) {
      ll_model = nccl_choose(nccl_topology(tr), data.bytes(), NcclProtocolOption::kLL);
      simple_model = nccl_choose(nccl_topology(tr), data.bytes(), NcclProtocolOption::kSimple);
    }
    allreduce(tr, data, ReduceOp::kSum, 1, AllreduceAlgo::kNccl, NcclProtocolOption::kLL);
  });
  EXPECT_EQ(ll_model, (NcclChoice{NcclAlgo::kRing, NcclProtocol::kLL, 1, ll_model.time_us}));
  EXPECT_NEAR(ll_model.time_us, 18.6 + 4000 / 6250.0, 1e-9);
  EXPECT_EQ(simple_model.algo, NcclAlgo::kTree);
  EXPECT_NEAR(simple_model.time_us, 40.4 + 4000 / 5175.0, 1e-6);
  EXPECT_EQ(ll.nanoseconds(), 2 * u_ns(4000));
  EXPECT_EQ(ll.nanoseconds(), 4640);
  const Time simple = simulate(star(2), [&](Transport& tr) {
    allreduce(tr, data, ReduceOp::kSum, 1, AllreduceAlgo::kNccl, NcclProtocolOption::kSimple);
  });
  EXPECT_EQ(simple.nanoseconds(), 22'320);
  // LL128 (the ring): 2000 B is one warp's 1920 and part of a second, 2 x 2048 = 4096 B on the wire,
  // each message 8.5 - 5.0 = 3.5 us late (one rank per node: the tree's hwLatencies[NET]):
  // 2 x (3'500 + 2000 + 327.68) rounded up per message by the network model.
  const Time ll128 = simulate(star(2), [&](Transport& tr) {
    allreduce(tr, data, ReduceOp::kSum, 1, AllreduceAlgo::kNccl, NcclProtocolOption::kLL128);
  });
  EXPECT_GE(ll128.nanoseconds(), 2 * (3500 + 2000 + 327));
  EXPECT_LE(ll128.nanoseconds(), 2 * (3500 + 2000 + 328));
}

TEST(NcclSimulatedTime, TheClustersDevicesReachTheTuningModel) {
  // The simulator's link hint carries the cluster's device: its compute capability and whether its
  // NIC is behind PCIe switches only (cluster.device.compute_capability, nic_path).
  netsim::ClusterSpec spec = star(2, 2);
  NcclTopology seen;
  simulate(spec, [&](Transport& tr) {
    if (tr.rank() == 0) seen = nccl_topology(tr);
  });
  EXPECT_EQ(seen.compute_capability, 70);
  EXPECT_TRUE(seen.nic_near_gpu);
  spec.device.compute_capability = 90;
  spec.device.nic_path = netsim::NicPath::kPhb;
  simulate(spec, [&](Transport& tr) {
    if (tr.rank() == 0) seen = nccl_topology(tr);
  });
  EXPECT_EQ(seen.compute_capability, 90);
  EXPECT_FALSE(seen.nic_near_gpu);
  EXPECT_EQ(seen.nodes, 2);
  EXPECT_EQ(seen.ranks, 4);
}

TEST(NcclSimulatedTime, LLSlicesAChunkThatSimpleSendsWhole) {
  // The pipelined ring on 3 hosts of one rank, one channel, S = 3 x 64 KiB (49'152 f32): chunks of
  // 64 KiB. Simple sends a chunk as one slice (2 steps of 512 KiB hold it): 2 (P - 1) = 4 steps of
  // u(65'536) = 2000 + 5242.88, about 28'972 ns. LL cuts it into 2 slices of 32 KiB (65'536 B each
  // on the wire), both in flight (8 allowed): they share the NIC links and land together after
  // u(131'072) = 2000 + 10'485.76, and every step takes that: about 4 x 12'486 = 49'944 ns, the bytes
  // doubled and nothing saved, as no slice waits on a latency here.
  const Buffer data = Buffer::meta(DType::kF32, 3 * 65'536 / 4);
  PipelineOptions ll;
  ll.protocol = NcclProtocol::kLL;
  ll.step = kLLStepSize;
  ll.slice_steps = 1;
  const Time lines = simulate(
      star(3), [&](Transport& tr) { pipelined_ring_allreduce(tr, data, ReduceOp::kSum, 1, ll); });
  const Time simple =
      simulate(star(3), [&](Transport& tr) { pipelined_ring_allreduce(tr, data, ReduceOp::kSum, 1); });
  EXPECT_NEAR(static_cast<double>(simple.nanoseconds()), 4 * (2000 + 65'536 / 12.5), 4.0);
  EXPECT_NEAR(static_cast<double>(lines.nanoseconds()), 4 * (2000 + 131'072 / 12.5), 4.0);
}

// ncclAllGather (AllgatherAlgo::kNccl) against the bulk ring on the star above with NIC links of
// B = 1 GB/s (1 byte per ns) and 10 us each way: between hosts a message of m bytes takes
// u(m) = 20'000 ns + m ns. Small gathers: the tuner gives 1 channel below 64 KiB (nccl_channels), a
// chunk is one slice (slices are 1 MiB), and 4 slices may be in flight, more than the P - 1 sends.
netsim::ClusterSpec gb_star(int hosts, int devices_per_host, Time device_latency) {
  netsim::ClusterSpec spec = star(hosts, devices_per_host);
  spec.intra_host = {Bandwidth::bytes_per_second(1e15), device_latency};
  spec.nic = {Bandwidth::gigabytes_per_second(1), Time::us(10)};
  return spec;
}

TEST(NcclSimulatedTime, AllgatherOnOneRankPerHostIsTheRingsTime) {
  // 4 hosts of one rank, 1000 B per rank (S = 4000 B). Every hop is u = 20'000 + 1'000 = 21'000 ns.
  // Bulk ring: 3 steps of u = 63'000 ns. Pipelined: a rank forwards chunk rank - s as soon as it
  // lands, at s u, so the third lands at 3 u too: on a ring of equal hops whose chunk is one slice
  // the pipeline buys nothing (each step still waits for the previous hop's bytes).
  const netsim::ClusterSpec spec = gb_star(4, 1, Time::zero());
  const Buffer data = Buffer::meta(DType::kU8, 4000);
  const Time ring =
      simulate(spec, [&](Transport& tr) { allgather(tr, data, 1, AllgatherAlgo::kRing); });
  const Time nccl =
      simulate(spec, [&](Transport& tr) { allgather(tr, data, 1, AllgatherAlgo::kNccl); });
  EXPECT_EQ(ring.nanoseconds(), 63'000);
  // NCCL's ring pays its step latency on each of the 3 hops (Simple, one rank per node: the tree's
  // hwLatencies[NET] 14 - 5.0 = 9.0 us, nccl_step_latency): 3 x (21'000 + 9'000) = 90'000 ns.
  EXPECT_EQ(nccl.nanoseconds(), 90'000);
}

TEST(NcclSimulatedTime, AllgatherAcrossHostsPaysTheCrossingsOnlyAlongTheChunksPath) {
  // 2 hosts of 2 ranks (0, 1 | 2, 3), device links 1 PB/s and 5 us: inside a host a message of
  // 1000 B takes d = 2 x 5'000 + ceil(1000 B / 1e6 B per ns) = 10'001 ns; between hosts it crosses
  // two device links and two NIC links, u = 2 x 5'000 + 2 x 10'000 + 1'000 = 31'000 ns. The ring
  // 0 -> 1 -> 2 -> 3 -> 0 crosses hosts at 1 -> 2 and 3 -> 0.
  //   Bulk: every step waits for its slowest hop: 3 u = 93'000 ns.
  //   Pipelined: a rank sends its step-s chunk the moment its step s - 1 receive lands. Step 0
  //   lands at d on ranks 1 and 3, at u on ranks 2 and 0; the step-1 messages leave then and all
  //   land at d + u = 41'001; the step-2 messages leave at 41'001 and land at + d (ranks 3 and 1)
  //   or + u (ranks 2 and 0): 2 u + d = 72'001 ns, a crossing saved. (No two messages on one link
  //   move bytes at once: rank 1's sends enter their 1'000 ns of transfer at 30'000, 40'001 and
  //   71'001, so max-min sharing never enters.)
  //   NCCL's ring also pays its step latency per message (nccl_step_latency, Simple, 2 nodes of 2
  //   on "NVLink" (1 PB/s): inside a node max(3.4, 3 x 1.0) - max(0.6, 1.0) = 2.4 us, across the
  //   ring's hwLatencies[NET] 14 - 2.7 = 11.3 us): d' = 12'401, u' = 42'300, 2 u' + d' = 97'001 ns.
  const netsim::ClusterSpec spec = gb_star(2, 2, Time::us(5));
  const Buffer data = Buffer::meta(DType::kU8, 4000);
  const Time ring =
      simulate(spec, [&](Transport& tr) { allgather(tr, data, 1, AllgatherAlgo::kRing); });
  const Time nccl =
      simulate(spec, [&](Transport& tr) { allgather(tr, data, 1, AllgatherAlgo::kNccl); });
  EXPECT_EQ(ring.nanoseconds(), 93'000);
  EXPECT_EQ(nccl.nanoseconds(), 97'001);
}

// The claim: 16 hosts of 8 ranks, a 1 ms NIC latency (route latency 2 ms between hosts, 0 inside a
// host), a 128 KiB allreduce (chunks of 1 KiB: transfer times of ~80 ns, latency is everything).
struct LatencyCase {
  Time bulk;
  Time pipelined;  // NCCL's window, 4 slices in flight
  Time wide;       // 8 slices in flight
};
LatencyCase latency_case() {
  const netsim::ClusterSpec spec = star(16, 8, Time::ms(1));
  const Buffer data = Buffer::meta(DType::kF32, 128 * 1024 / 4);
  LatencyCase c;
  c.bulk = simulate(spec, [&](Transport& tr) { ring_allreduce(tr, data, ReduceOp::kSum, 1); });
  c.pipelined = simulate(spec, [&](Transport& tr) {
    pipelined_ring_allreduce(tr, data, ReduceOp::kSum, 1, PipelineOptions{});
  });
  PipelineOptions wide;
  wide.slots = 16;  // 16 / ALLREDUCE_SLICESTEPS = 8 in flight
  c.wide = simulate(
      spec, [&](Transport& tr) { pipelined_ring_allreduce(tr, data, ReduceOp::kSum, 1, wide); });
  return c;
}

TEST(NcclSimulatedTime, PipelinedRingPaysTheNetworkLatencyOncePerHostCrossing) {
  const LatencyCase c = latency_case();
  const double route_ms = 2.0;
  // Bulk: every one of the 2 (P - 1) = 254 steps waits for the crossing hop: at least 254 x 2 ms.
  EXPECT_GE(c.bulk.milliseconds(), 254 * route_ms);
  EXPECT_LT(c.bulk.milliseconds(), 254 * route_ms * 1.01);
  // Pipelined, unbound by credits (8 in flight): a slice's path of 254 hops crosses hosts on every
  // 8th, 31 or 32 times, about 2 H = 32 crossings of 2 ms (NCCL's model: 2 (nNodes - 1) = 30
  // inter-node steps): between 2 (H - 1) and 2 H + 2 crossings.
  EXPECT_GE(c.wide.milliseconds(), 30 * route_ms);
  EXPECT_LE(c.wide.milliseconds(), 34 * route_ms);
  // With NCCL's 4 in flight, a rank whose right neighbour is on another host sends its 254 slices
  // at most 4 per 2 ms landing: at least ceil(254 / 4) = 64 route latencies, about twice the chain.
  EXPECT_GE(c.pipelined.milliseconds(), 63 * route_ms);
  EXPECT_LE(c.pipelined.milliseconds(), 66 * route_ms);
}

TEST(NcclSimulatedTime, NcclPicksTheTreeAtHighLatencyAndTheSimulatorAgreesWithItsModel) {
  // The paper's cluster (16 hosts x 8, NVLink 150 GB/s and 1 us, 100 Gbit/s NICs) with a 1 ms NIC
  // latency, a 10 MiB bucket. NCCL's model (nccl_test.cc works the terms): ring 117.9 ms, tree
  // 16176.4 us + 10 MiB / 4.6 GB/s = 18.5 ms: the tree. The simulated double tree (4 host crossings of
  // 2 ms up and 4 down, 10 slices of 512 KiB per half, each tree's passes concurrent) lands within 10%
  // of the model's time where a peer's slices move in order, as on NCCL's connections (an ordered
  // transport: 18'989 us); on links shared max-min each hop's first 8 slices leave as a burst and land
  // together (23'299 us, +26 %). Either is far below both rings.
  netsim::ClusterSpec spec = star(16, 8, Time::ms(1));
  spec.intra_host = {Bandwidth::gigabytes_per_second(150), Time::us(1)};
  const Buffer data = Buffer::meta(DType::kF32, 10 * 1024 * 1024 / 4);
  NcclChoice choice;
  double model_us = 0;
  auto nccl_allreduce_on = [&](const netsim::ClusterSpec& at) {
    return simulate(at, [&](Transport& tr) {
      if (tr.rank() == 0) {
        choice = nccl_choose(nccl_topology(tr), data.bytes(), NcclProtocolOption::kSimple);
        model_us = nccl_time_us(nccl_topology(tr), NcclAlgo::kTree, data.bytes());
      }
      allreduce(tr, data, ReduceOp::kSum, 1, AllreduceAlgo::kNccl, NcclProtocolOption::kSimple);
    });
  };
  const Time nccl = nccl_allreduce_on(spec);
  EXPECT_EQ(choice.algo, NcclAlgo::kTree);
  EXPECT_NEAR(model_us, 18455.9, 0.1);
  EXPECT_NEAR(nccl.microseconds(), 23'298.7, 0.1);
  netsim::ClusterSpec ordered = spec;
  ordered.transport.ordered = true;
  EXPECT_NEAR(nccl_allreduce_on(ordered).microseconds(), model_us, 0.1 * model_us);
  const Time bulk = simulate(spec, [&](Transport& tr) { ring_allreduce(tr, data, ReduceOp::kSum, 1); });
  PipelineOptions two;
  two.channels = 2;
  const Time pipelined = simulate(
      spec, [&](Transport& tr) { pipelined_ring_allreduce(tr, data, ReduceOp::kSum, 1, two); });
  EXPECT_LT(nccl * 5, pipelined);
  EXPECT_LT(pipelined * 3, bulk);
}

}  // namespace nccl_sim_time_test
}  // namespace
}  // namespace bagua::collectives
