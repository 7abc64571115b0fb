// Exact methods: algorithms that, in exact arithmetic, compute the very same iterates as the baseline
// (flat gradient_allreduce, i.e. SGD on the gradient averaged over all ranks) must match it to
// floating-point tolerance, weight for weight.
//
// The tolerance. float32 sums taken in another order (a hierarchical reduce, another allreduce
// algorithm, averaging weights instead of gradients) differ by a few units in the last place, about
// 1e-7 relative, per step. The iteration w := w - lr (A w - b) contracts (|1 - lr eig(A)| < 1 for lr
// 0.05 and eig in [0.83, 1.19]), so these differences do not compound: after 192 steps the weights
// agree to about 1e-6 relative. We allow 1e-5. A broken method is far outside: without its averaging,
// a rank's weights move by lr x (its batch gradient - the average), about 1e-2 relative at the floor.
#include <gtest/gtest.h>

#include <string>

#include "tests/convergence/harness.h"
#include "tests/convergence/settings.h"

namespace bagua::convergence {
namespace {

// Apart from the same-named helpers of test_convergence's other files: the sanitizer presets
// compile several files of a program as one (CMAKE_UNITY_BUILD, CMakePresets.json).
namespace exact_test {

constexpr double kRelative = 1e-5;

Outcome linear(const std::string& algorithm, const std::string& optimizer = "") {
  return run(config_text(kLinear, algorithm, kLinearLr, kIterations, 2, 4, optimizer));
}

TEST(Exact, CentralizedFullPrecisionMethodsAreSgd) {
  const Outcome baseline = linear(kBaseline);
  // The baseline itself converged: its gap fell from 0.5 (w = 0, unit-variance targets) by orders of
  // magnitude, to the noise floor of constant-step SGD.
  ASSERT_LT(baseline.mean_gap(), 1e-4);
  ASSERT_EQ(baseline.spread(), 0.0);

  // Each of these averages exactly what the baseline averages, or something equal to it in exact
  // arithmetic:
  //   gradient_allreduce hierarchical / tree / halving-doubling: the same average, summed in another
  //     order (intra-host reduce, then among hosts; or another collective);
  //   local_sgd with period 1: every rank steps from the same weights w with its own gradient, then the
  //     weights are averaged: mean_r (w - lr g_r) = w - lr mean_r g_r, the baseline's step (plain SGD
  //     is linear in the gradient);
  //   bytegrad with the identity compressor: C_LP_S's scatter-reduce-gather moves raw float32, so it is
  //     an allreduce too.
  for (const std::string algorithm : {
           R"({"name": "gradient_allreduce", "hierarchical": true})",
           R"({"name": "gradient_allreduce", "allreduce": "tree"})",
           R"({"name": "gradient_allreduce", "allreduce": "halving_doubling"})",
           R"({"name": "local_sgd", "period": 1})",
           R"({"name": "local_sgd", "period": 1, "hierarchical": true})",
           R"({"name": "bytegrad", "compressor": "identity", "hierarchical": false})",
           R"({"name": "bytegrad", "compressor": "identity", "hierarchical": true})",
       }) {
    SCOPED_TRACE(algorithm);
    const Outcome o = linear(algorithm);
    // Every rank ends with the same weights: the average is computed once per chunk and broadcast.
    EXPECT_EQ(o.spread(), 0.0);
    EXPECT_LT(relative_distance(o.final_weights[0], baseline.final_weights[0]), kRelative);
    EXPECT_NEAR(o.mean_gap(), baseline.mean_gap(), 1e-3 * baseline.mean_gap());
  }
}

TEST(Exact, QAdamDuringItsWarmupIsAdamOnAveragedGradients) {
  // With warmup_steps = iterations QAdam never compresses: each step averages the gradient in full
  // precision and takes Adam's step with it (core/algorithms/qadam.h), which is gradient_allreduce with
  // the adam optimizer of the same lr, betas and eps (torch.optim.Adam's formula; QAdam divides by
  // sqrt(v) / sqrt(1 - beta2^t) where torch divides by sqrt(v / (1 - beta2^t)), equal in exact
  // arithmetic). Adam's division by sqrt(v) magnifies rounding where v is tiny, so its tolerance is
  // ten times the one above.
  const Outcome adam = linear(kBaseline, R"({"name": "adam", "lr": 0.01})");
  const Outcome qadam = linear(R"({"name": "qadam", "lr": 0.01, "warmup_steps": 192})");
  ASSERT_LT(adam.mean_gap(), 1e-3);
  EXPECT_EQ(qadam.spread(), 0.0);
  EXPECT_LT(relative_distance(qadam.final_weights[0], adam.final_weights[0]), 10 * kRelative);
}

TEST(Exact, LowPrecisionDecentralizedWithoutCompressionIsRingDpsgd) {
  // D_LP_S with an exact compressor. After a step the weights equal the public weights own = x_t, and
  // the replicas hold the neighbours' x_t. With x the locally stepped weights x_t - lr g,
  //   d = x + (left + right) / 3 - (5/3) own,   x := d + own = (left + x_t + right) / 3 - lr g,
  // which is decentralized ring (D_FP_S ring: the average of the three, minus the local step).
  const Outcome ring = linear(R"({"name": "decentralized", "hierarchical": false,
                                  "peer_selection_mode": "ring"})");
  const Outcome lpd = linear(R"({"name": "low_precision_decentralized", "hierarchical": false,
                                 "compressor": "identity"})");
  ASSERT_GT(ring.spread(), 1e-4);  // the ranks do disagree, so the comparison below is not vacuous
  for (int r = 0; r < kRanks; ++r)
    EXPECT_LT(relative_distance(lpd.final_weights[static_cast<size_t>(r)],
                                ring.final_weights[static_cast<size_t>(r)]),
              kRelative)
        << "rank " << r;
}

}  // namespace exact_test
}  // namespace
}  // namespace bagua::convergence
