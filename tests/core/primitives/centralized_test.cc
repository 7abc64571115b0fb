// C_FP_S and C_LP_S against direct reference computations, flat and hierarchical, on the threads
// backend and the simulator.
#include "core/primitives/centralized.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/primitives/centralized_low_precision.h"
#include "core/primitives/communicator.h"
#include "tests/core/primitives/world_data.h"

namespace bagua {
namespace {

using testing::average_input;
using testing::Backend;
using testing::input_buffer;
using testing::Results;
using testing::where;

constexpr Tag kTag = 7;
const int kRankCounts[] = {1, 2, 3, 4, 5, 8};

// Runs C_LP_S with compressor `name` on every rank's input of n elements; returns each rank's result.
Results run_low_precision(Backend backend, int ranks, int per_host, size_t n, const std::string& name,
                          bool hierarchical, bool average = true) {
  const CompressorRegistry registry = testing::compressor_registry();
  const CompressorFactory factory = compressor_factory(registry, name, Params(), false);
  Results results(ranks);
  testing::run_ranks(
      backend, ranks,
      [&](RankContext& ctx) {
        const int rank = ctx.transport().rank();
        Buffer bucket = input_buffer(rank, n);
        Communicator communicator(ctx.transport(), hierarchical);
        CentralizedLowPrecision primitive(ctx, communicator, bucket,
                                          CentralizedLowPrecisionOptions{factory, average});
        primitive.allreduce(bucket, kTag);
        results.set(rank, bucket);
      },
      per_host);
  return results;
}

TEST(CentralizedLowPrecision, IdentityCompressorGivesTheExactAverage) {
  for (Backend backend : testing::all_backends()) {
    for (int ranks : kRankCounts) {
      for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{100}}) {
        Results r = run_low_precision(backend, ranks, 1, n, "identity", false);
        for (int rank = 0; rank < ranks; ++rank) {
          ASSERT_EQ(r[rank].size(), n);
          for (size_t i = 0; i < n; ++i)
            ASSERT_NEAR(r[rank][i], average_input(ranks, i), 1e-5)
                << where(backend, ranks) << ", n " << n << ", rank " << rank << ", element " << i;
        }
      }
    }
  }
}

TEST(CentralizedLowPrecision, IdentityCompressorSumsWithoutAverage) {
  Results r = run_low_precision(Backend::kThreads, 3, 1, 10, "identity", false, /*average=*/false);
  for (int rank = 0; rank < 3; ++rank)
    for (size_t i = 0; i < 10; ++i)
      EXPECT_NEAR(r[rank][i], 3 * average_input(3, i), 1e-5) << "element " << i;
}

TEST(CentralizedLowPrecision, MinMaxUint8IsWithinTheQuantizationBoundAndIdenticalOnAllRanks) {
  // Two quantizations, each within half a step of its chunk's grid: step = (max - min + eps) / 255.
  // Let R = the spread (max - min) of all inputs together, which bounds every chunk's spread.
  //   scatter: every decoded copy of a chunk is within e1 = (R + eps) / 510 of the input, so the
  //            average of the copies is within e1 of the exact average;
  //   gather:  the reduced chunk spreads over at most R + 2 e1, so its decoding is within
  //            e2 = (R + 2 e1 + eps) / 510 of it.
  // Total: |result - average| <= e1 + e2, plus float rounding (1e-6).
  const size_t n = 203;
  for (Backend backend : testing::all_backends()) {
    for (int ranks : kRankCounts) {
      Results r = run_low_precision(backend, ranks, 1, n, "minmax_uint8", false);
      float lo = 1e30f, hi = -1e30f;
      for (int rank = 0; rank < ranks; ++rank) {
        Buffer in = input_buffer(rank, n);
        for (float v : in.as<float>())
          lo = std::min(lo, v), hi = std::max(hi, v);
      }
      const double spread = hi - lo;
      const double e1 = (spread + 1e-7) / 510;
      const double e2 = (spread + 2 * e1 + 1e-7) / 510;
      double worst = 0;
      for (int rank = 0; rank < ranks; ++rank) {
        for (size_t i = 0; i < n; ++i) {
          const double error = std::abs(r[rank][i] - average_input(ranks, i));
          worst = std::max(worst, error);
          ASSERT_LE(error, e1 + e2 + 1e-6)
              << where(backend, ranks) << ", rank " << rank << ", element " << i;
          ASSERT_EQ(r[rank][i], r[0][i])
              << "ranks disagree: " << where(backend, ranks) << ", element " << i;
        }
      }
      EXPECT_GT(worst, 0.0) << "an 8-bit code of these inputs cannot be exact";
    }
  }
}

// Hierarchical layouts: hosts x ranks per host.
struct Layout {
  int hosts;
  int per_host;
};
const Layout kLayouts[] = {{2, 2}, {2, 3}, {3, 2}};

TEST(CentralizedLowPrecision, HierarchicalIdentityGivesTheExactAverage) {
  for (Backend backend : testing::all_backends()) {
    for (Layout layout : kLayouts) {
      const int ranks = layout.hosts * layout.per_host;
      Results r = run_low_precision(backend, ranks, layout.per_host, 50, "identity", true);
      for (int rank = 0; rank < ranks; ++rank)
        for (size_t i = 0; i < 50; ++i)
          ASSERT_NEAR(r[rank][i], average_input(ranks, i), 1e-5)
              << where(backend, ranks, layout.per_host) << ", rank " << rank << ", element " << i;
    }
  }
}

TEST(CentralizedFullPrecision, HierarchicalEqualsFlat) {
  const size_t n = 37;
  for (Backend backend : testing::all_backends()) {
    for (Layout layout : kLayouts) {
      const int ranks = layout.hosts * layout.per_host;
      Results flat(ranks), hier(ranks);
      testing::run_ranks(
          backend, ranks,
          [&](RankContext& ctx) {
            const int rank = ctx.transport().rank();
            Buffer a = input_buffer(rank, n), b = input_buffer(rank, n);
            Communicator flat_communicator(ctx.transport(), false);
            Communicator hier_communicator(ctx.transport(), true);
            CentralizedFullPrecision(ctx, flat_communicator, a, {}).allreduce(a, kTag);
            CentralizedFullPrecision(ctx, hier_communicator, b, {}).allreduce(b, kTag + 1);
            flat.set(rank, a);
            hier.set(rank, b);
          },
          layout.per_host);
      for (int rank = 0; rank < ranks; ++rank)
        for (size_t i = 0; i < n; ++i) {
          ASSERT_NEAR(flat[rank][i], average_input(ranks, i), 1e-5)
              << where(backend, ranks, layout.per_host);
          ASSERT_NEAR(hier[rank][i], flat[rank][i], 1e-5) << where(backend, ranks, layout.per_host);
        }
    }
  }
}

TEST(CentralizedLowPrecision, MetaBucketsSendEveryByteAndComputeNothing) {
  // On meta buffers the primitive runs its whole schedule with no data; in the simulator it takes
  // time. Two ranks, identity: each rank sends one slot in the alltoall and one in the allgather.
  const CompressorRegistry registry = testing::compressor_registry();
  const CompressorFactory factory = compressor_factory(registry, "identity", Params(), false);
  testing::run_ranks(Backend::kSim, 2, [&](RankContext& ctx) {
    Buffer bucket = Buffer::meta(DType::kF32, 1000);
    Communicator communicator(ctx.transport(), false);
    CentralizedLowPrecision primitive(ctx, communicator, bucket,
                                      CentralizedLowPrecisionOptions{factory, true});
    EXPECT_EQ(primitive.slot_bytes(), 2000u);  // 500 f32 elements
    const Time before = ctx.clock().now();
    primitive.allreduce(bucket, kTag);
    EXPECT_GT(ctx.clock().now(), before);
  });
}

}  // namespace
}  // namespace bagua
