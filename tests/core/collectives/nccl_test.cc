// NCCL's algorithms (core/collectives/nccl.h) against closed-form results, swept over backend x rank
// count x element count x channels x dtype, and the trees and the tuning model against NCCL's own
// numbers (src/graph/trees.cc, src/graph/tuning.cc), worked out by hand in the comments.
#include "core/collectives/nccl.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/ops.h"
#include "tests/core/collectives/expect.h"
#include "tests/support/worlds.h"

namespace bagua::collectives {
namespace {

// Apart from the same-named helpers of test_collectives's other files: the sanitizer presets
// compile several files of a program as one (CMAKE_UNITY_BUILD, CMakePresets.json).
namespace nccl_test {

using testing::contribution;
using testing::describe;
using testing::expect_elements;
using testing::fill_contribution;
using testing::reduced;
using testing::World;

constexpr DType kDTypes[] = {DType::kF32, DType::kF64, DType::kI32};

// Pipelines worth testing for `count` elements: NCCL's defaults (one slice per chunk at these
// sizes), and small steps that cut every chunk into several slices (8-byte steps below 100 elements,
// 256-byte steps above: about 8 slices of each 1000-element chunk), with a window of one slice and of
// four, on 1, 2 and 3 channels.
std::vector<PipelineOptions> pipelines(size_t count) {
  std::vector<PipelineOptions> all;
  for (int channels : {1, 2, 3}) {
    PipelineOptions nccl;
    nccl.channels = channels;
    all.push_back(nccl);
    PipelineOptions tiny = nccl;
    tiny.step = Bytes(count < 100 ? 8 : 256);  // slices of 2 steps: 4 f32 / 2 f64, or 128 f32
    all.push_back(tiny);
    PipelineOptions one_in_flight = tiny;
    one_in_flight.slots = 2;  // slots / slice_steps = 1
    all.push_back(one_in_flight);
  }
  return all;
}
std::string name(const PipelineOptions& o) {
  return "channels " + std::to_string(o.channels) + " step " + std::to_string(o.step.count()) +
         " slots " + std::to_string(o.slots);
}

class Nccl : public ::testing::TestWithParam<World> {
 protected:
  void run(const std::function<void(RankContext&)>& body, int ranks_per_host = 1) {
    testing::run_ranks(GetParam().backend, GetParam().ranks, body, ranks_per_host);
  }
};

TEST_P(Nccl, PipelinedRingAllreduce) {
  run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    for (size_t count : testing::element_counts(t.size()))
      for (DType dtype : kDTypes)
        for (const PipelineOptions& o : pipelines(count))
          for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
            const Buffer data = Buffer::host(dtype, count);
            fill_contribution(data, t.rank(), t.size());
            pipelined_ring_allreduce(t, data, op, 1, o);
            expect_elements(
                data, 0, count, [&](size_t i) { return reduced(op, t.size(), i); }, t.rank(),
                describe("pipelined ring allreduce " + to_string(op), dtype, count, name(o)));
          }
  });
}

TEST_P(Nccl, PipelinedReduceScatterAndAllgather) {
  // ncclReduceScatter's and ncclAllGather's layout whatever the channel count: rank r's block is
  // chunk r of the buffer (chunk_range, as ring.cc cuts it), each block cut across the channels.
  run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    for (size_t count : testing::element_counts(t.size()))
      for (DType dtype : kDTypes)
        for (const PipelineOptions& o : pipelines(count)) {
          // Reduce-scatter: chunk r of the buffer is complete on rank r.
          const Buffer data = Buffer::host(dtype, count);
          fill_contribution(data, t.rank(), t.size());
          pipelined_reduce_scatter(t, data, ReduceOp::kSum, 2, o);
          const ChunkRange mine = chunk_range(count, t.size(), t.rank());
          expect_elements(
              data, mine.offset, mine.end(),
              [&](size_t i) { return reduced(ReduceOp::kSum, t.size(), i); }, t.rank(),
              describe("pipelined reduce_scatter", dtype, count, name(o)));
          // Allgather: rank r holds chunk r, -1 elsewhere; afterwards every rank's chunk.
          const Buffer gathered = Buffer::host(dtype, count);
          fill(gathered, -1);
          for (size_t i = mine.offset; i < mine.end(); ++i)
            testing::set_element(gathered, i, contribution(t.rank(), t.size(), i));
          pipelined_allgather(t, gathered, 3, o);
          for (int r = 0; r < t.size(); ++r) {
            const ChunkRange theirs = chunk_range(count, t.size(), r);
            expect_elements(
                gathered, theirs.offset, theirs.end(),
                [&](size_t i) { return contribution(r, t.size(), i); }, t.rank(),
                describe("pipelined allgather", dtype, count, name(o) + " chunk " + std::to_string(r)));
          }
        }
  });
}

TEST_P(Nccl, NcclAllgatherGathersTheRingsBytes) {
  // AllgatherAlgo::kNccl (ncclAllGather: the pipelined ring on the tuner's channels) leaves every
  // rank with the bytes the bulk-synchronous ring leaves, bit for bit, on every backend, rank count
  // and element count, for a float, a double and a byte buffer (C_LP_S gathers bytes). Sizes up to
  // 256 KiB, so that the tuner gives 2 channels (from 64 KiB: nccl_channels' 2 x 512 threads x 64)
  // where it gives 1 below.
  run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    std::vector<size_t> counts = testing::element_counts(t.size());
    counts.push_back(size_t{256} * 1024 / 4 + 3);
    for (size_t count : counts)
      for (DType dtype : {DType::kF32, DType::kF64, DType::kU8}) {
        const Buffer ring = Buffer::host(dtype, count);
        const Buffer nccl = Buffer::host(dtype, count);
        const ChunkRange mine = chunk_range(count, t.size(), t.rank());
        for (size_t i = 0; i < count; ++i) {
          const bool own = i >= mine.offset && i < mine.end();
          if (dtype == DType::kU8)
            ring.view().as<uint8_t>()[i] =
                static_cast<uint8_t>(own ? (i * 7 + 3 * t.rank()) % 251 : 255);
          else
            testing::set_element(ring, i, own ? contribution(t.rank(), t.size(), i) : -1.0);
        }
        copy(nccl, ring);
        allgather(t, ring, 4, AllgatherAlgo::kRing);
        allgather(t, nccl, 5, AllgatherAlgo::kNccl);
        const std::string what = describe("nccl allgather", dtype, count, "");
        ASSERT_EQ(std::memcmp(ring.view().data(), nccl.view().data(),
                              static_cast<size_t>(ring.view().bytes().count())),
                  0)
            << what << " on rank " << t.rank();
        // And the ring's bytes are every rank's chunk (the ring itself is checked in
        // collectives_test.cc; here that nothing was left at -1).
        if (dtype != DType::kU8 && count > 0) {
          const int last = t.size() - 1;
          const ChunkRange theirs = chunk_range(count, t.size(), last);
          expect_elements(
              nccl, theirs.offset, theirs.end(),
              [&](size_t i) { return contribution(last, t.size(), i); }, t.rank(), what);
        }
      }
  });
}

TEST_P(Nccl, PipelinedBroadcastAndReduceFromEveryKindOfRoot) {
  run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    for (size_t count : testing::element_counts(t.size()))
      for (int root : {0, t.size() / 2, t.size() - 1})
        for (PipelineOptions o : pipelines(count)) {
          o.slice_steps = 1;
          const Buffer data = Buffer::host(DType::kF32, count);
          if (t.rank() == root) {
            fill_contribution(data, root, t.size());
          } else {
            fill(data, -1);
          }
          pipelined_broadcast(t, data, root, 4, o);
          expect_elements(
              data, 0, count, [&](size_t i) { return contribution(root, t.size(), i); }, t.rank(),
              describe("pipelined broadcast", DType::kF32, count,
                       name(o) + " root " + std::to_string(root)));
          const Buffer sum = Buffer::host(DType::kI32, count);
          fill_contribution(sum, t.rank(), t.size());
          pipelined_reduce(t, sum, root, ReduceOp::kSum, 5, o);
          if (t.rank() == root)
            expect_elements(
                sum, 0, count, [&](size_t i) { return reduced(ReduceOp::kSum, t.size(), i); }, t.rank(),
                describe("pipelined reduce", DType::kI32, count,
                         name(o) + " root " + std::to_string(root)));
        }
  });
}

TEST_P(Nccl, DoubleTreeAllreduceWithChainsInsideHosts) {
  for (int ranks_per_host : {1, 2, 4}) {
    if (GetParam().ranks % ranks_per_host != 0) continue;
    run(
        [&](RankContext& ctx) {
          Transport& t = ctx.transport();
          for (size_t count : testing::element_counts(t.size()))
            for (DType dtype : kDTypes)
              for (PipelineOptions o : pipelines(count)) {
                o.slice_steps = 1;
                const Buffer data = Buffer::host(dtype, count);
                fill_contribution(data, t.rank(), t.size());
                double_tree_allreduce(t, data, ReduceOp::kSum, 6, o);
                expect_elements(
                    data, 0, count, [&](size_t i) { return reduced(ReduceOp::kSum, t.size(), i); },
                    t.rank(),
                    describe("double tree allreduce", dtype, count,
                             name(o) + " ranks per host " + std::to_string(ranks_per_host)));
              }
        },
        ranks_per_host);
  }
}

TEST_P(Nccl, AllreduceNamedNcclAndMetaBuffers) {
  run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1} << 18})
      for (DType dtype : kDTypes) {
        const Buffer data = Buffer::host(dtype, count);
        fill_contribution(data, t.rank(), t.size());
        allreduce(t, data, ReduceOp::kSum, 7, AllreduceAlgo::kNccl);
        expect_elements(
            data, 0, count, [&](size_t i) { return reduced(ReduceOp::kSum, t.size(), i); }, t.rank(),
            describe("allreduce nccl", dtype, count, ""));
      }
    // Meta buffers move no data and still run every form to the end.
    const Buffer meta = Buffer::meta(DType::kF32, 100003);
    pipelined_ring_allreduce(t, meta, ReduceOp::kSum, 8);
    double_tree_allreduce(t, meta, ReduceOp::kSum, 8);
    pipelined_broadcast(t, meta, 0, 8);
    pipelined_reduce(t, meta, 0, ReduceOp::kSum, 8);
  });
}

INSTANTIATE_TEST_SUITE_P(Worlds, Nccl, ::testing::ValuesIn(testing::all_worlds()), testing::world_name);

TEST(NcclPipeline, OptionsAreValidated) {
  PipelineOptions o;
  EXPECT_EQ(o.slices_in_flight(), 4);                     // NCCL_STEPS 8 / ALLREDUCE_SLICESTEPS 2
  EXPECT_EQ(o.slice_elements(4), size_t{1} << 18);        // 2 x 512 KiB of f32
  EXPECT_EQ(broadcast_pipeline().slices_in_flight(), 8);  // BROADCAST_SLICESTEPS 1
  o.channels = 0;
  EXPECT_THROW(validate(o), ConfigError);
  o = {};
  o.slice_steps = 9;
  try {
    validate(o);
    ADD_FAILURE() << "slice_steps 9 > slots 8 accepted";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "pipeline.slice_steps must be in [1, slots = 8], got 9");
  }
}

// ---- Trees ---------------------------------------------------------------------------------------

TEST(NcclTrees, BtreeIsNcclsTree) {
  // ncclGetBtree on 4 nodes: 0 -> 2 -> {1, 3}. On 5: 0 -> 4 -> 2 -> {1, 3}
  //   (node 4: bit 4, parent 0 | 8 = 8 >= 5 so 4 ^ 4 = 0; children 4 - 2 = 2, and 4 + 2, 4 + 1 are
  //   out).
  EXPECT_EQ(btree_links(4, 0).child1, 2);
  EXPECT_EQ(btree_links(4, 2).parent, 0);
  EXPECT_EQ(btree_links(4, 2).child0, 1);
  EXPECT_EQ(btree_links(4, 2).child1, 3);
  EXPECT_EQ(btree_links(4, 3).parent, 2);
  EXPECT_EQ(btree_links(5, 0).child1, 4);
  EXPECT_EQ(btree_links(5, 4).parent, 0);
  EXPECT_EQ(btree_links(5, 4).child0, 2);
  EXPECT_EQ(btree_links(5, 4).child1, -1);
  // The mirror on 4 nodes: node i plays node 3 - i, so 3 -> 1 -> {2, 0}.
  EXPECT_EQ(dtree_links(4, 3, 1).child1, 1);
  EXPECT_EQ(dtree_links(4, 1, 1).parent, 3);
  EXPECT_EQ(dtree_links(4, 1, 1).child0, 2);
  // The shift on 5 nodes: node i plays node i - 1, so 1 -> 0 -> 3 -> {2, 4}.
  EXPECT_EQ(dtree_links(5, 1, 1).child1, 0);
  EXPECT_EQ(dtree_links(5, 0, 1).child0, 3);
}

TEST(NcclTrees, BothTreesSpanEveryNodeAndLinksAgree) {
  for (int nodes = 1; nodes <= 40; ++nodes)
    for (int tree : {0, 1}) {
      int roots = 0;
      for (int i = 0; i < nodes; ++i) {
        const NodeLinks l = dtree_links(nodes, i, tree);
        if (l.parent < 0) {
          ++roots;
          continue;
        }
        const NodeLinks p = dtree_links(nodes, l.parent, tree);
        EXPECT_TRUE(p.child0 == i || p.child1 == i)
            << nodes << " nodes, tree " << tree << ", node " << i;
        // Following parents reaches the root within `nodes` hops (no cycle).
        int up = i;
        int hops = 0;
        while (up >= 0 && hops <= nodes) {
          up = dtree_links(nodes, up, tree).parent;
          ++hops;
        }
        EXPECT_LE(hops, nodes);
      }
      EXPECT_EQ(roots, 1) << nodes << " nodes, tree " << tree;
    }
}

TEST(NcclTrees, ChainsInsideHosts) {
  // Two hosts of three ranks: tree 0 over the hosts is 0 -> 1; inside each host the chain 0, 1, 2.
  HostLayout layout;
  layout.hosts = {{0, 1, 2}, {3, 4, 5}};
  EXPECT_EQ(double_tree_place(layout, 0, 0), (TreePlace{-1, {3, 1}}));
  EXPECT_EQ(double_tree_place(layout, 3, 0), (TreePlace{0, {4}}));
  EXPECT_EQ(double_tree_place(layout, 5, 0), (TreePlace{4, {}}));
  // Tree 1 mirrors the hosts (host 1 is the root) and runs each chain the other way (heads 5 and 2).
  EXPECT_EQ(double_tree_place(layout, 5, 1), (TreePlace{-1, {2, 4}}));
  EXPECT_EQ(double_tree_place(layout, 2, 1), (TreePlace{5, {1}}));
  EXPECT_EQ(double_tree_place(layout, 0, 1), (TreePlace{1, {}}));
}

// ---- The tuning model ----------------------------------------------------------------------------

// The paper's testbed shape: 16 hosts x 8 V100 on NVLink (SM 7.0), 100 Gbit/s NICs, no reported
// network latency, 2 channels.
NcclTopology paper_cluster() {
  NcclTopology topo;
  topo.nodes = 16;
  topo.ranks = 128;
  topo.intra_bandwidth = Bandwidth::gigabytes_per_second(150);
  topo.inter_bandwidth = Bandwidth::gbps(100);  // 12.5 GB/s
  return topo;
}

TEST(NcclTuning, LatenciesAndBandwidthsAreTuningCcs) {
  const NcclTopology topo = paper_cluster();
  // Ring: 8.4 + (254 - 30) x max(3.4, 1.0 x 3) + 30 x 14 = 8.4 + 761.6 + 420 = 1190 us; 1 MiB /
  // (2 x 128) = 4096 B >= 64, so x 1.9 (SM 7.0): 2261 us. Below 64 B a channel-rank, no plateau.
  EXPECT_NEAR(nccl_latency_us(topo, NcclAlgo::kRing, Bytes(1 << 20)), 1190.0 * 1.9, 1e-6);
  EXPECT_NEAR(nccl_latency_us(topo, NcclAlgo::kRing, Bytes(1024)), 1190.0, 1e-6);
  // Tree: 8.4 + 2 ((8 - 1) x 4.0 + log2i(16) x 14) = 8.4 + 2 (28 + 56) = 176.4 us.
  EXPECT_NEAR(nccl_latency_us(topo, NcclAlgo::kTree, Bytes(1 << 20)), 176.4, 1e-6);
  // Ring bandwidth: bus 12.5 GB/s (the NIC) x 128 / 254 = 6.2992 GB/s.
  EXPECT_NEAR(nccl_bandwidth_gbs(topo, NcclAlgo::kRing, Bytes(1 << 20)), 12.5 * 128 / 254, 1e-9);
  // Tree: min(12.5 x .92, 2 x 10.0 (Volta, N4)) x .5 = 5.75 GB/s, then x treeCorrectionFactor
  // [Simple][log2i(1 MiB / 64) = 14] = .5: 2.875 GB/s; at 1 GiB (log size 24, no factor) 5.75.
  EXPECT_NEAR(nccl_bandwidth_gbs(topo, NcclAlgo::kTree, Bytes(1 << 20)), 2.875, 1e-9);
  EXPECT_NEAR(nccl_bandwidth_gbs(topo, NcclAlgo::kTree, Bytes(int64_t{1} << 30)), 5.75, 1e-9);
}

TEST(NcclTuning, TreeForSmallSizesAtManyNodesRingForLarge) {
  // The Simple protocol's terms (NCCL_PROTO=Simple); the protocols' choice: NcclProtocol tests.
  const NcclTopology topo = paper_cluster();
  // 1 MiB: tree 176.4 + 1048576 / (1000 x 2.875) = 541.1 us; ring 2261 + 166.5 = 2427.5 us: tree.
  const NcclChoice small = nccl_choose(topo, Bytes(1 << 20), NcclProtocolOption::kSimple);
  EXPECT_EQ(small.algo, NcclAlgo::kTree);
  EXPECT_NEAR(small.time_us, 176.4 + 1048576.0 / 2875.0, 1e-6);
  // 1 GiB: tree 176.4 + 2^30 / 5750 = 186913 us; ring 2261 + 2^30 / 6299.2 = 172720 us: ring.
  const NcclChoice large = nccl_choose(topo, Bytes(int64_t{1} << 30), NcclProtocolOption::kSimple);
  EXPECT_EQ(large.algo, NcclAlgo::kRing);
  EXPECT_EQ(large.channels, 2);
  // One node of 8: ring 8.4 + 14 x 3.4 = 56 us beats tree 8.4 + 2 x 7 x 4.0 = 64.4 us at 1 KiB.
  NcclTopology one = topo;
  one.nodes = 1;
  one.ranks = 8;
  EXPECT_EQ(nccl_choose(one, Bytes(1024), NcclProtocolOption::kSimple).algo, NcclAlgo::kRing);
}

TEST(NcclTuning, ChannelsShrinkForSmallBuffers) {
  NcclTopology topo = paper_cluster();
  topo.max_channels = 4;
  // nt = 512 (150 GB/s > PCI_BW), threshold 64: 4 channels need 4 x 512 x 64 = 128 KiB.
  EXPECT_EQ(nccl_channels(topo, NcclAlgo::kRing, Bytes(128 << 10)), 4);
  EXPECT_EQ(nccl_channels(topo, NcclAlgo::kRing, Bytes((128 << 10) - 1)), 3);
  EXPECT_EQ(nccl_channels(topo, NcclAlgo::kRing, Bytes(64 << 10)), 2);
  EXPECT_EQ(nccl_channels(topo, NcclAlgo::kRing, Bytes(100)), 1);
  // On PCI (12 GB/s) a ring runs 256 threads: 2 channels from 2 x 256 x 64 = 32 KiB.
  topo.intra_bandwidth = Bandwidth::gigabytes_per_second(12);
  EXPECT_EQ(nccl_channels(topo, NcclAlgo::kRing, Bytes(32 << 10)), 2);
  EXPECT_EQ(nccl_channels(topo, NcclAlgo::kTree, Bytes(32 << 10)), 1);
}

TEST(NcclTuning, TheNetworksLatencyEntersTwice) {
  NcclTopology topo = paper_cluster();
  topo.inter_latency = Time::ms(1);
  // Tree: 8.4 + 2 (28 + 4 x (14 + 2 x 1000)) = 16176.4 us.
  EXPECT_NEAR(nccl_latency_us(topo, NcclAlgo::kTree, Bytes(1024)), 16176.4, 1e-6);
  const std::string text = describe(topo, Bytes(1024));
  EXPECT_NE(text.find("choice: tree"), std::string::npos) << text;
}

// ---- Protocols --------------------------------------------------------------------------------

TEST(NcclProtocols, StepsAndWireBytesAreNcclsBuffers) {
  // LL: DEFAULT_LL_BUFFSIZE = 8 lines x 512 threads x 8 steps x 16 B = 524'288 B; a step is 65'536 B
  // of lines carrying 32'768 B. LL128: 120 x 640 x 8 x 8 B = 4'915'200 B; a step is 614'400 B of lines
  // carrying 614'400 / 16 x 15 = 576'000 B.
  EXPECT_EQ(kLLStepSize, Bytes(32'768));
  EXPECT_EQ(kLL128StepSize, Bytes(576'000));
  // LL: 16 wire bytes per 8 data bytes, whole lines: 1 B -> 16, 8 -> 16, 9 -> 32, 32 KiB -> 64 KiB.
  EXPECT_EQ(wire_bytes(NcclProtocol::kLL, Bytes(0)), Bytes(0));
  EXPECT_EQ(wire_bytes(NcclProtocol::kLL, Bytes(1)), Bytes(16));
  EXPECT_EQ(wire_bytes(NcclProtocol::kLL, Bytes(8)), Bytes(16));
  EXPECT_EQ(wire_bytes(NcclProtocol::kLL, Bytes(9)), Bytes(32));
  EXPECT_EQ(wire_bytes(NcclProtocol::kLL, kLLStepSize), Bytes(65'536));
  // LL128: 2048 wire bytes per 1920 data bytes, whole warps: 1 B -> 2048, 1920 -> 2048, 1921 -> 4096;
  // a step's 576'000 B = 300 warps -> 614'400 B, the step's lines exactly.
  EXPECT_EQ(wire_bytes(NcclProtocol::kLL128, Bytes(1)), Bytes(2048));
  EXPECT_EQ(wire_bytes(NcclProtocol::kLL128, Bytes(1920)), Bytes(2048));
  EXPECT_EQ(wire_bytes(NcclProtocol::kLL128, Bytes(1921)), Bytes(4096));
  EXPECT_EQ(wire_bytes(NcclProtocol::kLL128, kLL128StepSize), Bytes(614'400));
  EXPECT_EQ(wire_bytes(NcclProtocol::kSimple, Bytes(12'345)), Bytes(12'345));
  EXPECT_EQ(to_string(NcclProtocol::kLL128), "ll128");
  EXPECT_EQ(parse_nccl_protocol_option("auto"), NcclProtocolOption::kAuto);
  EXPECT_EQ(parse_nccl_protocol_option("ll"), NcclProtocolOption::kLL);
  EXPECT_THROW(parse_nccl_protocol_option("LL"), ConfigError);
}

// Every collective of nccl.h under LL and LL128, materialized and meta, checked as the Simple sweep
// above checks them: NCCL's protocol steps (one slice per chunk here) on 1 and 3 channels, and tiny
// ones (several slices per chunk) with 8 in flight on 2 channels and one in flight on 1.
std::vector<PipelineOptions> protocol_pipelines(size_t count) {
  std::vector<PipelineOptions> all;
  for (NcclProtocol protocol : {NcclProtocol::kLL, NcclProtocol::kLL128}) {
    PipelineOptions nccl;
    nccl.protocol = protocol;
    nccl.slice_steps = 1;
    nccl.step = protocol == NcclProtocol::kLL ? kLLStepSize : kLL128StepSize;
    all.push_back(nccl);
    nccl.channels = 3;
    all.push_back(nccl);
    PipelineOptions tiny = nccl;
    tiny.channels = 2;
    tiny.step = Bytes(count < 100 ? 8 : 512);
    all.push_back(tiny);
    tiny.channels = 1;
    tiny.slots = 1;
    all.push_back(tiny);
  }
  return all;
}
std::string protocol_name(const PipelineOptions& o) {
  return to_string(o.protocol) + " " + name(o);
}

TEST_P(Nccl, EveryCollectiveUnderLLAndLL128) {
  for (int ranks_per_host : {1, 2}) {
    if (GetParam().ranks % ranks_per_host != 0) continue;
    run(
        [&](RankContext& ctx) {
          Transport& t = ctx.transport();
          for (size_t count : testing::element_counts(t.size()))
            for (DType dtype : kDTypes)
              for (const PipelineOptions& o : protocol_pipelines(count)) {
                const std::string what = protocol_name(o);
                Buffer data = Buffer::host(dtype, count);
                fill_contribution(data, t.rank(), t.size());
                pipelined_ring_allreduce(t, data, ReduceOp::kSum, 1, o);
                expect_elements(
                    data, 0, count, [&](size_t i) { return reduced(ReduceOp::kSum, t.size(), i); },
                    t.rank(), describe("pipelined ring allreduce", dtype, count, what));
                fill_contribution(data, t.rank(), t.size());
                double_tree_allreduce(t, data, ReduceOp::kMax, 2, o);
                expect_elements(
                    data, 0, count, [&](size_t i) { return reduced(ReduceOp::kMax, t.size(), i); },
                    t.rank(), describe("double tree allreduce", dtype, count, what));
                fill_contribution(data, t.rank(), t.size());
                pipelined_reduce_scatter(t, data, ReduceOp::kSum, 3, o);
                const ChunkRange mine = chunk_range(count, t.size(), t.rank());
                expect_elements(
                    data, mine.offset, mine.end(),
                    [&](size_t i) { return reduced(ReduceOp::kSum, t.size(), i); }, t.rank(),
                    describe("pipelined reduce_scatter", dtype, count, what));
                pipelined_allgather(t, data, 4, o);
                expect_elements(
                    data, 0, count, [&](size_t i) { return reduced(ReduceOp::kSum, t.size(), i); },
                    t.rank(), describe("pipelined allgather", dtype, count, what));
                const int root = t.size() / 2;
                fill_contribution(data, t.rank(), t.size());
                pipelined_reduce(t, data, root, ReduceOp::kSum, 5, o);
                if (t.rank() != root) fill(data, -1);
                pipelined_broadcast(t, data, root, 6, o);
                expect_elements(
                    data, 0, count, [&](size_t i) { return reduced(ReduceOp::kSum, t.size(), i); },
                    t.rank(), describe("pipelined reduce, broadcast", dtype, count, what));
              }
          // Meta buffers move no data and still run every form to the end.
          const Buffer meta = Buffer::meta(DType::kF32, 100003);
          for (const PipelineOptions& o : protocol_pipelines(100003)) {
            pipelined_ring_allreduce(t, meta, ReduceOp::kSum, 7, o);
            double_tree_allreduce(t, meta, ReduceOp::kSum, 7, o);
          }
        },
        ranks_per_host);
  }
}

TEST_P(Nccl, AllreduceNcclUnderEveryProtocolOption) {
  // "allreduce": "nccl" with "protocol" auto, simple, ll, ll128: the same sums, whichever pair the
  // model picks.
  run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1} << 16})
      for (NcclProtocolOption option : {NcclProtocolOption::kAuto, NcclProtocolOption::kSimple,
                                        NcclProtocolOption::kLL, NcclProtocolOption::kLL128}) {
        const Buffer data = Buffer::host(DType::kF64, count);
        fill_contribution(data, t.rank(), t.size());
        allreduce(t, data, ReduceOp::kSum, 8, AllreduceAlgo::kNccl, option);
        expect_elements(
            data, 0, count, [&](size_t i) { return reduced(ReduceOp::kSum, t.size(), i); }, t.rank(),
            describe("allreduce nccl", DType::kF64, count, "protocol " + to_string(option)));
      }
  });
}

TEST(NcclProtocols, LinesCarryTheDataAndTheirFlags) {
  // Two ranks, one LL and one LL128 message each way of 1..40 bytes: what arrives is what was sent
  // (the lines' data), and a second message on the same pair carries flag 2: matched in order.
  for (NcclProtocol protocol : {NcclProtocol::kLL, NcclProtocol::kLL128})
    testing::run_ranks(testing::Backend::kThreads, 2, [&](RankContext& ctx) {
      Transport& t = ctx.transport();
      std::unique_ptr<Transport> lines;
      PipelineOptions options;
      options.protocol = protocol;
      Transport& wire = protocol_transport(t, options, lines);
      EXPECT_NE(&wire, &t);
      for (size_t n = 1; n <= 40; ++n) {
        const Buffer out = Buffer::host(DType::kU8, n);
        const Buffer in = Buffer::host(DType::kU8, n);
        for (size_t i = 0; i < n; ++i)
          out.as<uint8_t>()[i] = static_cast<uint8_t>(17 * i + 3 * t.rank() + n);
        wire.sendrecv(out, 1 - t.rank(), in, 1 - t.rank(), 9);
        for (size_t i = 0; i < n; ++i)
          ASSERT_EQ(in.as<uint8_t>()[i], static_cast<uint8_t>(17 * i + 3 * (1 - t.rank()) + n))
              << to_string(protocol) << " message of " << n << " B, byte " << i;
      }
    });
  std::unique_ptr<Transport> none;
  testing::run_ranks(testing::Backend::kThreads, 1, [&](RankContext& ctx) {
    // Simple, and a step latency on a transport that cannot delay a send (the threads runtime's).
    PipelineOptions options;
    EXPECT_EQ(&protocol_transport(ctx.transport(), options, none), &ctx.transport());
    options.step_latency = {Time::us(1), Time::us(2)};
    EXPECT_EQ(&protocol_transport(ctx.transport(), options, none), &ctx.transport());
  });
}

// ---- The tuning model under LL and LL128 ----------------------------------------------------------

// 2 nodes x 8 V100 (SM 7.0) on NVLink 150 GB/s, 100 Gbit/s NICs (12.5 GB/s), no reported network
// latency, 2 channels. The terms every case below uses (NCCL v2.30.7-1, src/graph/tuning.cc):
//   nRanks 16, nNodes 2, ppn 8, nsteps 2 (16 - 1) = 30, nInterSteps 2 (2 - 1) = 2; the bus bandwidth
//   min(150, 12.5) = 12.5 GB/s; index2 = N2; llMaxBw = llMaxBws[Intel][N2] = 39.0.
// Ring latency = baseLatencies[Ring][p] + (30 - 2) max(hwLat[NVLINK][Ring][p], netOverhead) +
// 2 hwLat[NET][Ring][p] (netOverhead 1 us, x 3 for Simple):
//   LL      6.6 + 28 x max(0.6, 1.0) + 2 x 2.7   =  6.6 + 28.0 + 5.4  =  40.0 us
//   LL128  14.0 + 28 x max(1.9, 1.0) + 2 x 4.0   = 14.0 + 53.2 + 8.0  =  75.2 us
//   Simple  8.4 + 28 x max(3.4, 3.0) + 2 x 14.0  =  8.4 + 95.2 + 28.0 = 131.6 us, x 1.9 (the Volta
//           plateau, bytes / (2 x 16) >= 64, i.e. from 2 KiB) = 250.04 us
// Ring bandwidth = busBw x 16 / 30:
//   LL      min(39.0, 12.5 x .5) = 6.25     -> 3.3333 GB/s
//   LL128   min(12.5 x .92, 2 x 20.0) = 11.5 -> 6.1333 GB/s
//   Simple  12.5                            -> 6.6667 GB/s
// Tree latency = baseLatencies[Tree][p] + 2 ((8 - 1) hwLat[NVLINK][Tree][p] + log2(2) hwLat[NET][Tree][p]):
//   LL      6.8 + 2 (7 x 0.6 + 5.0)   =  6.8 + 18.4 = 25.2 us
//   LL128  14.0 + 2 (7 x 1.25 + 8.5)  = 14.0 + 34.5 = 48.5 us
//   Simple  8.4 + 2 (7 x 4.0 + 14.0)  =  8.4 + 84.0 = 92.4 us
// Tree bandwidth: busBw = min(12.5 x .92, 2 x perChMaxTreeBws[Volta][N2] 18.5) = 11.5, then
//   LL      min(11.5 / 3.8, 39.0) = 3.0263,  x .5 = 1.5132 GB/s
//   LL128   min(11.5 x 120/128, 2 x 20.0) = 10.78125, x .5 = 5.3906 GB/s
//   Simple  11.5 x .5 = 5.75 GB/s
// each times treeCorrectionFactor[p][log2(bytes / 64)].
NcclTopology two_nodes() {
  NcclTopology topo;
  topo.nodes = 2;
  topo.ranks = 16;
  topo.intra_bandwidth = Bandwidth::gigabytes_per_second(150);
  topo.inter_bandwidth = Bandwidth::gbps(100);
  return topo;
}

TEST(NcclTuning, ProtocolTermsOnTwoNodes) {
  const NcclTopology topo = two_nodes();
  const Bytes small(4096);
  EXPECT_NEAR(nccl_latency_us(topo, NcclAlgo::kRing, small, NcclProtocol::kLL), 40.0, 1e-9);
  EXPECT_NEAR(nccl_latency_us(topo, NcclAlgo::kRing, small, NcclProtocol::kLL128), 75.2, 1e-9);
  EXPECT_NEAR(nccl_latency_us(topo, NcclAlgo::kRing, small, NcclProtocol::kSimple), 131.6 * 1.9, 1e-9);
  EXPECT_NEAR(nccl_latency_us(topo, NcclAlgo::kTree, small, NcclProtocol::kLL), 25.2, 1e-9);
  EXPECT_NEAR(nccl_latency_us(topo, NcclAlgo::kTree, small, NcclProtocol::kLL128), 48.5, 1e-9);
  EXPECT_NEAR(nccl_latency_us(topo, NcclAlgo::kTree, small, NcclProtocol::kSimple), 92.4, 1e-9);
  const Bytes big(int64_t{1} << 30);  // no tree correction beyond 256 MiB
  EXPECT_NEAR(nccl_bandwidth_gbs(topo, NcclAlgo::kRing, big, NcclProtocol::kLL), 6.25 * 16 / 30, 1e-9);
  EXPECT_NEAR(nccl_bandwidth_gbs(topo, NcclAlgo::kRing, big, NcclProtocol::kLL128), 11.5 * 16 / 30,
              1e-9);
  EXPECT_NEAR(nccl_bandwidth_gbs(topo, NcclAlgo::kRing, big, NcclProtocol::kSimple), 12.5 * 16 / 30,
              1e-9);
  EXPECT_NEAR(nccl_bandwidth_gbs(topo, NcclAlgo::kTree, big, NcclProtocol::kLL), 11.5 / 3.8 * .5, 1e-9);
  EXPECT_NEAR(nccl_bandwidth_gbs(topo, NcclAlgo::kTree, big, NcclProtocol::kLL128),
              11.5 * 120 / 128 * .5, 1e-9);
  EXPECT_NEAR(nccl_bandwidth_gbs(topo, NcclAlgo::kTree, big, NcclProtocol::kSimple), 5.75, 1e-9);
}

TEST(NcclTuning, LLForFourKiBSimpleRingForSixtyFourMiB) {
  const NcclTopology topo = two_nodes();
  // 4 KiB: log2(4096 / 64) = 6, treeCorrectionFactor LL .7, LL128 .8, Simple .9. time = latency +
  // 4096 / (1000 x bandwidth):
  //   ring LL      40.0   + 4096 / 3333.3         = 41.23 us
  //   ring LL128   75.2   + 4096 / 6133.3         = 75.87 us
  //   ring Simple 250.04  + 4096 / 6666.7         = 250.65 us
  //   tree LL      25.2   + 4096 / (1513.2 x .7)  = 25.2 + 3.867 = 29.07 us   <- least
  //   tree LL128   48.5   + 4096 / (5390.6 x .8)  = 49.45 us
  //   tree Simple  92.4   + 4096 / (5750 x .9)    = 93.19 us
  // NCCL runs the tree under LL, on 1 channel (LL tree: 4096 < 2 x 512 threads x 8).
  const NcclChoice small = nccl_choose(topo, Bytes(4096), NcclProtocolOption::kAuto);
  EXPECT_EQ(small.algo, NcclAlgo::kTree);
  EXPECT_EQ(small.protocol, NcclProtocol::kLL);
  EXPECT_EQ(small.channels, 1);
  EXPECT_NEAR(small.time_us, 25.2 + 4096 / (1000 * 11.5 / 3.8 * .5 * .7), 1e-6);
  EXPECT_NEAR(small.time_us, 29.067, 1e-3);
  EXPECT_NEAR(nccl_time_us(topo, NcclAlgo::kRing, Bytes(4096), NcclProtocol::kLL), 41.229, 1e-3);
  EXPECT_NEAR(nccl_time_us(topo, NcclAlgo::kTree, Bytes(4096), NcclProtocol::kLL128), 49.450, 1e-3);
  EXPECT_NEAR(nccl_time_us(topo, NcclAlgo::kTree, Bytes(4096), NcclProtocol::kSimple), 93.191, 1e-3);
  // Simple alone (NCCL_PROTO=Simple, the project's results so far): the tree, 93.19 us.
  const NcclChoice simple = nccl_choose(topo, Bytes(4096), NcclProtocolOption::kSimple);
  EXPECT_EQ(simple.algo, NcclAlgo::kTree);
  EXPECT_EQ(simple.protocol, NcclProtocol::kSimple);
  EXPECT_NEAR(simple.time_us, 93.191, 1e-3);
  // 64 MiB: log2(2^26 / 64) = 20, treeCorrectionFactor LL 1.0, LL128 .9, Simple .8:
  //   ring LL      40.0   + 67108864 / 3333.3          = 20172.7 us
  //   ring LL128   75.2   + 67108864 / 6133.3          = 11016.9 us
  //   ring Simple 250.04  + 67108864 / 6666.7          = 10316.4 us   <- least
  //   tree LL      25.2   + 67108864 / 1513.2          = 44375.2 us
  //   tree LL128   48.5   + 67108864 / (5390.6 x .9)   = 13880.9 us
  //   tree Simple  92.4   + 67108864 / (5750 x .8)     = 14681.3 us
  const NcclChoice large = nccl_choose(topo, Bytes(int64_t{64} << 20), NcclProtocolOption::kAuto);
  EXPECT_EQ(large.algo, NcclAlgo::kRing);
  EXPECT_EQ(large.protocol, NcclProtocol::kSimple);
  EXPECT_EQ(large.channels, 2);
  EXPECT_NEAR(large.time_us, 250.04 + 67108864.0 / (12500.0 * 16 / 30), 1e-6);
  EXPECT_NEAR(large.time_us, 10316.4, 0.1);
  EXPECT_NEAR(nccl_time_us(topo, NcclAlgo::kRing, Bytes(int64_t{64} << 20), NcclProtocol::kLL128),
              11016.9, 0.1);
  EXPECT_NEAR(nccl_time_us(topo, NcclAlgo::kTree, Bytes(int64_t{64} << 20), NcclProtocol::kLL128),
              13880.9, 0.1);
  // Forcing LL128 (NCCL_PROTO=LL128) at 64 MiB: the ring, 11016.9 us.
  const NcclChoice ll128 = nccl_choose(topo, Bytes(int64_t{64} << 20), NcclProtocolOption::kLL128);
  EXPECT_EQ(ll128.algo, NcclAlgo::kRing);
  EXPECT_EQ(ll128.protocol, NcclProtocol::kLL128);
  const std::string text = describe(topo, Bytes(4096), NcclProtocolOption::kAuto);
  EXPECT_NE(text.find("choice: tree ll on 1 channel(s)"), std::string::npos) << text;
}

TEST(NcclTuning, LL128IsEnabledOnlyWhereNcclEnablesIt) {
  NcclTopology topo = two_nodes();
  EXPECT_TRUE(nccl_protocol_enabled(topo, NcclProtocol::kLL128));  // NVLink, SM 7.0, NIC near
  EXPECT_TRUE(nccl_protocol_enabled(topo, NcclProtocol::kLL));
  NcclTopology pci = topo;
  pci.nvlink = false;  // typeIntra PATH_PIX or beyond: > PATH_NVB
  EXPECT_FALSE(nccl_protocol_enabled(pci, NcclProtocol::kLL128));
  pci.ranks = pci.nodes;  // one GPU per node: no intra-node path (PATH_LOC)
  EXPECT_TRUE(nccl_protocol_enabled(pci, NcclProtocol::kLL128));
  NcclTopology far = topo;
  far.nic_near_gpu = false;  // PATH_PHB: off on Volta, on from SM 9.0 (PXN)
  EXPECT_FALSE(nccl_protocol_enabled(far, NcclProtocol::kLL128));
  far.compute_capability = 90;
  EXPECT_TRUE(nccl_protocol_enabled(far, NcclProtocol::kLL128));
  NcclTopology pascal = topo;
  pascal.compute_capability = 60;
  EXPECT_FALSE(nccl_protocol_enabled(pascal, NcclProtocol::kLL128));
  // Off by default, it is never chosen by "auto"; named, it runs (NCCL_PROTO=LL128 sets protoEnable 1).
  pci.ranks = 16;
  for (int64_t bytes = 64; bytes <= (int64_t{1} << 30); bytes *= 4)
    EXPECT_NE(nccl_choose(pci, Bytes(bytes), NcclProtocolOption::kAuto).protocol, NcclProtocol::kLL128)
        << bytes;
  EXPECT_EQ(nccl_choose(pci, Bytes(4096), NcclProtocolOption::kLL128).protocol, NcclProtocol::kLL128);
}

// 8 DGX-class nodes of 8 GPUs (configs/clusters/dgx_a100.json, dgx_h100.json): NVSwitch at
// `nvlink_gbs`, one NIC of `nic_gbps` per GPU, 5 us, SM `compute_capability`.
NcclTopology dgx(int compute_capability, double nvlink_gbs, double nic_gbps) {
  NcclTopology topo;
  topo.nodes = 8;
  topo.ranks = 64;
  topo.intra_bandwidth = Bandwidth::gigabytes_per_second(nvlink_gbs);
  topo.inter_bandwidth = Bandwidth::gbps(nic_gbps);
  topo.inter_latency = Time::us(5);
  topo.compute_capability = compute_capability;
  return topo;
}

TEST(NcclTuning, TheGpuGenerationPicksItsRows) {
  // The ring under Simple, 1 MiB (1 MiB / (2 channels x 64 ranks) = 8192 B >= 64: the plateau): 126
  // steps, 14 across nodes at 14 + 2 x 5 = 24 us, 112 inside at max(3.4, 1.0 x 3) = 3.4 us:
  // 8.4 + 380.8 + 336 = 725.2 us, x 1.9 on Volta, x 1.4 from SM 8.0 (ncclTopoGetAlgoTime).
  for (int cc : {70, 80, 90}) {
    const double plateau = cc == 70 ? 1.9 : 1.4;
    EXPECT_NEAR(nccl_latency_us(dgx(cc, 300, 200), NcclAlgo::kRing, Bytes(1 << 20)), 725.2 * plateau,
                1e-9)
        << cc;
  }
  // A100 (SM 8.0), 300 GB/s NVLink, 200 Gbps = 25 GB/s NICs, 1 GiB (no tree correction): the tree's
  // bus min(25 x .92, 2 channels x perChMaxTreeBws[Ampere][N4] 17.8) = 23, x .5 = 11.5 GB/s; read
  // with Volta's row (10.0 per channel) it was min(23, 20) x .5 = 10. Under LL128 x 120/128, at most
  // 2 x perChMaxTreeLL128Bws 20.0: 21.5625 x .5 = 10.78 GB/s (Volta 18.75 x .5 = 9.375).
  const Bytes gib(int64_t{1} << 30);
  const NcclTopology a100 = dgx(80, 300, 200);
  const NcclTopology a100_as_volta = dgx(70, 300, 200);
  EXPECT_NEAR(nccl_bandwidth_gbs(a100, NcclAlgo::kTree, gib), 11.5, 1e-9);
  EXPECT_NEAR(nccl_bandwidth_gbs(a100_as_volta, NcclAlgo::kTree, gib), 10.0, 1e-9);
  EXPECT_NEAR(nccl_bandwidth_gbs(a100, NcclAlgo::kTree, gib, NcclProtocol::kLL128), 10.78125, 1e-9);
  EXPECT_NEAR(nccl_bandwidth_gbs(a100_as_volta, NcclAlgo::kTree, gib, NcclProtocol::kLL128), 9.375,
              1e-9);
  // H100 (SM 9.0), 450 GB/s, 400 Gbps = 50 GB/s: the tree min(46, 2 x 36.0) x .5 = 23 GB/s (Volta's
  // row: 10); the ring under LL128 min(50 x .92, 2 x perChMaxRingLL128Bws[Hopper] 36.7) = 46, x 64 /
  // 126 = 23.365 GB/s (Volta's 20.0 per channel: 40 x 64 / 126 = 20.317).
  const NcclTopology h100 = dgx(90, 450, 400);
  const NcclTopology h100_as_volta = dgx(70, 450, 400);
  EXPECT_NEAR(nccl_bandwidth_gbs(h100, NcclAlgo::kTree, gib), 23.0, 1e-9);
  EXPECT_NEAR(nccl_bandwidth_gbs(h100_as_volta, NcclAlgo::kTree, gib), 10.0, 1e-9);
  EXPECT_NEAR(nccl_bandwidth_gbs(h100, NcclAlgo::kRing, gib, NcclProtocol::kLL128), 46.0 * 64 / 126,
              1e-9);
  EXPECT_NEAR(nccl_bandwidth_gbs(h100_as_volta, NcclAlgo::kRing, gib, NcclProtocol::kLL128),
              40.0 * 64 / 126, 1e-9);
  // LL128's rule with the NIC behind the CPU (PATH_PHB): off on an A100, on from SM 9.0 (PXN).
  NcclTopology far = a100;
  far.nic_near_gpu = false;
  EXPECT_FALSE(nccl_protocol_enabled(far, NcclProtocol::kLL128));
  far = h100;
  far.nic_near_gpu = false;
  EXPECT_TRUE(nccl_protocol_enabled(far, NcclProtocol::kLL128));
}

TEST(NcclTuning, ChannelsAndPipelinesPerProtocol) {
  NcclTopology topo = two_nodes();
  topo.max_channels = 4;
  // LL ring: threshold NCCL_LL_THREAD_THRESHOLD 8 x nRanks 16 = 128, 512 threads: 4 channels from
  // 4 x 512 x 128 = 256 KiB; LL tree: 8 x 512 = 4096 per channel; LL128: 8 x 640 = 5120.
  EXPECT_EQ(nccl_channels(topo, NcclAlgo::kRing, Bytes(256 << 10), NcclProtocol::kLL), 4);
  EXPECT_EQ(nccl_channels(topo, NcclAlgo::kRing, Bytes((256 << 10) - 1), NcclProtocol::kLL), 3);
  EXPECT_EQ(nccl_channels(topo, NcclAlgo::kTree, Bytes(3 * 4096), NcclProtocol::kLL), 3);
  EXPECT_EQ(nccl_channels(topo, NcclAlgo::kRing, Bytes(2 * 5120), NcclProtocol::kLL128), 2);
  // The pipelines: LL and LL128 one step per slice (8 in flight), Simple's ring two (4 in flight).
  const PipelineOptions ll =
      nccl_allreduce_pipeline(topo, {NcclAlgo::kRing, NcclProtocol::kLL, 2, 0}, Bytes(4096));
  EXPECT_EQ(ll.protocol, NcclProtocol::kLL);
  EXPECT_EQ(ll.step, kLLStepSize);
  EXPECT_EQ(ll.channels, 2);
  EXPECT_EQ(ll.slices_in_flight(), 8);
  const PipelineOptions simple =
      nccl_allreduce_pipeline(topo, {NcclAlgo::kRing, NcclProtocol::kSimple, 2, 0}, Bytes(4096));
  EXPECT_EQ(simple.step, kNcclStepSize);
  EXPECT_EQ(simple.slices_in_flight(), 4);
  EXPECT_EQ(nccl_allreduce_pipeline(topo, {NcclAlgo::kTree, NcclProtocol::kSimple, 2, 0}, Bytes(4096))
                .slices_in_flight(),
            8);
  // The tree under LL128 shrinks its chunk for small buffers (calcCollChunking): nstepsLL128 = 1 +
  // log2(2) + 0.1 x 8 = 2.8; 1 MiB on 2 channels: 2^20 / (2 x 576'000) = 0 < 2.8 x 64 / 8 = 22.4, so
  // 576'000 -> 288'000 -> 144'000 -> 72'000 (not above 131'072: the first loop stops); then 2^20 /
  // (2 x 72'000) = 7 >= 2.8 x 16 / 8 = 5.6: 72'000 B.
  EXPECT_EQ(nccl_allreduce_pipeline(topo, {NcclAlgo::kTree, NcclProtocol::kLL128, 2, 0},
                                    Bytes(int64_t{1} << 20))
                .step,
            Bytes(72'000));
}

}  // namespace nccl_test
}  // namespace
}  // namespace bagua::collectives
