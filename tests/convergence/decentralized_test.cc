// Decentralized methods: D-PSGD (decentralized, all / ring / shift_one), its low-precision form and
// CHOCO-SGD. They are not exact: every rank keeps its own weights, so the reported loss (the mean over
// ranks of each rank's full-data loss) carries the ranks' disagreement. Theory (Lian et al., "Can
// Decentralized Algorithms Outperform Centralized Algorithms?", NeurIPS 2017; Koloskova et al., "A
// Unified Theory of Decentralized SGD", ICML 2020) predicts: the average of the ranks' weights follows
// SGD with gradients taken near it; the disagreement settles at a floor proportional to the learning
// rate and growing with the mixing time of the graph (complete graph < shift_one, ring).
#include "core/primitives/decentralized.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/convergence/harness.h"
#include "tests/convergence/settings.h"

namespace bagua::convergence {
namespace {

// Apart from the same-named helpers of test_convergence's other files: the sanitizer presets
// compile several files of a program as one (CMAKE_UNITY_BUILD, CMakePresets.json).
namespace decentralized_test {

Outcome linear(const std::string& algorithm, const char* workload = kLinear, double lr = kLinearLr) {
  return run(config_text(workload, algorithm, lr, kIterations));
}

// The last step of every rank, recomputed from the weights all ranks held before it:
//   x_T^r = sum_j W_rj x_{T-1}^j - lr g_r(x_{T-1}^r)          (D-PSGD, Bagua's decentralized)
//   x_T^r = sum_j W_rj (x_{T-1}^j - lr g_j(x_{T-1}^j))         (CHOCO-SGD, exact gossip, gamma 1)
// with g_r rank r's batch gradient at its own weights and W the peer mode's mixing matrix at step T-1.
enum class Order { kMixThenStep, kStepThenMix };

void expect_last_step(const Outcome& o, const std::function<double(int r, int j)>& mixing,
                      Order order) {
  const int64_t last = o.iterations - 1;
  const int p = o.world_size;
  std::vector<Weights> stepped(static_cast<size_t>(p)), gradient(static_cast<size_t>(p));
  for (int r = 0; r < p; ++r) {
    gradient[static_cast<size_t>(r)] = o.batch_gradient(r, last, o.before_last[static_cast<size_t>(r)]);
    stepped[static_cast<size_t>(r)] = o.before_last[static_cast<size_t>(r)];
    for (size_t i = 0; i < stepped[static_cast<size_t>(r)].size(); ++i)
      stepped[static_cast<size_t>(r)][i] -= o.lr * gradient[static_cast<size_t>(r)][i];
  }
  for (int r = 0; r < p; ++r) {
    const size_t n = o.before_last[0].size();
    Weights expected(n, 0.0);
    for (int j = 0; j < p; ++j) {
      const double w = mixing(r, j);
      const Weights& x = order == Order::kMixThenStep ? o.before_last[static_cast<size_t>(j)]
                                                      : stepped[static_cast<size_t>(j)];
      for (size_t i = 0; i < n; ++i)
        expected[i] += w * x[i];
    }
    if (order == Order::kMixThenStep)
      for (size_t i = 0; i < n; ++i)
        expected[i] -= o.lr * gradient[static_cast<size_t>(r)][i];
    // float32 arithmetic on the ranks against double here: a few ulps of the weights.
    EXPECT_LT(relative_distance(o.final_weights[static_cast<size_t>(r)], expected), 1e-6)
        << "rank " << r;
  }
}

TEST(Decentralized, EachPeerModeStepsFromItsPeerAverage) {
  const int last = kIterations - 1;
  {
    SCOPED_TRACE("all: W_rj = 1/P");
    const Outcome o = linear(R"({"name": "decentralized", "hierarchical": false})");
    expect_last_step(
        o, [](int, int) { return 1.0 / kRanks; }, Order::kMixThenStep);
  }
  {
    SCOPED_TRACE("ring: W_rj = 1/3 for j in {r - 1, r, r + 1}");
    const Outcome o =
        linear(R"({"name": "decentralized", "hierarchical": false, "peer_selection_mode": "ring"})");
    expect_last_step(
        o,
        [](int r, int j) {
          const int d = (j - r + kRanks) % kRanks;
          return d == 0 || d == 1 || d == kRanks - 1 ? 1.0 / 3.0 : 0.0;
        },
        Order::kMixThenStep);
  }
  {
    SCOPED_TRACE("shift_one: W_rj = 1/2 for j in {r, peer of r at communication step T - 1}");
    const Outcome o = linear(
        R"({"name": "decentralized", "hierarchical": false, "peer_selection_mode": "shift_one"})");
    expect_last_step(
        o, [last](int r, int j) { return j == r || j == shift_one_peer(r, kRanks, last) ? 0.5 : 0.0; },
        Order::kMixThenStep);
  }
  {
    // CHOCO-SGD with an exact compressor and gamma 1: the public copies become the stepped weights and
    // x := x + sum_j W_rj (x̂_j - x̂_r) = sum_j W_rj x̂_j, the ring average of the stepped weights
    // (core/primitives/choco_gossip.h).
    SCOPED_TRACE("choco_sgd, identity compressor, gamma 1: the ring average after the local step");
    const Outcome o = linear(R"({"name": "choco_sgd", "compressor": "identity", "gamma": 1.0})");
    expect_last_step(
        o,
        [](int r, int j) {
          const int d = (j - r + kRanks) % kRanks;
          return d == 0 || d == 1 || d == kRanks - 1 ? 1.0 / 3.0 : 0.0;
        },
        Order::kStepThenMix);
  }
}

TEST(Decentralized, CompleteGraphAveragingIsSgdUpToTheLocalStep) {
  // D-PSGD with peer mode "all": x_{t+1}^r = mean_j x_t^j - lr g_r(x_t^r). The average follows
  // xbar_{t+1} = xbar_t - lr mean_r g_r(x_t^r): SGD whose gradients are taken a local step away from
  // xbar, so its gap settles at the baseline's floor (up to O(lr^2) terms). Each rank's weights are
  // xbar plus its own last step, -lr (g_r - mean_j g_j): for least squares the mean of the ranks'
  // losses exceeds the loss of xbar by exactly (1/2) mean_r |x_r - xbar|^2_H, and at the optimum
  // g_r - mean_j g_j has covariance (1 - 1/P) sigma^2 H / b (per-sample gradients x (x.w - y) have
  // covariance sigma^2 H there; H = X X^T / N, about the identity). So the predicted offset is
  //   (1/2) lr^2 (1 - 1/P) sigma^2 tr(H^2) / b ~ (1/2) 0.05^2 (7/8) 0.01 x 32 / 16 = 2.19e-5,
  // with tr(H^2) = d up to the spread of H's eigenvalues ([0.83, 1.19]): we allow a factor 2 either
  // way.
  const Outcome baseline = linear(kBaseline);
  const Outcome all = linear(R"({"name": "decentralized", "hierarchical": false})");
  const double predicted = 0.5 * kLinearLr * kLinearLr * (1.0 - 1.0 / kRanks) * 0.01 * 32 / 16;
  const double average_gap = all.gap(all.average());
  EXPECT_LT(average_gap, 1.5 * baseline.mean_gap());
  const double offset = all.mean_gap() - average_gap;
  EXPECT_GT(offset, 0.5 * predicted);
  EXPECT_LT(offset, 2.0 * predicted);
}

TEST(Decentralized, ConsensusFloorIsProportionalToTheLearningRate) {
  // On label-skewed shards the ranks' gradients disagree even at the optimum. The disagreement
  // d_{t+1} = W d_t - lr (g_t - mean g_t) settles where mixing (contracting d by the second eigenvalue
  // of W per step) balances the local steps: |d| ~ lr x (gradient disagreement) / (1 - lambda_2), a
  // floor proportional to lr (Koloskova et al. 2020, Lemma on consensus distance). Halving lr halves
  // it; a method that did not average would instead drift towards each rank's own optimum, a distance
  // that does not shrink with lr. Complete-graph averaging (lambda_2 = 0) disagrees least.
  double at_lr[3][2];
  const char* modes[3] = {"all", "ring", "shift_one"};
  for (int m = 0; m < 3; ++m) {
    for (int k = 0; k < 2; ++k) {
      const double lr = kLogisticLr / (k + 1);
      const Outcome o =
          run(config_text(kLogisticSkewed,
                          std::string(R"({"name": "decentralized", "hierarchical": false,)") +
                              R"( "peer_selection_mode": ")" + modes[m] + "\"}",
                          lr, kIterations));
      at_lr[m][k] = o.consensus_distance();
    }
    SCOPED_TRACE(modes[m]);
    EXPECT_GT(at_lr[m][0] / at_lr[m][1], 1.5);
    EXPECT_LT(at_lr[m][0] / at_lr[m][1], 2.5);
  }
  EXPECT_GT(at_lr[1][0], at_lr[0][0]) << "ring mixes more slowly than the complete graph";
  EXPECT_GT(at_lr[2][0], at_lr[0][0]) << "shift_one mixes more slowly than the complete graph";
}

TEST(Decentralized, CompressedGossipStaysInTheNeighbourhoodOfExactGossip) {
  const Outcome ring =
      linear(R"({"name": "decentralized", "hierarchical": false, "peer_selection_mode": "ring"})");
  // D_LP_S compresses the *difference* between the new and the published weights, so its MinMax uint8
  // error (half a step of the difference's range / 255) shrinks with the differences; with or without
  // error feedback it follows exact ring averaging: within 5% in gap and disagreement.
  for (const std::string algorithm :
       {R"({"name": "low_precision_decentralized", "hierarchical": false})",
        R"({"name": "low_precision_decentralized", "hierarchical": false, "error_feedback": true})"}) {
    SCOPED_TRACE(algorithm);
    const Outcome o = linear(algorithm);
    EXPECT_NEAR(o.mean_gap(), ring.mean_gap(), 0.05 * ring.mean_gap());
    EXPECT_NEAR(o.consensus_distance(), ring.consensus_distance(), 0.05 * ring.consensus_distance());
  }
  // CHOCO-SGD with 1-bit (scaled sign) gossip, gamma 0.4: its public copies converge to the weights
  // (Koloskova, Stich and Jaggi, ICML 2019, Thm. 4.1: the rate of exact D-PSGD up to a constant that
  // depends on the compression and gamma), so its gap stays within a small factor of exact ring
  // averaging's, here 3, on IID and on skewed data. Were the gossip lost, the ranks would train alone:
  // on the skewed shards their disagreement would be that of independent models, over ten times more.
  const Outcome choco = linear(R"({"name": "choco_sgd"})");
  EXPECT_LT(choco.mean_gap(), 3 * ring.mean_gap());
  const Outcome ring_skewed = run(
      config_text(kLogisticSkewed,
                  R"({"name": "decentralized", "hierarchical": false, "peer_selection_mode": "ring"})",
                  kLogisticLr, kIterations));
  const Outcome choco_skewed =
      run(config_text(kLogisticSkewed, R"({"name": "choco_sgd"})", kLogisticLr, kIterations));
  EXPECT_LT(choco_skewed.consensus_distance(), 3 * ring_skewed.consensus_distance());
}

}  // namespace decentralized_test
}  // namespace
}  // namespace bagua::convergence
