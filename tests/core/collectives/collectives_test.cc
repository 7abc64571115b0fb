// The flat collectives against closed-form results, swept over backend x rank count x element count
// (tests/core/collectives/expect.h defines the contributions and their reductions).
#include "core/collectives/collectives.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "core/ops.h"
#include "tests/core/collectives/expect.h"
#include "tests/support/worlds.h"

namespace bagua::collectives {
namespace {

using testing::contribution;
using testing::describe;
using testing::expect_elements;
using testing::fill_contribution;
using testing::reduced;
using testing::World;

constexpr AllreduceAlgo kAlgos[] = {AllreduceAlgo::kRing,
                                    AllreduceAlgo::kTree,
                                    AllreduceAlgo::kHalvingDoubling,
                                    AllreduceAlgo::kRecursiveDoubling,
                                    AllreduceAlgo::kNative,
                                    AllreduceAlgo::kMpiTuned};
constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax};
constexpr DType kDTypes[] = {DType::kF32, DType::kF64, DType::kI32};

class Collectives : public ::testing::TestWithParam<World> {
 protected:
  void run(const std::function<void(RankContext&)>& body) {
    testing::run_ranks(GetParam().backend, GetParam().ranks, body);
  }
};

TEST(Chunking, SizesDifferByAtMostOneAndTheFirstAreLarger) {
  // 10 elements in 4 chunks: 3, 3, 2, 2 at offsets 0, 3, 6, 8.
  EXPECT_EQ(chunk_range(10, 4, 0), (ChunkRange{0, 3}));
  EXPECT_EQ(chunk_range(10, 4, 1), (ChunkRange{3, 3}));
  EXPECT_EQ(chunk_range(10, 4, 2), (ChunkRange{6, 2}));
  EXPECT_EQ(chunk_range(10, 4, 3), (ChunkRange{8, 2}));
  // Fewer elements than chunks: the last chunks are empty and sit at the end.
  EXPECT_EQ(chunk_range(2, 5, 1), (ChunkRange{1, 1}));
  EXPECT_EQ(chunk_range(2, 5, 4), (ChunkRange{2, 0}));
  for (size_t count : {0, 1, 7, 100, 1003})
    for (int parts : {1, 2, 3, 7, 16}) {
      size_t next = 0;
      for (int i = 0; i < parts; ++i) {
        const ChunkRange r = chunk_range(count, parts, i);
        EXPECT_EQ(r.offset, next) << count << " in " << parts << ", chunk " << i;
        EXPECT_EQ(r.count, count / parts + (static_cast<size_t>(i) < count % parts ? 1 : 0));
        next = r.end();
      }
      EXPECT_EQ(next, count);
    }
  const Buffer b = Buffer::host(DType::kF32, 10);
  const Chunking chunks(b, 4);
  EXPECT_EQ(chunks.max_count(), 3u);
  EXPECT_EQ(chunks.chunks(1, 2).count(), 5u);
  EXPECT_EQ(chunks.chunk(3).data(), b.as<float>().data() + 8);
}

TEST(Algorithms, MpiTunedRunsRecursiveDoublingWhereOpenMpiDoes) {
  // Open MPI 4.1's ompi_coll_tuned_allreduce_intra_dec_fixed, commutative operations (allreduce.cc):
  // 2 and 3 ranks: recursive doubling on [8 B, 4 KiB) and [8 KiB, 16 KiB); 4 to 7 ranks: [16 B, 8 KiB);
  // 8 to 15: below 8 KiB; 64 to 127: below 256 KiB.
  for (int ranks : {2, 3}) {
    EXPECT_EQ(mpi_tuned_choice(ranks, 8), AllreduceAlgo::kRecursiveDoubling);
    EXPECT_EQ(mpi_tuned_choice(ranks, 1024), AllreduceAlgo::kRecursiveDoubling);
    EXPECT_EQ(mpi_tuned_choice(ranks, 4095), AllreduceAlgo::kRecursiveDoubling);
    EXPECT_NE(mpi_tuned_choice(ranks, 4096), AllreduceAlgo::kRecursiveDoubling);
    EXPECT_EQ(mpi_tuned_choice(ranks, 8192), AllreduceAlgo::kRecursiveDoubling);
    EXPECT_NE(mpi_tuned_choice(ranks, 16384), AllreduceAlgo::kRecursiveDoubling);
    EXPECT_NE(mpi_tuned_choice(ranks, 4), AllreduceAlgo::kRecursiveDoubling);  // below 8 B: ring
  }
  for (int ranks : {4, 5, 7}) {
    EXPECT_NE(mpi_tuned_choice(ranks, 8), AllreduceAlgo::kRecursiveDoubling);
    EXPECT_EQ(mpi_tuned_choice(ranks, 16), AllreduceAlgo::kRecursiveDoubling);
    EXPECT_EQ(mpi_tuned_choice(ranks, 4096), AllreduceAlgo::kRecursiveDoubling);
    EXPECT_EQ(mpi_tuned_choice(ranks, 8191), AllreduceAlgo::kRecursiveDoubling);
    EXPECT_NE(mpi_tuned_choice(ranks, 8192), AllreduceAlgo::kRecursiveDoubling);
  }
  EXPECT_EQ(mpi_tuned_choice(8, 4), AllreduceAlgo::kRecursiveDoubling);
  EXPECT_NE(mpi_tuned_choice(16, 4), AllreduceAlgo::kRecursiveDoubling);  // 16 to 31: from 64 B on
  EXPECT_EQ(mpi_tuned_choice(16, 64), AllreduceAlgo::kRecursiveDoubling);
  EXPECT_NE(mpi_tuned_choice(32, 1024), AllreduceAlgo::kRecursiveDoubling);  // 32 to 63: never
  EXPECT_EQ(mpi_tuned_choice(64, 262143), AllreduceAlgo::kRecursiveDoubling);
  EXPECT_NE(mpi_tuned_choice(64, 262144), AllreduceAlgo::kRecursiveDoubling);
  EXPECT_EQ(mpi_tuned_choice(4096, 16384), AllreduceAlgo::kRecursiveDoubling);
  EXPECT_NE(mpi_tuned_choice(4096, 32768), AllreduceAlgo::kRecursiveDoubling);
}

TEST(Algorithms, MpiTunedPicksTheLeastPredictedTimeElsewhere) {
  // Outside Open MPI's recursive-doubling ranges: alpha = 1 us per message, beta = 1 / (9 GB/s)
  // (allreduce.cc); (steps, bytes sent) from the catalogue in collectives.h.
  // P = 2: ring, tree and halving-doubling all take 2 steps and send S: a tie, so ring.
  EXPECT_EQ(mpi_tuned_choice(2, 4096), AllreduceAlgo::kRing);
  EXPECT_EQ(mpi_tuned_choice(2, size_t{64} << 20), AllreduceAlgo::kRing);
  // P = 4: halving-doubling takes 4 steps to ring's 6 and sends the same 3S/2 (tree: 4 steps, 2S).
  EXPECT_EQ(mpi_tuned_choice(4, 8192), AllreduceAlgo::kHalvingDoubling);
  EXPECT_EQ(mpi_tuned_choice(4, size_t{64} << 20), AllreduceAlgo::kHalvingDoubling);
  // P = 3, 4 KiB (costed as 4098 B, a multiple of P P' = 6): tree takes 3 steps and sends
  // ceil(lg 3) S = 8196 B: 3 us + 0.91 us = 3.91 us; ring 4 steps and 4/3 S = 5464 B: 4.61 us.
  EXPECT_EQ(mpi_tuned_choice(3, 4096), AllreduceAlgo::kTree);
  // P = 3, 1 MiB: ring 4 us + 1398102 B / 9 GB/s = 159 us; tree 3 us + 233 us.
  EXPECT_EQ(mpi_tuned_choice(3, size_t{1} << 20), AllreduceAlgo::kRing);
  // One rank or nothing to move: ring (which sends nothing).
  EXPECT_EQ(mpi_tuned_choice(1, 1024), AllreduceAlgo::kRing);
  EXPECT_EQ(mpi_tuned_choice(4, 0), AllreduceAlgo::kRing);
}

TEST(Algorithms, NamesRoundTripAndUnknownNamesAreRejected) {
  for (const std::string& name : allreduce_algo_names())
    EXPECT_EQ(to_string(parse_allreduce_algo(name)), name);
  EXPECT_EQ(parse_allreduce_algo("halving_doubling"), AllreduceAlgo::kHalvingDoubling);
  EXPECT_EQ(parse_allreduce_algo("recursive_doubling"), AllreduceAlgo::kRecursiveDoubling);
  EXPECT_THROW(parse_allreduce_algo("butterfly"), ConfigError);
  EXPECT_EQ(parse_broadcast_algo("chain"), BroadcastAlgo::kChain);
  EXPECT_EQ(to_string(BroadcastAlgo::kBinomial), "binomial");
  EXPECT_THROW(parse_broadcast_algo("star"), ConfigError);
  EXPECT_EQ(parse_reduce_algo("chain"), ReduceAlgo::kChain);
  EXPECT_EQ(to_string(ReduceAlgo::kBinomial), "binomial");
  EXPECT_THROW(parse_reduce_algo("ring"), ConfigError);
  for (IntraHostAlgo a :
       {IntraHostAlgo::kAuto, IntraHostAlgo::kBinomial, IntraHostAlgo::kChain, IntraHostAlgo::kNccl})
    EXPECT_EQ(parse_intra_host_algo(to_string(a)), a);
  EXPECT_EQ(to_string(IntraHostAlgo::kNccl), "nccl");
  EXPECT_EQ(to_string(IntraHostAlgo::kAuto), "auto");
  EXPECT_THROW(parse_intra_host_algo("tree"), ConfigError);
}

TEST(Algorithms, UnknownNameMessagesListEveryChoice) {
  auto message = [](auto parse, std::string_view name) {
    try {
      parse(name);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(parse_allreduce_algo, "butterfly"),
            "allreduce algorithm 'butterfly' is unknown (expected ring, tree, halving_doubling, "
            "recursive_doubling, native, nccl or mpi_tuned)");
  EXPECT_EQ(message(parse_broadcast_algo, "star"),
            "broadcast algorithm 'star' is unknown (expected binomial or chain)");
  EXPECT_EQ(message(parse_reduce_algo, "ring"),
            "reduce algorithm 'ring' is unknown (expected binomial or chain)");
  EXPECT_EQ(message(parse_intra_host_algo, "tree"),
            "intra-host algorithm 'tree' is unknown (expected auto, binomial, chain or nccl)");
}

TEST(IntraHostPlan, ChainOnceTheBufferFillsASegmentPerRank) {
  // The default segment is NCCL's 512 KiB step: 131072 f32 or 65536 f64.
  const IntraHostOptions defaults;
  EXPECT_EQ(defaults.segment, Bytes(524288));
  EXPECT_EQ(defaults.algo, IntraHostAlgo::kAuto);
  // 8 ranks: a chain from 8 whole segments on (4 MiB of f32: k = 8), binomial trees below.
  EXPECT_EQ(plan_intra_host(defaults, 8, 8 * 131072, 4), (IntraHostPlan{true, 131072, 8}));
  EXPECT_EQ(plan_intra_host(defaults, 8, 8 * 131072 - 1, 4), (IntraHostPlan{false, 0, 1}));
  // 10 MiB of f32 (Bagua's bucket) on 8 ranks: 20 segments; 10 MiB + 1 element: 21, the last short.
  EXPECT_EQ(plan_intra_host(defaults, 8, 20 * 131072, 4), (IntraHostPlan{true, 131072, 20}));
  EXPECT_EQ(plan_intra_host(defaults, 8, 20 * 131072 + 1, 4), (IntraHostPlan{true, 131072, 21}));
  // f64 elements: the segment holds 65536 of them.
  EXPECT_EQ(plan_intra_host(defaults, 4, 4 * 65536, 8), (IntraHostPlan{true, 65536, 4}));
  // 3 ranks need 3 segments; 2 ranks never take a chain by themselves.
  EXPECT_EQ(plan_intra_host(defaults, 3, 3 * 131072, 4).chain, true);
  EXPECT_EQ(plan_intra_host(defaults, 2, 100 * 131072, 4).chain, false);
  // Forced forms; a segment below one element is one element.
  EXPECT_EQ(plan_intra_host({IntraHostAlgo::kChain, Bytes(10)}, 2, 7, 4), (IntraHostPlan{true, 2, 4}));
  EXPECT_EQ(plan_intra_host({IntraHostAlgo::kChain, Bytes(2)}, 5, 3, 4), (IntraHostPlan{true, 1, 3}));
  EXPECT_EQ(plan_intra_host({IntraHostAlgo::kBinomial, Bytes(4)}, 8, 1000, 4).chain, false);
  EXPECT_THROW(plan_intra_host({IntraHostAlgo::kAuto, Bytes(0)}, 8, 1000, 4), ConfigError);
  // NCCL's pipelined chain at any size, in slices of the segment (whole elements); its channels are
  // settled where it runs. Negative channels are refused.
  EXPECT_EQ(plan_intra_host({IntraHostAlgo::kNccl}, 8, 7, 4), (IntraHostPlan{false, 131072, 1, true}));
  EXPECT_EQ(plan_intra_host({IntraHostAlgo::kNccl, Bytes(10)}, 2, 7, 4),
            (IntraHostPlan{false, 2, 1, true}));
  EXPECT_THROW(plan_intra_host({IntraHostAlgo::kNccl, Bytes(4096), -1}, 8, 1000, 4), ConfigError);
}

TEST_P(Collectives, AllreduceEveryAlgorithmOpAndDtype) {
  run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    Tag tag = 0;
    for (size_t count : testing::element_counts(t.size()))
      for (DType dtype : kDTypes)
        for (ReduceOp op : kOps)
          for (AllreduceAlgo algo : kAlgos) {
            const Buffer data = Buffer::host(dtype, count);
            fill_contribution(data, t.rank(), t.size());
            allreduce(t, data, op, ++tag, algo);
            expect_elements(
                data, 0, count, [&](size_t i) { return reduced(op, t.size(), i); }, t.rank(),
                describe("allreduce " + to_string(algo) + " " + to_string(op), dtype, count, ""));
          }
  });
}

TEST_P(Collectives, AllreduceOfI64) {
  run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    const size_t count = 1000 * static_cast<size_t>(t.size()) + 3;
    for (AllreduceAlgo algo : kAlgos) {
      const Buffer data = Buffer::host(DType::kI64, count);
      fill_contribution(data, t.rank(), t.size());
      allreduce(t, data, ReduceOp::kMax, 5, algo);
      expect_elements(
          data, 0, count, [&](size_t i) { return reduced(ReduceOp::kMax, t.size(), i); }, t.rank(),
          describe("allreduce max " + to_string(algo), DType::kI64, count, ""));
    }
  });
}

TEST_P(Collectives, TreeAllreduceInSegments) {
  run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    for (size_t count : testing::element_counts(t.size()))
      for (size_t segment : {size_t{1}, size_t{7}, size_t{1000}}) {
        if (count / segment > 1000) continue;  // keep the message count (and the run time) small
        const Buffer data = Buffer::host(DType::kF64, count);
        fill_contribution(data, t.rank(), t.size());
        tree_allreduce(t, data, ReduceOp::kSum, 3, segment);
        expect_elements(
            data, 0, count, [&](size_t i) { return reduced(ReduceOp::kSum, t.size(), i); }, t.rank(),
            describe("tree allreduce", DType::kF64, count, "segment " + std::to_string(segment)));
      }
  });
}

TEST_P(Collectives, AllreduceAverage) {
  run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    for (size_t count : testing::element_counts(t.size()))
      for (DType dtype : {DType::kF32, DType::kF64})
        for (AllreduceAlgo algo : kAlgos) {
          const Buffer data = Buffer::host(dtype, count);
          fill_contribution(data, t.rank(), t.size());
          allreduce_average(t, data, 9, algo);
          // The sum is exact; dividing by P rounds once (relative error below 2^-23 in f32).
          expect_elements(
              data, 0, count, [&](size_t i) { return reduced(ReduceOp::kSum, t.size(), i) / t.size(); },
              t.rank(), describe("allreduce_average " + to_string(algo), dtype, count, ""), 2e-7);
        }
    const Buffer integers = Buffer::host(DType::kI32, 4);
    EXPECT_THROW(allreduce_average(t, integers, 10), ConfigError);
  });
}

TEST_P(Collectives, ReduceScatterLeavesChunkROnRankR) {
  run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    for (size_t count : testing::element_counts(t.size()))
      for (DType dtype : kDTypes)
        for (ReduceOp op : kOps) {
          const Buffer data = Buffer::host(dtype, count);
          fill_contribution(data, t.rank(), t.size());
          reduce_scatter(t, data, op, 11);
          const ChunkRange mine = chunk_range(count, t.size(), t.rank());
          expect_elements(
              data, mine.offset, mine.end(), [&](size_t i) { return reduced(op, t.size(), i); },
              t.rank(), describe("reduce_scatter " + to_string(op), dtype, count, ""));
        }
  });
}

TEST_P(Collectives, AllgatherGathersEveryRanksChunk) {
  run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    for (size_t count : testing::element_counts(t.size()))
      for (DType dtype : kDTypes) {
        // Rank r fills its chunk with its contribution and the rest with -1; afterwards chunk c holds
        // rank c's contribution.
        const Buffer data = Buffer::host(dtype, count);
        fill(data, -1);
        const ChunkRange mine = chunk_range(count, t.size(), t.rank());
        for (size_t i = mine.offset; i < mine.end(); ++i)
          testing::set_element(data, i, contribution(t.rank(), t.size(), i));
        allgather(t, data, 12);
        for (int c = 0; c < t.size(); ++c) {
          const ChunkRange theirs = chunk_range(count, t.size(), c);
          expect_elements(
              data, theirs.offset, theirs.end(), [&](size_t i) { return contribution(c, t.size(), i); },
              t.rank(), describe("allgather", dtype, count, "chunk " + std::to_string(c)));
        }
      }
  });
}

TEST_P(Collectives, BroadcastFromEveryKindOfRoot) {
  run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    const std::vector<int> roots{0, t.size() / 2, t.size() - 1};
    for (size_t count : testing::element_counts(t.size()))
      for (int root : roots)
        for (BroadcastAlgo algo : {BroadcastAlgo::kBinomial, BroadcastAlgo::kChain})
          for (size_t segment : {size_t{0}, count < 100 ? size_t{3} : count / 7}) {
            const Buffer data = Buffer::host(DType::kF32, count);
            if (t.rank() == root) {
              fill_contribution(data, root, t.size());
            } else {
              fill(data, -1);
            }
            broadcast(t, data, root, 13, algo, segment);
            expect_elements(
                data, 0, count, [&](size_t i) { return contribution(root, t.size(), i); }, t.rank(),
                describe("broadcast " + to_string(algo), DType::kF32, count,
                         "root " + std::to_string(root) + " segment " + std::to_string(segment)));
          }
  });
}

TEST_P(Collectives, ReduceToEveryKindOfRoot) {
  run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    const std::vector<int> roots{0, t.size() / 2, t.size() - 1};
    for (size_t count : testing::element_counts(t.size()))
      for (int root : roots)
        for (ReduceOp op : kOps)
          for (ReduceAlgo algo : {ReduceAlgo::kBinomial, ReduceAlgo::kChain})
            for (size_t segment : {size_t{0}, count < 100 ? size_t{5} : count / 6}) {
              const Buffer data = Buffer::host(DType::kI32, count);
              fill_contribution(data, t.rank(), t.size());
              reduce(t, data, root, op, 14, segment, algo);
              if (t.rank() != root) continue;
              expect_elements(
                  data, 0, count, [&](size_t i) { return reduced(op, t.size(), i); }, t.rank(),
                  describe("reduce " + to_string(algo) + " " + to_string(op), DType::kI32, count,
                           "root " + std::to_string(root) + " segment " + std::to_string(segment)));
            }
  });
}

TEST_P(Collectives, ChainReduceOfFloatsIsTheSameInEveryRun) {
  // Values whose float sums depend on the order of the additions: the chain adds in one fixed order,
  // root's + (root + 1's + (... + root - 1's)), so two runs agree bit for bit, and the result is that
  // sum computed here in that order.
  run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    const int ranks = t.size();
    const size_t count = 1001;
    const int root = ranks / 2;
    auto value = [](int rank, size_t i) {
      return 1.0f / static_cast<float>(3 + rank) + static_cast<float>(i) * 1e-3f;
    };
    std::vector<float> first;
    for (int run = 0; run < 2; ++run) {
      const Buffer data = Buffer::host(DType::kF32, count);
      for (size_t i = 0; i < count; ++i)
        data.as<float>()[i] = value(t.rank(), i);
      reduce(t, data, root, ReduceOp::kSum, 18, 100, ReduceAlgo::kChain);
      if (t.rank() != root) continue;
      std::vector<float> got(data.as<float>().begin(), data.as<float>().end());
      if (run == 0) {
        first = got;
      } else {
        EXPECT_EQ(got, first);
      }
    }
    if (t.rank() != root) return;
    for (size_t i = 0; i < count; ++i) {
      float expected = value((root + ranks - 1) % ranks, i);
      for (int hop = ranks - 2; hop >= 0; --hop)
        expected = value((root + hop) % ranks, i) + expected;
      // bagua::reduce adds the received partial sum into the rank's own value: own + incoming.
      ASSERT_EQ(first[i], expected) << "index " << i << " on " << ranks << " ranks";
    }
  });
}

TEST_P(Collectives, AlltoallDeliversChunkIOfRankJToChunkJOfRankI) {
  // Every form: pairwise, NCCL's grouped one, and grouped in waves of 1 and 2 peers (several waves
  // whenever P > 3), one after another on one tag.
  struct Form {
    std::string name;
    std::function<void(Transport&, const BufferView&, const BufferView&, Tag)> run;
  };
  const std::vector<Form> forms{
      {"pairwise",
       [](Transport& t, const BufferView& s, const BufferView& r, Tag tag) { alltoall(t, s, r, tag); }},
      {"nccl", [](Transport& t, const BufferView& s, const BufferView& r,
                  Tag tag) { alltoall(t, s, r, tag, AlltoallAlgo::kNccl); }},
      {"grouped, 1 peer per wave", [](Transport& t, const BufferView& s, const BufferView& r,
                                      Tag tag) { grouped_alltoall(t, s, r, tag, 1); }},
      {"grouped, 2 peers per wave", [](Transport& t, const BufferView& s, const BufferView& r,
                                       Tag tag) { grouped_alltoall(t, s, r, tag, 2); }},
  };
  run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    const size_t p = static_cast<size_t>(t.size());
    // Element e of the chunk rank `src` sends to rank `dst` is src * 100000 + dst * 1000 + e.
    auto value = [](size_t src, size_t dst, size_t e) {
      return static_cast<double>(src * 100000 + dst * 1000 + e);
    };
    for (const Form& form : forms) {
      for (size_t per_rank : {size_t{0}, size_t{1}, size_t{7}, size_t{999}})
        for (DType dtype : {DType::kF32, DType::kI32}) {
          const size_t count = per_rank * p;
          const Buffer send = Buffer::host(dtype, count);
          const Buffer recv = Buffer::host(dtype, count);
          fill(recv, -1);
          for (size_t dst = 0; dst < p; ++dst)
            for (size_t e = 0; e < per_rank; ++e)
              testing::set_element(send, dst * per_rank + e,
                                   value(static_cast<size_t>(t.rank()), dst, e));
          form.run(t, send, recv, 15);
          expect_elements(
              recv, 0, count,
              [&](size_t i) {
                return value(i / per_rank, static_cast<size_t>(t.rank()), i % per_rank);
              },
              t.rank(), describe("alltoall " + form.name, dtype, count, ""));
        }
      if (t.size() > 1) {
        const Buffer uneven = Buffer::host(DType::kF32, p + 1);
        const Buffer out = Buffer::host(DType::kF32, p + 1);
        EXPECT_THROW(form.run(t, uneven, out, 16), ConfigError) << form.name;
      }
      const Buffer a = Buffer::host(DType::kF32, p);
      const Buffer b = Buffer::host(DType::kF64, p);
      EXPECT_THROW(form.run(t, a, b, 16), ConfigError) << form.name;
    }
    const Buffer a = Buffer::host(DType::kF32, p);
    const Buffer b = Buffer::host(DType::kF32, p);
    EXPECT_THROW(grouped_alltoall(t, a, b, 16, -1), ConfigError);
  });
}

TEST(Alltoall, NcclsRoundsVisitEveryPeerOnceInItsQuadraticOrder) {
  // NCCL's own example (src/init.cc, above the p2pSchedule loop), 16 ranks: 0, 1, 3, 6, 10, 15, 5,
  // 12, 4, 13, 7, 2, 14, 11, 9, 8 (0, the rank itself, left out). For 5 ranks pow2Up is 8: 0, 1, 3,
  // 6, 2, 7, 5, 4 keeps 1, 3, 2, 4.
  EXPECT_EQ(nccl_p2p_rounds(16), (std::vector<int>{1, 3, 6, 10, 15, 5, 12, 4, 13, 7, 2, 14, 11, 9, 8}));
  EXPECT_EQ(nccl_p2p_rounds(5), (std::vector<int>{1, 3, 2, 4}));
  EXPECT_EQ(nccl_p2p_rounds(2), (std::vector<int>{1}));
  EXPECT_TRUE(nccl_p2p_rounds(1).empty());
  for (int ranks : {3, 7, 12, 16, 100, 128}) {
    std::vector<int> rounds = nccl_p2p_rounds(ranks);
    std::sort(rounds.begin(), rounds.end());
    std::vector<int> every(static_cast<size_t>(ranks - 1));
    std::iota(every.begin(), every.end(), 1);
    EXPECT_EQ(rounds, every) << ranks << " ranks";
  }
}

TEST(Alltoall, NcclsPeersInFlight) {
  // maxConcurrent = p2pnChannels / channels per peer x 8 (addP2pToPlan, src/enqueue.cc).
  // The paper's 16 host leaders, nChannels 2: p2pnChannels 2; per peer starts at 2, and 2 x ceil(16 /
  // 8) = 4 > 2 halves it to 1: 2 / 1 x 8 = 16 >= 15 peers, one wave.
  EXPECT_EQ(nccl_p2p_peers_per_wave(16, 16, 2), 16);
  // 128 ranks on 16 nodes: ceil(128 / 8) = 16 batches, per peer 1: 16 peers per wave (8 waves of 127).
  EXPECT_EQ(nccl_p2p_peers_per_wave(128, 16, 2), 16);
  // 4 nodes, 1 channel: p2pnChannels 1, per peer 2 x 1 > 1 halves to 1: 8.
  EXPECT_EQ(nccl_p2p_peers_per_wave(4, 4, 1), 8);
  // 3 channels: p2pnChannels pow2Up(3) = 4; 4 ranks, one batch: per peer 2 (2 x 1 <= 4): 4 / 2 x 8 = 16.
  EXPECT_EQ(nccl_p2p_peers_per_wave(4, 4, 3), 16);
  // One node: per peer min(p2pnChannels, 2): 2 channels -> 2 / 2 x 8 = 8.
  EXPECT_EQ(nccl_p2p_peers_per_wave(8, 1, 2), 8);
  EXPECT_THROW(nccl_p2p_peers_per_wave(4, 4, 0), ConfigError);
}

TEST_P(Collectives, NeighbourExchangeDeliversEachNeighboursData) {
  // Rank r sends r * 1000 + e. P >= 3: from_left holds rank r - 1's data, from_right rank r + 1's.
  // P = 2: from_left holds the other rank's, from_right keeps its -1s. P = 1: both keep their -1s.
  run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    const int p = t.size();
    const int r = t.rank();
    for (size_t count : {size_t{0}, size_t{1}, size_t{999}}) {
      const Buffer data = Buffer::host(DType::kF32, count);
      const Buffer from_left = Buffer::host(DType::kF32, count);
      const Buffer from_right = Buffer::host(DType::kF32, count);
      for (size_t e = 0; e < count; ++e)
        testing::set_element(data, e, r * 1000.0 + static_cast<double>(e));
      fill(from_left, -1);
      fill(from_right, -1);
      const int neighbours = neighbour_exchange(t, data, from_left, from_right, 17);
      EXPECT_EQ(neighbours, std::min(p - 1, 2)) << "rank " << r << " of " << p;
      const int left = mod(r - 1, p);
      const int right = mod(r + 1, p);
      expect_elements(
          from_left, 0, count,
          [&](size_t e) { return p == 1 ? -1.0 : left * 1000.0 + static_cast<double>(e); }, r,
          describe("neighbour_exchange from_left", DType::kF32, count, ""));
      expect_elements(
          from_right, 0, count,
          [&](size_t e) { return p <= 2 ? -1.0 : right * 1000.0 + static_cast<double>(e); }, r,
          describe("neighbour_exchange from_right", DType::kF32, count, ""));
    }
  });
}

// Recursive doubling's reduction order: the fold adds the even rank's data first (x_2c + x_2c+1 for
// core ranks c < extra, x_c+extra above), then every round adds the lower half's partial sum first,
// so core rank values v_0 .. v_core-1 combine as a balanced tree, ((v0 + v1) + (v2 + v3)) + ...
float recursive_doubling_sum(const std::function<float(int)>& value, int ranks) {
  int core = 1;
  while (core * 2 <= ranks)
    core *= 2;
  const int extra = ranks - core;
  std::vector<float> partial;
  for (int c = 0; c < core; ++c)
    partial.push_back(c < extra ? value(2 * c) + value(2 * c + 1) : value(c + extra));
  for (int width = 1; width < core; width *= 2)
    for (int c = 0; c < core; c += 2 * width)
      partial[static_cast<size_t>(c)] += partial[static_cast<size_t>(c + width)];
  return partial[0];
}

TEST(RecursiveDoubling, EveryRankEndsWithTheSameBitsOnOneToEightRanks) {
  // Values whose float sums depend on the order of the additions, on 1 .. 8 ranks (3, 5, 6 and 7 fold
  // ranks in) and odd element counts: every rank must hold exactly the sum in the order above, the
  // same bits everywhere (pairing the ranks in another order, say the largest distance first, would
  // differ in the last bits).
  for (testing::Backend backend : testing::all_backends())
    for (int ranks = 1; ranks <= 8; ++ranks)
      for (size_t count : {size_t{1}, size_t{7}, size_t{1001}}) {
        auto value = [](int rank, size_t i) {
          return 1.0f / static_cast<float>(3 + rank) + static_cast<float>(i) * 1e-3f;
        };
        testing::run_ranks(backend, ranks, [&](RankContext& ctx) {
          Transport& t = ctx.transport();
          const Buffer data = Buffer::host(DType::kF32, count);
          for (size_t i = 0; i < count; ++i)
            data.as<float>()[i] = value(t.rank(), i);
          recursive_doubling_allreduce(t, data, ReduceOp::kSum, 3);
          for (size_t i = 0; i < count; ++i) {
            const float expected = recursive_doubling_sum([&](int r) { return value(r, i); }, ranks);
            ASSERT_EQ(data.as<float>()[i], expected)
                << "index " << i << " of " << count << ", rank " << t.rank() << " of " << ranks
                << " on " << to_string(backend);
          }
        });
      }
}

TEST(RecursiveDoubling, MinOverANaNAgreesOnEveryRank) {
  // bagua::reduce's min is d := s < d ? s : d, so NaN op 1 = NaN but 1 op NaN = 1. Rank 0's NaN is the
  // leftmost operand of every partial result it enters (lower op higher, the fold's even rank first),
  // so every rank ends with NaN; a rank that put its own partial result on the left would keep 1.
  for (testing::Backend backend : testing::all_backends())
    for (int ranks = 2; ranks <= 8; ++ranks)
      testing::run_ranks(backend, ranks, [&](RankContext& ctx) {
        Transport& t = ctx.transport();
        const Buffer data = Buffer::host(DType::kF32, 3);
        fill(data, 1.0);
        if (t.rank() == 0) data.as<float>()[1] = std::numeric_limits<float>::quiet_NaN();
        recursive_doubling_allreduce(t, data, ReduceOp::kMin, 4);
        EXPECT_TRUE(std::isnan(data.as<float>()[1]))
            << "rank " << t.rank() << " of " << ranks << " on " << to_string(backend) << " holds "
            << data.as<float>()[1];
        EXPECT_EQ(data.as<float>()[0], 1.0f);
        EXPECT_EQ(data.as<float>()[2], 1.0f);
      });
}

TEST(RecursiveDoubling, ExactOnOneToEightRanksForEveryOpAndDtype) {
  // The closed-form contributions of expect.h (exact in any order) on 1 .. 8 ranks, odd counts.
  for (testing::Backend backend : testing::all_backends())
    for (int ranks = 1; ranks <= 8; ++ranks)
      testing::run_ranks(backend, ranks, [&](RankContext& ctx) {
        Transport& t = ctx.transport();
        Tag tag = 0;
        for (size_t count : {size_t{0}, size_t{1}, size_t{3}, size_t{1001}})
          for (DType dtype : kDTypes)
            for (ReduceOp op : kOps) {
              const Buffer data = Buffer::host(dtype, count);
              fill_contribution(data, t.rank(), ranks);
              recursive_doubling_allreduce(t, data, op, ++tag);
              expect_elements(
                  data, 0, count, [&](size_t i) { return reduced(op, ranks, i); }, t.rank(),
                  describe("recursive_doubling " + to_string(op) + " on " + to_string(backend), dtype,
                           count, ""));
            }
      });
}

TEST_P(Collectives, RootsOutsideTheGroupAreRejected) {
  run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    const Buffer data = Buffer::host(DType::kF32, 4);
    EXPECT_THROW(broadcast(t, data, t.size(), 17), ConfigError);
    EXPECT_THROW(reduce(t, data, -1, ReduceOp::kSum, 17), ConfigError);
  });
}

TEST_P(Collectives, MetaBuffersRunEveryCollective) {
  // Meta buffers carry no data; every collective must still complete (its bytes are checked against the
  // catalogue in cost_test.cc).
  run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    const size_t count = 1000 * static_cast<size_t>(t.size()) + 3;
    const Buffer data = Buffer::meta(DType::kF32, count);
    for (AllreduceAlgo algo : kAlgos)
      allreduce(t, data, ReduceOp::kSum, 20, algo);
    allreduce_average(t, data, 21);
    tree_allreduce(t, data, ReduceOp::kMax, 22, 100);
    reduce_scatter(t, data, ReduceOp::kSum, 23);
    allgather(t, data, 24);
    broadcast(t, data, t.size() - 1, 25, BroadcastAlgo::kBinomial);
    broadcast(t, data, 0, 26, BroadcastAlgo::kChain, 100);
    reduce(t, data, t.size() / 2, ReduceOp::kMin, 27);
    reduce(t, data, t.size() - 1, ReduceOp::kSum, 29, 100, ReduceAlgo::kChain);
    const Buffer send = Buffer::meta(DType::kF32, 10 * static_cast<size_t>(t.size()));
    const Buffer recv = Buffer::meta(DType::kF32, 10 * static_cast<size_t>(t.size()));
    alltoall(t, send, recv, 28);
    alltoall(t, send, recv, 30, AlltoallAlgo::kNccl);
    grouped_alltoall(t, send, recv, 31, 1);
    EXPECT_TRUE(data.is_meta());
    EXPECT_EQ(data.view().data(), nullptr);
  });
}

INSTANTIATE_TEST_SUITE_P(Worlds, Collectives, ::testing::ValuesIn(testing::all_worlds()),
                         testing::world_name);

std::vector<World> large_worlds() {
  std::vector<World> worlds;
  for (testing::Backend b : testing::all_backends())
    for (int p : {4, 8})
      worlds.push_back({b, p});
  return worlds;
}

// About a million elements, on 4 and 8 ranks and the bandwidth-bound algorithms only, to keep time low.
class LargeCollectives : public Collectives {};

TEST_P(LargeCollectives, AllreduceOfAMillionElements) {
  run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    const size_t count = (size_t{1} << 20) + 3;
    for (AllreduceAlgo algo : {AllreduceAlgo::kRing, AllreduceAlgo::kHalvingDoubling}) {
      const Buffer data = Buffer::host(DType::kF32, count);
      fill_contribution(data, t.rank(), t.size());
      allreduce(t, data, ReduceOp::kSum, 1, algo);
      expect_elements(
          data, 0, count, [&](size_t i) { return reduced(ReduceOp::kSum, t.size(), i); }, t.rank(),
          describe("allreduce " + to_string(algo), DType::kF32, count, ""));
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Worlds, LargeCollectives, ::testing::ValuesIn(large_worlds()),
                         testing::world_name);

}  // namespace
}  // namespace bagua::collectives
