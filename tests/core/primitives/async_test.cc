// Asynchronous model averaging and CHOCO gossip.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "core/algorithms/tags.h"
#include "core/collectives/collectives.h"
#include "core/ops.h"
#include "core/primitives/async_model_average.h"
#include "core/primitives/choco_gossip.h"
#include "netsim/simulation.h"
#include "tests/core/primitives/world_data.h"
#include "tests/support/worlds.h"

namespace bagua {
namespace {

using testing::average_input;
using testing::Backend;
using testing::input;
using testing::input_buffer;
using testing::Results;
using testing::where;

const Tag kData = tags::bucket(tags::kBackground, 0);
const Tag kControl = tags::bucket(tags::kControl, 0);

// Lets the calling stream pass time until `done()` holds (virtual time in the simulator).
template <class F>
void wait_until(RankContext& ctx, F done) {
  while (!done())
    ctx.clock().sleep(Time::us(200));
}

TEST(AsyncModelAverage, WithoutLocalUpdatesTheWeightsBecomeTheAverage) {
  // One round sets x := x + avg(x) - x = avg(x); later rounds keep it there.
  for (Backend backend : testing::all_backends())
    for (int ranks : {1, 2, 3, 4, 5, 8}) {
      const size_t n = 17;
      Results results(ranks);
      testing::run_ranks(backend, ranks, [&](RankContext& ctx) {
        const int rank = ctx.transport().rank();
        Buffer weights = input_buffer(rank, n);
        std::unique_ptr<Stream> comm = ctx.make_stream("communication");
        Communicator communicator(ctx.transport(), false);
        AsyncModelAverager averager(ctx, communicator, weights, {Time::ms(1), kData, kControl});
        averager.start(*comm);
        wait_until(ctx, [&] { return averager.rounds() >= 2; });
        averager.stop();
        comm->synchronize();
        results.set(rank, weights);
      });
      for (int rank = 0; rank < ranks; ++rank)
        for (size_t i = 0; i < n; ++i)
          ASSERT_NEAR(results[rank][i], average_input(ranks, i), 1e-5)
              << where(backend, ranks) << ", rank " << rank;
    }
}

TEST(AsyncModelAverage, AnAverageArrivingDuringComputeIsHeldBackAndKeepsLocalProgress) {
  // Every rank marks itself busy before the loop starts, so round 0's delta avg - x is held back. While
  // busy the rank adds 100 to its weights (local progress); end_compute applies the delta:
  //   x = x0 + 100 + (avg(x0) - x0) = avg(x0) + 100.
  // The next rounds average identical shifts, changing nothing.
  for (Backend backend : testing::all_backends()) {
    const int ranks = 3;
    const size_t n = 8;
    Results held(ranks), results(ranks);
    testing::run_ranks(backend, ranks, [&](RankContext& ctx) {
      const int rank = ctx.transport().rank();
      Buffer weights = input_buffer(rank, n);
      std::unique_ptr<Stream> comm = ctx.make_stream("communication");
      Communicator communicator(ctx.transport(), false);
      AsyncModelAverager averager(ctx, communicator, weights, {Time::ms(1), kData, kControl});
      averager.begin_compute();
      averager.start(*comm);
      wait_until(ctx, [&] { return averager.rounds() >= 1; });
      held.set(rank, weights);
      averager.locked([&] {
        for (float& v : weights.as<float>())
          v += 100.0f;
      });
      averager.end_compute();
      wait_until(ctx, [&] { return averager.rounds() >= 3; });
      averager.stop();
      comm->synchronize();
      results.set(rank, weights);
    });
    for (int rank = 0; rank < ranks; ++rank)
      for (size_t i = 0; i < n; ++i) {
        EXPECT_EQ(held[rank][i], input(rank, i)) << "applied while busy: rank " << rank;
        EXPECT_NEAR(results[rank][i], average_input(ranks, i) + 100.0, 1e-4)
            << testing::to_string(backend) << ", rank " << rank;
      }
  }
}

TEST(AsyncModelAverage, RanksStoppingAtDifferentTimesLeaveTogether) {
  // Rank 0 asks to stop at once; the others keep waiting for rounds. Every loop leaves at the first
  // round whose flag allreduce sees rank 0's request, so every rank completes the same number of
  // rounds.
  std::vector<int64_t> rounds(4);
  std::mutex mu;
  testing::run_ranks(Backend::kSim, 4, [&](RankContext& ctx) {
    const int rank = ctx.transport().rank();
    Buffer weights = input_buffer(rank, 4);
    std::unique_ptr<Stream> comm = ctx.make_stream("communication");
    Communicator communicator(ctx.transport(), false);
    AsyncModelAverager averager(ctx, communicator, weights, {Time::ms(1), kData, kControl});
    averager.start(*comm);
    if (rank != 0) ctx.clock().sleep(Time::ms(20));
    averager.stop();
    comm->synchronize();
    std::lock_guard<std::mutex> lock(mu);
    rounds[static_cast<size_t>(rank)] = averager.rounds();
  });
  for (int rank = 1; rank < 4; ++rank)
    EXPECT_EQ(rounds[static_cast<size_t>(rank)], rounds[0]) << "rank " << rank;
}

TEST(AsyncModelAverage, EachRoundRunsTheAllreduceItIsGiven) {
  // A round is the flag's allreduce and then the weights' (nothing else in it takes virtual time), so
  // on the simulator round 0 ends exactly when those two allreduces of `algo`, run directly from time 0,
  // end. Polled every 10 ns, rounds() turns 1 at the first poll at or after that instant. On 4 hosts of
  // timing_star, 64 KiB, the bulk-synchronous ring (6 steps, each a 1 us hop and 16 KiB at 100 Gbps)
  // and NCCL's choice (which pays NCCL's own base latencies) end about 28 and 36 us after 0, so a loop
  // that ignored `algo` fails one of the two.
  const int ranks = 4;
  const size_t n = 16384;  // 64 KiB of f32
  std::map<collectives::AllreduceAlgo, Time> direct, polled;
  for (collectives::AllreduceAlgo algo :
       {collectives::AllreduceAlgo::kRing, collectives::AllreduceAlgo::kNccl}) {
    std::vector<Time> direct_end(ranks), polled_end(ranks);
    netsim::Simulation(testing::timing_star(ranks)).run([&](RankContext& ctx) {
      const int rank = ctx.transport().rank();
      Buffer flag = Buffer::host(DType::kI32, 1);
      fill(flag, 1.0);
      Buffer data = input_buffer(rank, n);
      collectives::allreduce(ctx.transport(), flag, ReduceOp::kMin, kControl, algo);
      collectives::allreduce(ctx.transport(), data, ReduceOp::kSum, kData, algo);
      direct_end[static_cast<size_t>(rank)] = ctx.clock().now();
    });
    netsim::Simulation(testing::timing_star(ranks)).run([&](RankContext& ctx) {
      const int rank = ctx.transport().rank();
      Buffer weights = input_buffer(rank, n);
      std::unique_ptr<Stream> comm = ctx.make_stream("communication");
      Communicator communicator(ctx.transport(), false);
      AsyncModelAveragerOptions options{Time::ms(1), kData, kControl};
      options.algo = algo;
      AsyncModelAverager averager(ctx, communicator, weights, options);
      averager.start(*comm);
      while (averager.rounds() < 1)
        ctx.clock().sleep(Time::ns(10));
      polled_end[static_cast<size_t>(rank)] = ctx.clock().now();
      averager.stop();
      comm->synchronize();
    });
    direct[algo] = *std::max_element(direct_end.begin(), direct_end.end());
    polled[algo] = *std::max_element(polled_end.begin(), polled_end.end());
    EXPECT_GE(polled[algo], direct[algo]) << collectives::to_string(algo);
    EXPECT_LT(polled[algo], direct[algo] + Time::ns(10)) << collectives::to_string(algo);
  }
  const Time ring = direct[collectives::AllreduceAlgo::kRing];
  const Time nccl = direct[collectives::AllreduceAlgo::kNccl];
  EXPECT_GT(std::max(ring, nccl) - std::min(ring, nccl), Time::us(1));
}

TEST(AsyncModelAverage, NeverStartedStopsAtOnce) {
  testing::run_ranks(Backend::kThreads, 2, [&](RankContext& ctx) {
    Buffer weights = input_buffer(0, 4);
    Communicator communicator(ctx.transport(), false);
    AsyncModelAverager averager(ctx, communicator, weights, {Time::ms(1), kData, kControl});
    averager.stop();
    EXPECT_EQ(averager.rounds(), 0);
  });
}

// ---- CHOCO gossip
// --------------------------------------------------------------------------------------

TEST(ChocoGossip, IdentityWithUnitStepIsExactRingAveraging) {
  // x̂ starts at 0, so q = x, x̂ = x and s = sum_j W_rj x_j; gamma = 1 gives x := s.
  const CompressorRegistry registry = testing::compressor_registry();
  const CompressorFactory factory = compressor_factory(registry, "identity", Params(), false);
  for (Backend backend : testing::all_backends())
    for (int ranks : {1, 2, 3, 4, 5, 8}) {
      const size_t n = 10;
      Results results(ranks);
      testing::run_ranks(backend, ranks, [&](RankContext& ctx) {
        const int rank = ctx.transport().rank();
        Buffer weights = input_buffer(rank, n);
        Communicator communicator(ctx.transport(), false);
        ChocoGossip gossip(ctx, communicator, weights, {factory, 1.0});
        gossip.step(weights, 5);
        results.set(rank, weights);
      });
      for (int r = 0; r < ranks; ++r)
        for (size_t i = 0; i < n; ++i) {
          double expected;
          if (ranks == 1)
            expected = input(0, i);
          else if (ranks == 2)
            expected = (input(0, i) + input(1, i)) / 2;
          else
            expected =
                (input((r + ranks - 1) % ranks, i) + input(r, i) + input((r + 1) % ranks, i)) / 3;
          ASSERT_NEAR(results[r][i], expected, 1e-5) << where(backend, ranks) << ", rank " << r;
        }
    }
}

TEST(ChocoGossip, CompressedGossipKeepsTheMeanAndReachesConsensus) {
  // W is doubly stochastic, so every step keeps sum_r x_r (in exact arithmetic): sum_r (s_r - x̂_r) = 0.
  // With top-50% sparsification and gamma = 0.3 the spread across ranks shrinks (CHOCO-GOSSIP converges
  // linearly, Koloskova et al. 2019, Theorem 2).
  const CompressorRegistry registry = testing::compressor_registry();
  Params p;
  p.set("ratio", 0.5);
  const CompressorFactory factory = compressor_factory(registry, "topk", p, false);
  const int ranks = 5;
  const size_t n = 16;
  Results results(ranks);
  testing::run_ranks(Backend::kSim, ranks, [&](RankContext& ctx) {
    const int rank = ctx.transport().rank();
    Buffer weights = input_buffer(rank, n);
    Communicator communicator(ctx.transport(), false);
    ChocoGossip gossip(ctx, communicator, weights, {factory, 0.3});
    for (int step = 0; step < 300; ++step)
      gossip.step(weights, 5);
    results.set(rank, weights);
  });
  double initial_spread = 0, final_spread = 0;
  for (size_t i = 0; i < n; ++i) {
    double mean = 0, lo = 1e30, hi = -1e30, lo0 = 1e30, hi0 = -1e30;
    for (int r = 0; r < ranks; ++r) {
      mean += results[r][i] / ranks;
      lo = std::min<double>(lo, results[r][i]), hi = std::max<double>(hi, results[r][i]);
      lo0 = std::min<double>(lo0, input(r, i)), hi0 = std::max<double>(hi0, input(r, i));
    }
    EXPECT_NEAR(mean, average_input(ranks, i), 1e-4) << "element " << i;
    initial_spread = std::max(initial_spread, hi0 - lo0);
    final_spread = std::max(final_spread, hi - lo);
  }
  EXPECT_LT(final_spread, 1e-3 * initial_spread);
}

// Hierarchical CHOCO gossip: each host is one node of the leaders' ring.
Results run_hierarchical_choco(Backend backend, int hosts, int per_host, size_t n,
                               const CompressorFactory& factory, double gamma, int steps) {
  const int ranks = hosts * per_host;
  Results results(ranks);
  testing::run_ranks(
      backend, ranks,
      [&](RankContext& ctx) {
        const int rank = ctx.transport().rank();
        Buffer weights = input_buffer(rank, n);
        Communicator communicator(ctx.transport(), true);
        ChocoGossip gossip(ctx, communicator, weights, {factory, gamma});
        for (int step = 0; step < steps; ++step)
          gossip.step(weights, 5);
        results.set(rank, weights);
      },
      per_host);
  return results;
}

// The average over host h's ranks (ranks numbered host by host) of input(rank, i).
double host_average(int h, int per_host, size_t i) {
  double sum = 0;
  for (int k = 0; k < per_host; ++k)
    sum += input(h * per_host + k, i);
  return sum / per_host;
}

TEST(ChocoGossip, HierarchicalIdentityWithUnitStepAveragesHostAveragesOverTheHostRing) {
  // 4 hosts of 2: the leader of host h starts from a_h = (x_{2h} + x_{2h+1}) / 2; identity, gamma 1:
  // a_h := (a_{h-1} + a_h + a_{h+1}) / 3 (mod 4), broadcast to both ranks of the host. 2 hosts of 3:
  // the leaders' ring has two nodes, so every rank ends with (a_0 + a_1) / 2.
  const CompressorRegistry registry = testing::compressor_registry();
  const CompressorFactory factory = compressor_factory(registry, "identity", Params(), false);
  const size_t n = 7;
  for (Backend backend : testing::all_backends()) {
    Results four = run_hierarchical_choco(backend, 4, 2, n, factory, 1.0, 1);
    for (int rank = 0; rank < 8; ++rank) {
      const int h = rank / 2;
      for (size_t i = 0; i < n; ++i) {
        const double expected = (host_average((h + 3) % 4, 2, i) + host_average(h, 2, i) +
                                 host_average((h + 1) % 4, 2, i)) /
                                3;
        ASSERT_NEAR(four[rank][i], expected, 1e-5) << where(backend, 8) << ", rank " << rank;
      }
    }
    Results two = run_hierarchical_choco(backend, 2, 3, n, factory, 1.0, 1);
    for (int rank = 0; rank < 6; ++rank)
      for (size_t i = 0; i < n; ++i)
        ASSERT_NEAR(two[rank][i], (host_average(0, 3, i) + host_average(1, 3, i)) / 2, 1e-5)
            << where(backend, 6) << ", rank " << rank;
  }
}

TEST(ChocoGossip, HierarchicalCompressedGossipKeepsTheMeanAndReachesConsensus) {
  // 5 hosts of 2, top-50% and gamma = 0.3, as the flat test: the leaders' gossip keeps the mean of the
  // host averages, which is the mean of all ten inputs, and brings every host to it; the ranks of a
  // host hold the same weights after every step (the intra-host broadcast).
  const CompressorRegistry registry = testing::compressor_registry();
  Params p;
  p.set("ratio", 0.5);
  const CompressorFactory factory = compressor_factory(registry, "topk", p, false);
  const size_t n = 16;
  const int ranks = 10;
  Results results = run_hierarchical_choco(Backend::kSim, 5, 2, n, factory, 0.3, 300);
  double initial_spread = 0, final_spread = 0;
  for (size_t i = 0; i < n; ++i) {
    double mean = 0, lo = 1e30, hi = -1e30, lo0 = 1e30, hi0 = -1e30;
    for (int r = 0; r < ranks; ++r) {
      mean += results[r][i] / ranks;
      lo = std::min<double>(lo, results[r][i]), hi = std::max<double>(hi, results[r][i]);
      EXPECT_EQ(results[r][i], results[r - r % 2][i])
          << "rank " << r << " and its leader, element " << i;
    }
    for (int h = 0; h < 5; ++h) {
      lo0 = std::min(lo0, host_average(h, 2, i));
      hi0 = std::max(hi0, host_average(h, 2, i));
    }
    EXPECT_NEAR(mean, average_input(ranks, i), 1e-4) << "element " << i;
    initial_spread = std::max(initial_spread, hi0 - lo0);
    final_spread = std::max(final_spread, hi - lo);
  }
  EXPECT_GT(initial_spread, 0);
  EXPECT_LT(final_spread, 1e-3 * initial_spread);
}

}  // namespace
}  // namespace bagua
