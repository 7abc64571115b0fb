// D_FP_S (all, shift_one, ring) and D_LP_S against reference computations.
#include "core/primitives/decentralized.h"

#include <gtest/gtest.h>

#include <cstring>

#include "core/ops.h"
#include "core/primitives/communicator.h"
#include "core/primitives/decentralized_low_precision.h"
#include "tests/core/primitives/world_data.h"

namespace bagua {
namespace {

// Apart from the same-named helpers of test_primitives's other files: the sanitizer presets
// compile several files of a program as one (CMAKE_UNITY_BUILD, CMakePresets.json).
namespace decentralized_test {

using testing::average_input;
using testing::Backend;
using testing::input;
using testing::input_buffer;
using testing::Results;
using testing::where;

constexpr Tag kTag = 11;
const int kRankCounts[] = {1, 2, 3, 4, 5, 8};

// Each rank's peer weights after one D_FP_S step from its input of n elements.
Results run_full_precision(Backend backend, int ranks, int per_host, size_t n, PeerMode mode,
                           bool hierarchical) {
  Results results(ranks);
  testing::run_ranks(
      backend, ranks,
      [&](RankContext& ctx) {
        const int rank = ctx.transport().rank();
        Buffer weights = input_buffer(rank, n);
        Buffer peer = Buffer::host(DType::kF32, n);
        Communicator communicator(ctx.transport(), hierarchical);
        DecentralizedFullPrecision primitive(ctx, communicator, weights, {mode, "test"});
        primitive.average(weights, peer, kTag);
        results.set(rank, peer);
        // The weights themselves are only read.
        for (size_t i = 0; i < n; ++i)
          EXPECT_EQ(weights.as<float>()[i], input(rank, i));
      },
      per_host);
  return results;
}

TEST(DecentralizedFullPrecision, AllIsTheAverage) {
  for (Backend backend : testing::all_backends())
    for (int ranks : kRankCounts) {
      Results r = run_full_precision(backend, ranks, 1, 23, PeerMode::kAll, false);
      for (int rank = 0; rank < ranks; ++rank)
        for (size_t i = 0; i < 23; ++i)
          ASSERT_NEAR(r[rank][i], average_input(ranks, i), 1e-5)
              << where(backend, ranks) << ", rank " << rank;
    }
}

TEST(DecentralizedFullPrecision, RingAveragesSelfAndBothNeighbours) {
  // P >= 3: (x_{r-1} + x_r + x_{r+1}) / 3. P = 2: (x_0 + x_1) / 2. P = 1: x_0.
  for (Backend backend : testing::all_backends())
    for (int ranks : kRankCounts) {
      Results r = run_full_precision(backend, ranks, 1, 23, PeerMode::kRing, false);
      for (int rank = 0; rank < ranks; ++rank)
        for (size_t i = 0; i < 23; ++i) {
          double expected;
          if (ranks == 1)
            expected = input(0, i);
          else if (ranks == 2)
            expected = (input(0, i) + input(1, i)) / 2.0;
          else
            expected =
                (input((rank + ranks - 1) % ranks, i) + input(rank, i) + input((rank + 1) % ranks, i)) /
                3.0;
          ASSERT_NEAR(r[rank][i], expected, 1e-5)
              << where(backend, ranks) << ", rank " << rank << ", element " << i;
        }
    }
}

// Bagua's shift_one peer (decentralized_full_precision_synchronous.rs), P = 8, so P/2 = 4 and
// (P + 1) / 2 = 4 in integer arithmetic:
//   r <  4:  peer = (s + r) mod 4 + 4
//   r >= 4:  peer = (r - 4 - s) mod_euclid 4
// Worked by hand for steps s = 0..3; row s, column r.
const int kShiftOneTable[4][8] = {
    {4, 5, 6, 7, 0, 1, 2, 3},  // s = 0: r + 4 for the first half, r - 4 for the second
    {5, 6, 7, 4, 3, 0, 1, 2},  // s = 1: 0 -> 1 + 4 = 5; 4 -> (0 - 1) mod 4 = 3; 5 -> 0
    {6, 7, 4, 5, 2, 3, 0, 1},  // s = 2: 0 -> 6; 2 -> (2 + 2) mod 4 + 4 = 4; 4 -> (-2) mod 4 = 2
    {7, 4, 5, 6, 1, 2, 3, 0},  // s = 3: 0 -> 7; 1 -> 4; 4 -> (-3) mod 4 = 1; 7 -> (3 - 3) = 0
};

TEST(DecentralizedFullPrecision, ShiftOnePairingForEightRanksFollowsBaguasFormula) {
  for (int s = 0; s < 4; ++s)
    for (int r = 0; r < 8; ++r) {
      EXPECT_EQ(shift_one_peer(r, 8, s), kShiftOneTable[s][r]) << "step " << s << ", rank " << r;
      // Pairs are symmetric.
      EXPECT_EQ(shift_one_peer(kShiftOneTable[s][r], 8, s), r) << "step " << s << ", rank " << r;
    }
}

TEST(DecentralizedFullPrecision, ShiftOneAveragesWithTheStepsPeer) {
  // Weights x_r = r (constant vectors); after step s, peer weights = (r + peer(r, s)) / 2.
  for (Backend backend : testing::all_backends()) {
    std::vector<std::vector<float>> got(8);
    std::mutex mu;
    testing::run_ranks(backend, 8, [&](RankContext& ctx) {
      const int rank = ctx.transport().rank();
      Buffer weights = Buffer::host(DType::kF32, 3);
      Buffer peer = Buffer::host(DType::kF32, 3);
      fill(weights, rank);
      Communicator communicator(ctx.transport(), false);
      DecentralizedFullPrecision primitive(ctx, communicator, weights, {PeerMode::kShiftOne, "test"});
      for (int s = 0; s < 4; ++s) {
        primitive.average(weights, peer, kTag);
        std::lock_guard<std::mutex> lock(mu);
        got[static_cast<size_t>(rank)].push_back(peer.as<float>()[2]);
      }
      EXPECT_EQ(primitive.step(), 4);
    });
    for (int r = 0; r < 8; ++r)
      for (int s = 0; s < 4; ++s)
        EXPECT_EQ(got[static_cast<size_t>(r)][static_cast<size_t>(s)],
                  (r + kShiftOneTable[s][r]) / 2.0f)
            << testing::to_string(backend) << ": step " << s << ", rank " << r;
  }
}

TEST(DecentralizedFullPrecision, ShiftOneRejectsAnOddNumberOfRanks) {
  for (int ranks : {1, 3, 5}) {
    try {
      run_full_precision(Backend::kThreads, ranks, 1, 4, PeerMode::kShiftOne, false);
      ADD_FAILURE() << "no error for " << ranks << " ranks";
    } catch (const ConfigError& e) {
      EXPECT_EQ(std::string(e.what()),
                "test: peer_selection_mode shift_one needs an even number of ranks, got " +
                    std::to_string(ranks));
    }
  }
  // Hierarchical: the count that matters is the number of hosts (3 hosts of 2 ranks).
  try {
    run_full_precision(Backend::kThreads, 6, 2, 4, PeerMode::kShiftOne, true);
    ADD_FAILURE() << "no error for 3 hosts";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("of hosts, as hierarchical is on), got 3"), std::string::npos)
        << e.what();
  }
}

TEST(DecentralizedFullPrecision, HierarchicalAllEqualsFlatAll) {
  for (Backend backend : testing::all_backends())
    for (auto [hosts, per_host] : {std::pair{2, 2}, std::pair{2, 3}, std::pair{3, 2}}) {
      const int ranks = hosts * per_host;
      Results flat = run_full_precision(backend, ranks, per_host, 19, PeerMode::kAll, false);
      Results hier = run_full_precision(backend, ranks, per_host, 19, PeerMode::kAll, true);
      for (int rank = 0; rank < ranks; ++rank)
        for (size_t i = 0; i < 19; ++i) {
          ASSERT_NEAR(flat[rank][i], average_input(ranks, i), 1e-5) << where(backend, ranks, per_host);
          ASSERT_NEAR(hier[rank][i], flat[rank][i], 1e-5) << where(backend, ranks, per_host);
        }
    }
}

TEST(DecentralizedFullPrecision, HierarchicalRingAveragesHostAveragesOverTheHostRing) {
  // 3 hosts of 2: host h's average a_h = (x_{2h} + x_{2h+1}) / 2; every rank of host h ends with
  // (a_{h-1} + a_h + a_{h+1}) / 3 = the average of all six inputs.
  Results r = run_full_precision(Backend::kSim, 6, 2, 9, PeerMode::kRing, true);
  for (int rank = 0; rank < 6; ++rank)
    for (size_t i = 0; i < 9; ++i)
      EXPECT_NEAR(r[rank][i], average_input(6, i), 1e-5) << "rank " << rank;
}

// ---- D_LP_S
// --------------------------------------------------------------------------------------------

// One rank's state after a D_LP_S step.
struct LowPrecisionState {
  std::vector<float> weights, own, left, right;
};

std::vector<float> to_vector(const BufferView& v) {
  auto s = v.as<float>();
  return {s.begin(), s.end()};
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Runs `steps` D_LP_S steps with compressor `name`; between steps every rank moves its weights by a
// rank-dependent local update. Returns states[step][rank].
std::vector<std::vector<LowPrecisionState>> run_low_precision(Backend backend, int ranks, size_t n,
                                                              int steps, const std::string& name) {
  const CompressorRegistry registry = testing::compressor_registry();
  const CompressorFactory factory = compressor_factory(registry, name, Params(), false);
  std::vector<std::vector<LowPrecisionState>> states(
      static_cast<size_t>(steps), std::vector<LowPrecisionState>(static_cast<size_t>(ranks)));
  std::mutex mu;
  testing::run_ranks(backend, ranks, [&](RankContext& ctx) {
    const int rank = ctx.transport().rank();
    Buffer weights = input_buffer(0, n);  // identical initial weights, as a trainer starts
    Communicator communicator(ctx.transport(), false);
    DecentralizedLowPrecision primitive(ctx, communicator, weights, {factory});
    Buffer update = input_buffer(rank + 3, n);
    for (int step = 0; step < steps; ++step) {
      axpy(weights, 0.1, update);  // a local step
      primitive.step(weights, kTag);
      std::lock_guard<std::mutex> lock(mu);
      states[static_cast<size_t>(step)][static_cast<size_t>(rank)] = {
          to_vector(weights), to_vector(primitive.own()), to_vector(primitive.left_peer()),
          to_vector(primitive.right_peer())};
    }
  });
  return states;
}

TEST(DecentralizedLowPrecision, ReplicasStayBitIdenticalToThePublicWeights) {
  for (Backend backend : testing::all_backends())
    for (int ranks : kRankCounts)
      for (const char* name : {"minmax_uint8", "sign"}) {
        auto states = run_low_precision(backend, ranks, 45, 4, name);
        for (size_t step = 0; step < states.size(); ++step)
          for (int r = 0; r < ranks; ++r) {
            const auto& me = states[step][static_cast<size_t>(r)];
            const auto& left = states[step][static_cast<size_t>((r + ranks - 1) % ranks)];
            const auto& right = states[step][static_cast<size_t>((r + 1) % ranks)];
            const std::string at = where(backend, ranks) + ", " + name + ", step " +
                                   std::to_string(step) + ", rank " + std::to_string(r);
            EXPECT_TRUE(bitwise_equal(me.weights, me.own)) << "weights are the public weights: " << at;
            EXPECT_TRUE(bitwise_equal(left.right, me.own)) << "left neighbour's replica: " << at;
            EXPECT_TRUE(bitwise_equal(right.left, me.own)) << "right neighbour's replica: " << at;
          }
      }
}

TEST(DecentralizedLowPrecision, IdentityCompressorFollowsTheRingUpdate) {
  // Identity compression: after every step x_r = x̂_r, and a step from local weights y_r gives
  //   x_r := y_r + (x̂_{r-1} + x̂_r + x̂_{r+1}) / 3 - x̂_r            (P >= 3; P = 2: r-1 = r+1, the
  //                                                                   other rank, whose c arrives once)
  // with the public weights x̂ of the previous step. Check step 2 against a recomputation from step 1.
  for (int ranks : {2, 3, 4, 5}) {
    const size_t n = 12;
    auto states = run_low_precision(Backend::kSim, ranks, n, 2, "identity");
    for (int r = 0; r < ranks; ++r) {
      const auto& prev = states[0];
      const int l = (r + ranks - 1) % ranks, rr = (r + 1) % ranks;
      Buffer update = input_buffer(r + 3, n);
      for (size_t i = 0; i < n; ++i) {
        const double public_self = prev[static_cast<size_t>(r)].own[i];
        const double local = public_self + 0.1 * update.as<float>()[i];
        const double mix =
            (prev[static_cast<size_t>(l)].own[i] + public_self + prev[static_cast<size_t>(rr)].own[i]) /
            3;
        EXPECT_NEAR(states[1][static_cast<size_t>(r)].weights[i], local + mix - public_self, 1e-5)
            << ranks << " ranks, rank " << r << ", element " << i;
      }
    }
  }
}

}  // namespace decentralized_test
}  // namespace
}  // namespace bagua
