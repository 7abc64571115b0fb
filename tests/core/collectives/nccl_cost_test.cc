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
#include "tests/core/collectives/recording_transport.h"
#include "tests/support/worlds.h"

namespace bagua::collectives {
namespace {

WireCost measure(int ranks, int ranks_per_host, const std::function<void(Transport&)>& body) {
  auto ledger = std::make_shared<testing::Ledger>();
  std::vector<testing::RankRecord> records(static_cast<size_t>(ranks));
  testing::run_ranks(
      testing::Backend::kThreads, ranks,
      [&](RankContext& ctx) {
        testing::RecordingTransport t(ctx.transport(), ledger,
                                      &records[static_cast<size_t>(ctx.transport().rank())]);
        body(t);
      },
      ranks_per_host);
  WireCost cost;
  for (const testing::RankRecord& r : records) {
    cost.steps = std::max(cost.steps, r.clock);
    cost.sent = std::max(cost.sent, Bytes(r.bytes));
  }
  return cost;
}

std::string show(const WireCost& c) {
  return std::to_string(c.steps) + " steps, " + std::to_string(c.sent.count()) + " bytes";
}

TEST(NcclCatalogue, WorkedExamples) {
  // Pipelined ring allreduce, P = 4, S = 4096 B, C = 2, slices of 256 B: chunks of 512 B in n = 2
  // slices; 2 (P - 1) n C = 24 messages one after another, 2 (P - 1) S / P = 6144 B.
  EXPECT_EQ(pipelined_ring_allreduce_cost(4, Bytes(4096), 2, Bytes(256)), (WireCost{24, Bytes(6144)}));
  // Chain broadcast, P = 4, S = 4096 B, C = 1, slices of 1024 B: P + n C - 2 = 4 + 4 - 2 = 6 steps.
  EXPECT_EQ(pipelined_chain_cost(4, Bytes(4096), 1, Bytes(1024)), (WireCost{6, Bytes(4096)}));
  // Double tree on 2 hosts of 1 rank, S = 4096 B in one slice per half: tree 0 is 0 -> 1, tree 1 is
  // 1 -> 0. Up: rank 1 sends half 0 (step 1), rank 0 half 1 (step 1, having received step 1: step 2).
  // Down: rank 0 sends half 0 to rank 1 (step 3), rank 1 half 1 (step 4). Each sends 2 x 2048 B.
  EXPECT_EQ(double_tree_allreduce_cost(2, 1, Bytes(4096), Bytes(4096)), (WireCost{4, Bytes(4096)}));
}

class NcclCatalogueP : public ::testing::TestWithParam<int> {};

TEST_P(NcclCatalogueP, MeasuredStepsAndBytesMatchTheClosedForms) {
  const int ranks = GetParam();
  const size_t count = 64 * static_cast<size_t>(ranks);  // S = 256 P bytes
  const Bytes size(static_cast<int64_t>(count * 4));
  const Buffer data = Buffer::meta(DType::kF32, count);
  auto check = [&](const std::string& what, int ranks_per_host, const WireCost& expected,
                   const std::function<void(Transport&)>& body) {
    const WireCost measured = measure(ranks, ranks_per_host, body);
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
    check("double tree", ranks_per_host,
          double_tree_allreduce_cost(ranks / ranks_per_host, ranks_per_host, size, Bytes(64)),
          [&](Transport& t) { double_tree_allreduce(t, data, ReduceOp::kSum, 1, o); });
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, NcclCatalogueP, ::testing::Values(1, 2, 3, 5, 8, 16));

}  // namespace
}  // namespace bagua::collectives
