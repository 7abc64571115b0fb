// The catalogue (core/collectives/cost.h, docs/algorithms.md) against what the collectives really send:
// every collective runs on meta buffers through a RecordingTransport, which counts each rank's bytes
// and the step of every message; the busiest rank's bytes and the latest step must equal the closed
// forms.
#include "core/collectives/cost.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/collectives/collectives.h"
#include "tests/core/collectives/expect.h"
#include "tests/core/collectives/wire_cost.h"

namespace bagua::collectives {
namespace {

// Apart from the same-named helpers of test_collectives's other files: the sanitizer presets
// compile several files of a program as one (CMAKE_UNITY_BUILD, CMakePresets.json).
namespace cost_test {

using testing::Backend;

TEST(Catalogue, WorkedExamples) {
  // Ring allreduce, P = 4, S = 4096 B: 2 (P - 1) = 6 steps of S / P = 1024 B.
  EXPECT_EQ(ring_allreduce_cost(4, Bytes(4096)), (WireCost{6, Bytes(6144)}));
  // Reduce-scatter and allgather, P = 4: 3 steps of 1024 B each.
  EXPECT_EQ(ring_reduce_scatter_cost(4, Bytes(4096)), (WireCost{3, Bytes(3072)}));
  EXPECT_EQ(ring_allgather_cost(4, Bytes(4096)), (WireCost{3, Bytes(3072)}));
  // Halving-doubling, P = 8, S = 8192 B: 2 log2 8 = 6 steps; 2 (4096 + 2048 + 1024) = 14336 B.
  EXPECT_EQ(halving_doubling_allreduce_cost(8, Bytes(8192)), (WireCost{6, Bytes(14336)}));
  // P = 6 folds 2 ranks into P' = 4: 2 * 2 + 2 = 6 steps; a partner sends 2 (3072 + 1536) + the whole
  // 6144 B back = 15360 B.
  EXPECT_EQ(halving_doubling_allreduce_cost(6, Bytes(6144)), (WireCost{6, Bytes(15360)}));
  // Recursive doubling, P = 8, S = 1000 B: lg 8 = 3 rounds of the whole buffer, 3000 B. P = 6 folds 2
  // ranks into P' = 4: 2 rounds + fold + unfold = 4 steps; a partner sends 2 rounds and the result
  // back, 3000 B. Any S (no chunks): 1001 B on 3 ranks, 1 round + 2 steps, a partner 2002 B.
  EXPECT_EQ(recursive_doubling_allreduce_cost(8, Bytes(1000)), (WireCost{3, Bytes(3000)}));
  EXPECT_EQ(recursive_doubling_allreduce_cost(6, Bytes(1000)), (WireCost{4, Bytes(3000)}));
  EXPECT_EQ(recursive_doubling_allreduce_cost(3, Bytes(1001)), (WireCost{3, Bytes(2002)}));
  EXPECT_EQ(recursive_doubling_allreduce_cost(1, Bytes(1000)), (WireCost{}));
  // Tree, P = 5, S = 1000 B: reduce floor(lg 5) = 2 levels, broadcast: the root sends to its
  // ceil(lg 5) = 3 children in turn, 3000 B.
  EXPECT_EQ(tree_allreduce_cost(5, Bytes(1000)), (WireCost{5, Bytes(3000)}));
  // Chain broadcast, P = 4, k = 3 segments: the last segment leaves rank 2 at step 2 + 3 = 5.
  EXPECT_EQ(broadcast_cost(BroadcastAlgo::kChain, 4, Bytes(3000), 3), (WireCost{5, Bytes(3000)}));
  // Alltoall, P = 4, S = 4096 B: 3 steps of 1024 B.
  EXPECT_EQ(alltoall_cost(4, Bytes(4096)), (WireCost{3, Bytes(3072)}));
  // Neighbour exchange, S = 1000 B: P = 5 sends 1000 B left (step 1), then right (step 2); P = 2
  // sends it once to the one other rank; P = 1 sends nothing.
  EXPECT_EQ(neighbour_exchange_cost(5, Bytes(1000)), (WireCost{2, Bytes(2000)}));
  EXPECT_EQ(neighbour_exchange_cost(2, Bytes(1000)), (WireCost{1, Bytes(1000)}));
  EXPECT_EQ(neighbour_exchange_cost(1, Bytes(1000)), (WireCost{}));
  // Hierarchical allreduce, 4 hosts of 2, S = 4096 B: reduce 1 + ring 6 + broadcast 1 = 8 steps; a
  // leader sends the ring's 6 * 1024 B and the whole buffer to its host peer: 10240 B.
  EXPECT_EQ(hierarchical_allreduce_cost(4, 2, Bytes(4096)), (WireCost{8, Bytes(10240)}));
  // Chain reduce, P = 4, k = 3 segments: the mirror of the chain broadcast, 5 steps, S per rank.
  EXPECT_EQ(reduce_cost(ReduceAlgo::kChain, 4, Bytes(3000), 3), (WireCost{5, Bytes(3000)}));
  EXPECT_EQ(reduce_cost(ReduceAlgo::kBinomial, 8, Bytes(3000), 2), reduce_cost(8, Bytes(3000), 2));
  // Hierarchical allreduce, 4 hosts of 8, S = 8 MiB: 16 segments of 512 KiB fill the 8 ranks of a host,
  // so the intra-host phases are chains: reduce 8 + 16 - 2 = 22, ring 6, broadcast 22 = 50 steps; a
  // leader sends 6 * 2 MiB in the ring and 8 MiB down its chain = 20 MiB (a rank inside the chain
  // sends 16 MiB).
  EXPECT_EQ(hierarchical_allreduce_cost(4, 8, Bytes(8 << 20)), (WireCost{50, Bytes(20 << 20)}));
  // 2 MiB is 4 segments, fewer than 8 ranks: binomial trees, 3 + 6 + 3 = 12 steps, the leader sending
  // 6 * 512 KiB and 3 * 2 MiB = 9 MiB.
  EXPECT_EQ(hierarchical_allreduce_cost(4, 8, Bytes(2 << 20)), (WireCost{12, Bytes(9 << 20)}));
  // Intra-host "nccl", 4 hosts of 8, S = 8 MiB on 2 channels of 512 KiB slices: n = 4 MiB / 512 KiB
  // = 8 slices per channel, each phase a pipelined chain of 8 + 8 x 2 - 2 = 22 steps (the chain's
  // count with k = n C = 16), ring 6: 50 steps, bytes as the chains'. Its channels must be named.
  const IntraHostOptions nccl{IntraHostAlgo::kNccl, Bytes(512 << 10), 2};
  EXPECT_EQ(hierarchical_allreduce_cost(4, 8, Bytes(8 << 20), nccl), (WireCost{50, Bytes(20 << 20)}));
  EXPECT_THROW(hierarchical_allreduce_cost(4, 8, Bytes(8 << 20), {IntraHostAlgo::kNccl}), ConfigError);
  // One rank or nothing to send: free.
  EXPECT_EQ(ring_allreduce_cost(1, Bytes(4096)), (WireCost{}));
  EXPECT_EQ(tree_allreduce_cost(8, Bytes(0)), (WireCost{}));
  EXPECT_THROW(ring_allreduce_cost(3, Bytes(1000)), ConfigError);  // S not divisible by P
  EXPECT_EQ(ceil_log2(5), 3);
  EXPECT_EQ(floor_log2(5), 2);
  EXPECT_EQ(ceil_log2(8), 3);
  EXPECT_EQ(floor_log2(8), 3);
  EXPECT_EQ(ceil_log2(1), 0);
}

struct World {
  Backend backend;
  int ranks;
};

class FlatCatalogue : public ::testing::TestWithParam<World> {};

TEST_P(FlatCatalogue, MeasuredStepsAndBytesMatchTheClosedForms) {
  const auto [backend, ranks] = GetParam();
  // 64 f32 per rank: S = 256 P bytes, divisible by P and by every power of two up to 64.
  const size_t count = 64 * static_cast<size_t>(ranks);
  const Bytes size(static_cast<int64_t>(count * 4));
  const int segments = 4;
  const size_t segment_elements = count / segments;
  auto check = [&](const std::string& what, const WireCost& expected,
                   const std::function<void(Transport&)>& body) {
    const WireCost measured = measure_wire_cost(backend, ranks, 1, body);
    EXPECT_EQ(measured, expected) << what << " on " << ranks << " ranks: measured " << show(measured)
                                  << ", catalogue " << show(expected);
  };
  const Buffer data = Buffer::meta(DType::kF32, count);
  for (AllreduceAlgo algo :
       {AllreduceAlgo::kRing, AllreduceAlgo::kTree, AllreduceAlgo::kHalvingDoubling,
        AllreduceAlgo::kRecursiveDoubling, AllreduceAlgo::kNative, AllreduceAlgo::kMpiTuned})
    check("allreduce " + to_string(algo), allreduce_cost(algo, ranks, size),
          [&](Transport& t) { allreduce(t, data, ReduceOp::kSum, 1, algo); });
  check("tree allreduce in segments", tree_allreduce_cost(ranks, size, segments),
        [&](Transport& t) { tree_allreduce(t, data, ReduceOp::kSum, 1, segment_elements); });
  check("reduce_scatter", ring_reduce_scatter_cost(ranks, size),
        [&](Transport& t) { reduce_scatter(t, data, ReduceOp::kSum, 1); });
  check("allgather", ring_allgather_cost(ranks, size), [&](Transport& t) { allgather(t, data, 1); });
  check("reduce", reduce_cost(ranks, size),
        [&](Transport& t) { reduce(t, data, ranks - 1, ReduceOp::kSum, 1); });
  check("reduce in segments", reduce_cost(ranks, size, segments),
        [&](Transport& t) { reduce(t, data, 0, ReduceOp::kSum, 1, segment_elements); });
  check("chain reduce", reduce_cost(ReduceAlgo::kChain, ranks, size),
        [&](Transport& t) { reduce(t, data, ranks / 2, ReduceOp::kSum, 1, 0, ReduceAlgo::kChain); });
  check("chain reduce in segments", reduce_cost(ReduceAlgo::kChain, ranks, size, segments),
        [&](Transport& t) {
          reduce(t, data, ranks - 1, ReduceOp::kSum, 1, segment_elements, ReduceAlgo::kChain);
        });
  for (BroadcastAlgo algo : {BroadcastAlgo::kBinomial, BroadcastAlgo::kChain}) {
    check("broadcast " + to_string(algo), broadcast_cost(algo, ranks, size),
          [&](Transport& t) { broadcast(t, data, ranks / 2, 1, algo); });
    check("broadcast in segments " + to_string(algo), broadcast_cost(algo, ranks, size, segments),
          [&](Transport& t) { broadcast(t, data, ranks - 1, 1, algo, segment_elements); });
  }
  check("alltoall", alltoall_cost(ranks, size), [&](Transport& t) {
    const Buffer recv = Buffer::meta(DType::kF32, count);
    alltoall(t, data, recv, 1);
  });
  // The grouped form sends the same messages, posted one after another without waiting in between:
  // the same steps by the catalogue's count, though only one latency per wave is paid (sim_time_test).
  check("grouped alltoall", alltoall_cost(ranks, size), [&](Transport& t) {
    const Buffer recv = Buffer::meta(DType::kF32, count);
    alltoall(t, data, recv, 1, AlltoallAlgo::kNccl);
  });
  check("neighbour_exchange", neighbour_exchange_cost(ranks, size), [&](Transport& t) {
    const Buffer from_left = Buffer::meta(DType::kF32, count);
    const Buffer from_right = Buffer::meta(DType::kF32, count);
    const int neighbours = neighbour_exchange(t, data, from_left, from_right, 1);
    EXPECT_EQ(neighbours, std::min(ranks - 1, 2)) << "distinct neighbours on " << ranks << " ranks";
  });
}

std::vector<World> flat_worlds() {
  std::vector<World> worlds;
  for (Backend b : testing::all_backends())
    for (int p : {1, 2, 3, 4, 5, 6, 7, 8, 16})
      worlds.push_back({b, p});
  return worlds;
}

INSTANTIATE_TEST_SUITE_P(Worlds, FlatCatalogue, ::testing::ValuesIn(flat_worlds()),
                         [](const ::testing::TestParamInfo<World>& info) {
                           return testing::to_string(info.param.backend) + "_P" +
                                  std::to_string(info.param.ranks);
                         });

struct Hosts {
  Backend backend;
  int hosts;
  int ranks_per_host;
};

class HierarchicalCatalogue : public ::testing::TestWithParam<Hosts> {};

TEST_P(HierarchicalCatalogue, MeasuredStepsAndBytesMatchTheClosedForms) {
  const auto [backend, hosts, ranks_per_host] = GetParam();
  const int ranks = hosts * ranks_per_host;
  const size_t count = 64 * static_cast<size_t>(ranks);
  const Bytes size(static_cast<int64_t>(count * 4));
  // The intra-host phases every way: the defaults (512 KiB segments: binomial trees at this size),
  // chains of 64 B (k = S / 64 = 4 P segments) and of 1000 B (250 f32; the last segment short unless
  // 1000 divides S), binomial trees, and the automatic choice with 64 B segments (chains on hosts of
  // 3 or more ranks, trees on smaller ones).
  const std::vector<std::pair<std::string, IntraHostOptions>> intra_host_options{
      {"defaults", {}},
      {"chain 64 B", {IntraHostAlgo::kChain, Bytes(64)}},
      {"chain 1000 B", {IntraHostAlgo::kChain, Bytes(1000)}},
      {"binomial", {IntraHostAlgo::kBinomial, Bytes(64)}},
      {"auto 64 B", {IntraHostAlgo::kAuto, Bytes(64)}},
      // NCCL's pipelined chains: 2 channels of 64 B slices (n = S / 128 per channel), and 1000 B
      // slices on one channel and on two (where the channels count: on 4 x 4, S = 4096 B is
      // n C = 5 x 1 slices on one channel, 3 x 2 on two).
      {"nccl 64 B x 2", {IntraHostAlgo::kNccl, Bytes(64), 2}},
      {"nccl 1000 B x 1", {IntraHostAlgo::kNccl, Bytes(1000), 1}},
      {"nccl 1000 B x 2", {IntraHostAlgo::kNccl, Bytes(1000), 2}},
  };
  for (const auto& [options_name, options] : intra_host_options) {
    auto check = [&](const std::string& what, const WireCost& expected,
                     const std::function<void(HierarchicalGroups&)>& body) {
      const WireCost measured = measure_wire_cost(backend, ranks, ranks_per_host, [&](Transport& t) {
        HierarchicalGroups groups(t, options);
        body(groups);
      });
      EXPECT_EQ(measured, expected)
          << what << " (intra-host " << options_name << ") on " << hosts << " hosts x "
          << ranks_per_host << ": measured " << show(measured) << ", catalogue " << show(expected);
    };
    const Buffer data = Buffer::meta(DType::kF32, count);
    check("hierarchical allreduce", hierarchical_allreduce_cost(hosts, ranks_per_host, size, options),
          [&](HierarchicalGroups& g) { hierarchical_allreduce(g, data, ReduceOp::kSum, 1); });
    check("hierarchical reduce_scatter",
          hierarchical_reduce_scatter_cost(hosts, ranks_per_host, size, options),
          [&](HierarchicalGroups& g) { hierarchical_reduce_scatter(g, data, ReduceOp::kSum, 1); });
    check("hierarchical allgather", hierarchical_allgather_cost(hosts, ranks_per_host, size, options),
          [&](HierarchicalGroups& g) { hierarchical_allgather(g, data, 1); });
    // Roots that lead a host: the first, and the leader of the last host.
    for (int root : {0, (hosts - 1) * ranks_per_host})
      check("hierarchical broadcast from " + std::to_string(root),
            hierarchical_broadcast_cost(hosts, ranks_per_host, size, options),
            [&](HierarchicalGroups& g) { hierarchical_broadcast(g, data, root, 1); });
  }
}

std::vector<Hosts> host_layouts() {
  std::vector<Hosts> layouts;
  for (Backend b : testing::all_backends())
    for (auto [h, q] : std::vector<std::pair<int, int>>{
             {1, 4}, {3, 1}, {2, 2}, {2, 3}, {4, 2}, {2, 4}, {4, 4}, {3, 5}})
      layouts.push_back({b, h, q});
  return layouts;
}

INSTANTIATE_TEST_SUITE_P(Layouts, HierarchicalCatalogue, ::testing::ValuesIn(host_layouts()),
                         [](const ::testing::TestParamInfo<Hosts>& info) {
                           return testing::to_string(info.param.backend) + "_" +
                                  std::to_string(info.param.hosts) + "x" +
                                  std::to_string(info.param.ranks_per_host);
                         });

}  // namespace cost_test
}  // namespace
}  // namespace bagua::collectives
