// The catalogue rows of NCCL's algorithms (core/collectives/cost.h) against what the code sends:
// meta buffers through a RecordingTransport (cost_test.cc's method), the busiest rank's bytes and the
// latest step equal to the closed forms.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/collectives/cost.h"
#include "core/collectives/nccl.h"
#include "tests/core/collectives/expect.h"
#include "tests/core/collectives/wire_cost.h"

namespace bagua::collectives {
namespace {

TEST(NcclCatalogue, WorkedExamples) {
  // Pipelined ring allreduce, P = 4, S = 4096 B, C = 2, slices of 256 B: chunks of 512 B in n = 2
  // slices; 2 (P - 1) n C = 24 messages one after another, 2 (P - 1) S / P = 6144 B.
  EXPECT_EQ(pipelined_ring_allreduce_cost(4, Bytes(4096), 2, Bytes(256)), (WireCost{24, Bytes(6144)}));
  // Chain broadcast, P = 4, S = 4096 B, C = 1, slices of 1024 B: P + n C - 2 = 4 + 4 - 2 = 6 steps.
  EXPECT_EQ(pipelined_chain_cost(4, Bytes(4096), 1, Bytes(1024)), (WireCost{6, Bytes(4096)}));
  // Double tree on 2 hosts of 1 rank, S = 4096 B in one slice per half: tree 0 is 0 -> 1, tree 1 is
  // 1 -> 0, one hop high: depth 2 x 1 + 1 - 1 = 2. Each rank sends its half up one tree and the other
  // half down the other: 2 x 2048 B. On 4 hosts of 2 ranks (tree 0: hosts 0 -> 2 -> {1, 3}, each host
  // a chain of 2), the deepest rank is 3 hops from the root; a head inner in both trees (host 2's in
  // tree 0, linked to its parent, two hosts and its chain; in tree 1 the mirror) sends 4 + 3 halves?
  // No: a rank is a head in one tree and the chain's tail in the other, so at most 4 + 1 = 5 links,
  // 5 x S / 2; slices of S / 4 give n = 2: depth 2 x 3 + 1 = 7.
  EXPECT_EQ(double_tree_allreduce_cost(2, 1, Bytes(4096), Bytes(4096)), (WireCost{2, Bytes(4096)}));
  EXPECT_EQ(double_tree_allreduce_cost(4, 2, Bytes(4096), Bytes(1024)), (WireCost{7, Bytes(5 * 2048)}));
}

TEST(NcclCatalogue, LLAndLL128SendTheirLines) {
  // The pipelined ring allreduce on P = 4 ranks of S = 16'000 B (4000 f32), one channel, slices of the
  // protocol's step: chunks of 4000 B, one slice each; every rank sends 2 (P - 1) = 6 of them. Simple:
  // 6 x 4000 = 24'000 B; LL: 4000 / 8 = 500 lines of 16 B, 6 x 8000 = 48'000 B; LL128: 4000 B is 3
  // warps' 1920 (the third partly filled), 3 x 2048 = 6144 B, 6 x 6144 = 36'864 B. The steps do not
  // change.
  const Buffer data = Buffer::meta(DType::kF32, 4000);
  auto ring = [&](NcclProtocol protocol, Bytes step) {
    PipelineOptions o;
    o.protocol = protocol;
    o.step = step;
    o.slice_steps = 1;
    return measure_wire_cost(testing::Backend::kThreads, 4, 1, [&](Transport& t) {
      pipelined_ring_allreduce(t, data, ReduceOp::kSum, 1, o);
    });
  };
  EXPECT_EQ(ring(NcclProtocol::kSimple, kNcclStepSize), (WireCost{6, Bytes(24'000)}));
  EXPECT_EQ(ring(NcclProtocol::kLL, kLLStepSize), (WireCost{6, Bytes(48'000)}));
  EXPECT_EQ(ring(NcclProtocol::kLL128, kLL128StepSize), (WireCost{6, Bytes(36'864)}));
  // The double tree on 2 ranks under LL: each rank is the root of one tree and the leaf of the other,
  // so it sends one half (8000 B) up its leaf's tree and the other half down its root's: 16'000 B of
  // data, 32'000 B of lines.
  PipelineOptions o;
  o.protocol = NcclProtocol::kLL;
  o.step = kLLStepSize;
  o.slice_steps = 1;
  const WireCost tree = measure_wire_cost(testing::Backend::kThreads, 2, 1, [&](Transport& t) {
    double_tree_allreduce(t, data, ReduceOp::kSum, 1, o);
  });
  EXPECT_EQ(tree.sent, Bytes(32'000));
}

class NcclCatalogueP : public ::testing::TestWithParam<int> {};

TEST_P(NcclCatalogueP, MeasuredStepsAndBytesMatchTheClosedForms) {
  const int ranks = GetParam();
  const size_t count = 64 * static_cast<size_t>(ranks);  // S = 256 P bytes
  const Bytes size(static_cast<int64_t>(count * 4));
  const Buffer data = Buffer::meta(DType::kF32, count);
  auto check = [&](const std::string& what, int ranks_per_host, const WireCost& expected,
                   const std::function<void(Transport&)>& body) {
    const WireCost measured =
        measure_wire_cost(testing::Backend::kThreads, ranks, ranks_per_host, body);
    EXPECT_EQ(measured, expected) << what << " on " << ranks << " ranks: measured " << show(measured)
                                  << ", catalogue " << show(expected);
  };
  for (int channels : {1, 2, 4}) {
    PipelineOptions o;
    o.channels = channels;
    o.step = Bytes(16);  // slices of 2 steps = 32 B = 8 f32
    const Bytes slice(32);
    check("pipelined allreduce", 1, pipelined_ring_allreduce_cost(ranks, size, channels, slice),
          [&](Transport& t) { pipelined_ring_allreduce(t, data, ReduceOp::kSum, 1, o); });
    check("pipelined reduce_scatter", 1, pipelined_reduce_scatter_cost(ranks, size, channels, slice),
          [&](Transport& t) { pipelined_reduce_scatter(t, data, ReduceOp::kSum, 1, o); });
    check("pipelined allgather", 1, pipelined_allgather_cost(ranks, size, channels, slice),
          [&](Transport& t) { pipelined_allgather(t, data, 1, o); });
    o.slice_steps = 1;
    check("pipelined broadcast", 1, pipelined_chain_cost(ranks, size, channels, Bytes(16)),
          [&](Transport& t) { pipelined_broadcast(t, data, ranks - 1, 1, o); });
    check("pipelined reduce", 1, pipelined_chain_cost(ranks, size, channels, Bytes(16)),
          [&](Transport& t) { pipelined_reduce(t, data, 0, ReduceOp::kSum, 1, o); });
  }
  for (int ranks_per_host : {1, 2}) {
    if (ranks % ranks_per_host != 0) continue;
    PipelineOptions o = broadcast_pipeline();
    o.step = Bytes(64);
    // The bytes exactly; the serial step count at least the pipeline's depth (cost.h).
    const WireCost expected =
        double_tree_allreduce_cost(ranks / ranks_per_host, ranks_per_host, size, Bytes(64));
    const WireCost measured =
        measure_wire_cost(testing::Backend::kThreads, ranks, ranks_per_host,
                          [&](Transport& t) { double_tree_allreduce(t, data, ReduceOp::kSum, 1, o); });
    EXPECT_EQ(measured.sent, expected.sent) << "double tree, " << ranks << " ranks, " << ranks_per_host
                                            << " per host: measured " << show(measured);
    EXPECT_GE(measured.steps, expected.steps) << "double tree, " << ranks << " ranks";
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, NcclCatalogueP, ::testing::Values(1, 2, 3, 5, 8, 16));

}  // namespace
}  // namespace bagua::collectives
