// Exact simulated times of collectives on a star, against the catalogue's step counts in the alpha-beta
// closed form: a step that moves m bytes between disjoint pairs of hosts takes L + m / B.
//
// The cluster: P hosts of one device each on one switch. A NIC link has bandwidth B = 100 Gbit/s =
// 12.5 GB/s (12.5 bytes per ns) and latency 1 us each way; the device <-> host links are 1 PB/s with no
// latency, so that they neither add latency nor limit a flow. A message between two hosts crosses
// src.dev.up, src.nic.up, dst.nic.down and dst.dev.down: L = 0 + 1 us + 1 us + 0 = 2000 ns, and its
// rate is the slowest link's, B. In every step below each NIC link carries at most one flow, so no
// flows share a link and a message of m bytes takes exactly L + m / B (m / B a whole number of ns
// here). The hierarchical tests at the end build a cluster of two hosts of four devices, described
// there.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>

#include "core/collectives/collectives.h"
#include "core/ops.h"
#include "netsim/simulation.h"

namespace bagua::collectives {
namespace {

// Apart from the same-named helpers of test_collectives's other files: the sanitizer presets
// compile several files of a program as one (CMAKE_UNITY_BUILD, CMakePresets.json).
namespace sim_time_test {

constexpr int64_t kRouteLatencyNs = 2000;  // 1 us up + 1 us down, as above
constexpr double kBytesPerNs = 12.5;       // 100 Gbit/s

netsim::ClusterSpec star(int hosts) {
  netsim::ClusterSpec spec;
  spec.hosts = hosts;
  spec.devices_per_host = 1;
  spec.intra_host = {Bandwidth::bytes_per_second(1e15), Time::zero()};
  spec.nic = {Bandwidth::gbps(100), Time::us(1)};
  spec.device = {1e12, Bandwidth::gigabytes_per_second(100)};
  return spec;
}

// Simulated time of `body` on a star of `hosts` hosts.
Time simulate(int hosts, const std::function<void(Transport&)>& body) {
  netsim::Simulation simulation(star(hosts));
  return simulation.run([&](RankContext& ctx) { body(ctx.transport()); });
}

// Time of one step that moves `bytes` per message.
int64_t step_ns(int64_t bytes) {
  const double ns = static_cast<double>(bytes) / kBytesPerNs;
  EXPECT_EQ(ns, static_cast<double>(static_cast<int64_t>(ns))) << "choose sizes that take whole ns";
  return kRouteLatencyNs + static_cast<int64_t>(ns);
}

TEST(SimulatedTime, RingAllreduceTakesTwoPMinusOneSteps) {
  // 2 (P - 1) steps of one chunk, S / P = 1.25 MB, each 2000 + 1'250'000 / 12.5 = 102'000 ns:
  // P = 2: 204'000 ns, P = 3: 408'000 ns, P = 4: 612'000 ns, P = 8: 1'428'000 ns.
  for (int ranks : {2, 3, 4, 8}) {
    const int64_t chunk_bytes = 1'250'000;
    const Buffer data = Buffer::meta(DType::kF32, static_cast<size_t>(ranks * chunk_bytes / 4));
    const Time t = simulate(ranks, [&](Transport& tr) { allreduce(tr, data, ReduceOp::kSum, 1); });
    EXPECT_EQ(t.nanoseconds(), 2 * (ranks - 1) * step_ns(chunk_bytes)) << ranks << " ranks";
  }
  EXPECT_EQ(2 * 3 * step_ns(1'250'000), 612'000);  // the P = 4 figure above
}

TEST(SimulatedTime, RingAllreduceMovesRealDataInTheSameTime) {
  // Materialized buffers cost exactly what meta buffers cost: P = 4, 1.25 MB chunks, 612'000 ns.
  const int ranks = 4;
  const size_t count = 4 * 1'250'000 / 4;
  const Time t = simulate(ranks, [&](Transport& tr) {
    Buffer data = Buffer::host(DType::kF32, count);
    fill(data, tr.rank() + 1);
    allreduce(tr, data, ReduceOp::kSum, 1);
    EXPECT_EQ(data.as<float>()[count - 1], 10.0f);  // 1 + 2 + 3 + 4
  });
  EXPECT_EQ(t.nanoseconds(), 612'000);
}

TEST(SimulatedTime, HalvingDoublingAllreduce) {
  // P = 4, S = 5 MB: halving moves S/2 then S/4, doubling S/4 then S/2, each step between disjoint
  // pairs: 2 (2000 + 200'000) + 2 (2000 + 100'000) = 608'000 ns.
  const Buffer data = Buffer::meta(DType::kF32, 5'000'000 / 4);
  const Time t = simulate(4, [&](Transport& tr) {
    allreduce(tr, data, ReduceOp::kSum, 1, AllreduceAlgo::kHalvingDoubling);
  });
  EXPECT_EQ(t.nanoseconds(), 2 * step_ns(2'500'000) + 2 * step_ns(1'250'000));
  EXPECT_EQ(t.nanoseconds(), 608'000);
}

TEST(SimulatedTime, RecursiveDoublingAllreduceTakesLog2PRoundsOfTheWholeBuffer) {
  // P a power of two, S = 1.25 MB: lg P rounds, each a swap of the whole buffer between disjoint
  // pairs (one flow per NIC link and direction), 2000 + 1'250'000 / 12.5 = 102'000 ns a round:
  // P = 2: 102'000 ns, P = 4: 204'000 ns, P = 8: 306'000 ns (the alpha-beta lg P (alpha + S beta)).
  const Buffer data = Buffer::meta(DType::kF32, 1'250'000 / 4);
  for (int ranks : {2, 4, 8}) {
    const Time t = simulate(ranks, [&](Transport& tr) {
      allreduce(tr, data, ReduceOp::kSum, 1, AllreduceAlgo::kRecursiveDoubling);
    });
    int rounds = 0;
    while ((1 << rounds) < ranks)
      ++rounds;
    EXPECT_EQ(t.nanoseconds(), rounds * step_ns(1'250'000)) << ranks << " ranks";
  }
  EXPECT_EQ(3 * step_ns(1'250'000), 306'000);  // the P = 8 figure above
}

TEST(SimulatedTime, AlltoallTakesPMinusOneSteps) {
  // P = 5, S = 5 * 1.25 MB: in step s rank r sends to r + s and receives from r - s, one flow per NIC
  // link: 4 steps of 102'000 ns = 408'000 ns.
  const size_t count = 5 * 1'250'000 / 4;
  const Buffer send = Buffer::meta(DType::kF32, count);
  const Buffer recv = Buffer::meta(DType::kF32, count);
  const Time t = simulate(5, [&](Transport& tr) { alltoall(tr, send, recv, 1); });
  EXPECT_EQ(t.nanoseconds(), 4 * step_ns(1'250'000));
}

TEST(SimulatedTime, GroupedAlltoallSharesTheNicInsteadOfPayingALatencyPerPeer) {
  // Four hosts on one switch, 1 GB/s and 10 us per NIC link (the device links as above, free): a
  // message between hosts has L = 10 + 10 = 20 us. A 1 MB chunk per peer, c / B = 1 ms.
  //   pairwise: 3 steps, each one flow per NIC link: 3 (L + c / B) = 3 x 1.020 ms = 3.060 ms.
  //   grouped (NCCL's ncclSend / ncclRecv to every peer in one group): the 3 flows of every host
  //     start at once; each NIC uplink carries its host's 3 and each downlink the 3 arriving, so
  //     max-min gives every flow B / 3 and all end together: L + 3 c / B = 0.020 + 3 = 3.020 ms.
  //   grouped in waves of 2 peers: L + 2 c / B, then L + c / B: 2.020 + 1.020 = 3.040 ms.
  //   grouped in waves of 1 peer: the pairwise schedule again, 3.060 ms.
  netsim::ClusterSpec spec = star(4);
  spec.nic = {Bandwidth::gigabytes_per_second(1), Time::us(10)};
  const size_t count = 4 * 1'000'000 / 4;
  const Buffer send = Buffer::meta(DType::kF32, count);
  const Buffer recv = Buffer::meta(DType::kF32, count);
  auto time_of = [&](const std::function<void(Transport&)>& body) {
    netsim::Simulation simulation(spec);
    return simulation.run([&](RankContext& ctx) { body(ctx.transport()); }).nanoseconds();
  };
  EXPECT_EQ(time_of([&](Transport& t) { alltoall(t, send, recv, 1); }), 3'060'000);
  EXPECT_EQ(time_of([&](Transport& t) { alltoall(t, send, recv, 1, AlltoallAlgo::kNccl); }), 3'020'000);
  EXPECT_EQ(time_of([&](Transport& t) { grouped_alltoall(t, send, recv, 1); }), 3'020'000);
  EXPECT_EQ(time_of([&](Transport& t) { grouped_alltoall(t, send, recv, 1, 2); }), 3'040'000);
  EXPECT_EQ(time_of([&](Transport& t) { grouped_alltoall(t, send, recv, 1, 1); }), 3'060'000);
}

TEST(SimulatedTime, BinomialBroadcastTakesCeilLog2PSteps) {
  // P = 8, S = 2.5 MB: the root sends to 4, 2, 1 one after another; each step's senders and receivers
  // are disjoint: 3 steps of 2000 + 200'000 ns = 606'000 ns. P = 5: ceil(lg 5) = 3 steps as well.
  const Buffer data = Buffer::meta(DType::kF32, 2'500'000 / 4);
  for (int ranks : {8, 5}) {
    const Time t = simulate(ranks, [&](Transport& tr) { broadcast(tr, data, 0, 1); });
    EXPECT_EQ(t.nanoseconds(), 3 * step_ns(2'500'000)) << ranks << " ranks";
  }
}

TEST(SimulatedTime, ChainBroadcastPipelinesSegments) {
  // P = 4, S = 5 MB in k = 4 segments of 1.25 MB: segment j leaves rank i at step i + j + 1, so the
  // last arrives after P + k - 2 = 6 steps of 102'000 ns = 612'000 ns.
  const size_t count = 5'000'000 / 4;
  const Buffer data = Buffer::meta(DType::kF32, count);
  const Time t =
      simulate(4, [&](Transport& tr) { broadcast(tr, data, 0, 1, BroadcastAlgo::kChain, count / 4); });
  EXPECT_EQ(t.nanoseconds(), 6 * step_ns(1'250'000));
}

TEST(SimulatedTime, ChainReducePipelinesSegments) {
  // The chain broadcast's mirror. P = 4, root 0, S = 5 MB in k = 4 segments of 1.25 MB: rank 3 sends
  // segment j to rank 2 at step j + 1, rank 2 adds its own and passes it on to rank 1 one step later
  // (while receiving segment j + 1 from rank 3: 2 -> 1 and 3 -> 2 use different NIC links), and rank 1
  // to the root: the root has the last segment after P + k - 2 = 6 steps of 2000 + 100'000 ns =
  // 612'000 ns. P = 8, root 5, the same segments: 8 + 4 - 2 = 10 steps, 1'020'000 ns.
  const size_t count = 5'000'000 / 4;
  const Buffer data = Buffer::meta(DType::kF32, count);
  const Time four = simulate(
      4, [&](Transport& tr) { reduce(tr, data, 0, ReduceOp::kSum, 1, count / 4, ReduceAlgo::kChain); });
  EXPECT_EQ(four.nanoseconds(), 6 * step_ns(1'250'000));
  EXPECT_EQ(four.nanoseconds(), 612'000);
  const Time eight = simulate(
      8, [&](Transport& tr) { reduce(tr, data, 5, ReduceOp::kSum, 1, count / 4, ReduceAlgo::kChain); });
  EXPECT_EQ(eight.nanoseconds(), 1'020'000);
}

TEST(SimulatedTime, ChainReduceOfRealDataTakesTheSameTime) {
  // As above on materialized buffers, P = 4: the root holds 1 + 2 + 3 + 4 = 10 everywhere.
  const size_t count = 5'000'000 / 4;
  const Time t = simulate(4, [&](Transport& tr) {
    Buffer data = Buffer::host(DType::kF32, count);
    fill(data, tr.rank() + 1);
    reduce(tr, data, 0, ReduceOp::kSum, 1, count / 4, ReduceAlgo::kChain);
    if (tr.rank() == 0) {
      EXPECT_EQ(data.as<float>()[0], 10.0f);
      EXPECT_EQ(data.as<float>()[count - 1], 10.0f);
    }
  });
  EXPECT_EQ(t.nanoseconds(), 612'000);
}

// Two hosts of four devices. A device link (device <-> host fabric) has bandwidth 100 GB/s (100 bytes
// per ns) and latency 1 us; a NIC link 100 Gbit/s (12.5 bytes per ns) and 1 us. A message between two
// devices of one host crosses src.dev.up and dst.dev.down: route latency 2 us, rate 100 bytes/ns. A
// message between hosts crosses src.dev.up, src.nic.up, dst.nic.down, dst.dev.down: 4 us, 12.5
// bytes/ns.
netsim::ClusterSpec two_hosts_of_four() {
  netsim::ClusterSpec spec;
  spec.hosts = 2;
  spec.devices_per_host = 4;
  spec.intra_host = {Bandwidth::gigabytes_per_second(100), Time::us(1)};
  spec.nic = {Bandwidth::gbps(100), Time::us(1)};
  spec.device = {1e12, Bandwidth::gigabytes_per_second(100)};
  return spec;
}

Time simulate_two_hosts_of_four(const IntraHostOptions& options, const BufferView& data) {
  netsim::Simulation simulation(two_hosts_of_four());
  return simulation.run([&](RankContext& ctx) {
    HierarchicalGroups groups(ctx.transport(), options);
    hierarchical_allreduce(groups, data, ReduceOp::kSum, 1);
  });
}

TEST(SimulatedTime, HierarchicalAllreduceWithIntraHostChains) {
  // H = 2 hosts of Q = 4, S = 4 MB of f32, segments of 1 MB: S fills Q = 4 segments, so the automatic
  // choice takes chains (k = 4).
  //   chain reduce onto each leader: Q + k - 2 = 6 steps of 2000 + 1'000'000 / 100 = 12'000 ns
  //                                                                               =  72'000 ns
  //   ring allreduce of the 2 leaders: 2 (H - 1) = 2 steps of S / H = 2 MB, each
  //     4000 + 2'000'000 / 12.5 = 164'000 ns (the two directions use different links) = 328'000 ns
  //   chain broadcast from each leader: 6 steps of 12'000 ns                        =  72'000 ns
  // Every step's flows use distinct links (the chains' hops 3 -> 2 -> 1 -> 0 and 0 -> 1 -> 2 -> 3 each
  // use one device link per direction; the hosts run in lockstep), so the total is 472'000 ns.
  const Buffer data = Buffer::meta(DType::kF32, 1'000'000);
  const IntraHostOptions chains{IntraHostAlgo::kAuto, Bytes(1'000'000)};
  EXPECT_TRUE(plan_intra_host(chains, 4, data.count(), 4).chain);
  EXPECT_EQ(simulate_two_hosts_of_four(chains, data).nanoseconds(), 72'000 + 328'000 + 72'000);
  EXPECT_EQ(simulate_two_hosts_of_four({IntraHostAlgo::kChain, Bytes(1'000'000)}, data).nanoseconds(),
            472'000);
}

TEST(SimulatedTime, HierarchicalAllreduceWithIntraHostBinomialTrees) {
  // The same cluster and buffer with binomial trees (unsegmented) inside the hosts:
  //   binomial reduce: floor(lg 4) = 2 steps of the whole 4 MB, 2000 + 40'000 = 42'000 ns (first
  //     1 -> 0 and 3 -> 2 at once, then 2 -> 0)                                     =  84'000 ns
  //   ring allreduce of the leaders, as above                                       = 328'000 ns
  //   binomial broadcast: ceil(lg 4) = 2 steps of 42'000 ns (0 -> 2, then 0 -> 1 and 2 -> 3)
  //                                                                                 =  84'000 ns
  // 496'000 ns in all: the chains above save 24'000 ns. With 2 MB segments the buffer fills only 2
  // of them, fewer than Q = 4, and the automatic choice keeps the trees.
  const Buffer data = Buffer::meta(DType::kF32, 1'000'000);
  EXPECT_EQ(
      simulate_two_hosts_of_four({IntraHostAlgo::kBinomial, Bytes(1'000'000)}, data).nanoseconds(),
      84'000 + 328'000 + 84'000);
  EXPECT_EQ(simulate_two_hosts_of_four({IntraHostAlgo::kAuto, Bytes(2'000'000)}, data).nanoseconds(),
            496'000);
}

}  // namespace sim_time_test
}  // namespace
}  // namespace bagua::collectives
