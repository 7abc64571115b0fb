// Compressed centralized methods (bytegrad's C_LP_S, QAdam's compressed momentum) on linear regression,
// judged by the exact suboptimality gap at the end of the run against the uncompressed reference.
#include <gtest/gtest.h>

#include <string>

#include "tests/convergence/harness.h"
#include "tests/convergence/settings.h"

namespace bagua::convergence {
namespace {

// Apart from the same-named helpers of test_convergence's other files: the sanitizer presets
// compile several files of a program as one (CMAKE_UNITY_BUILD, CMakePresets.json).
namespace compression_test {

Outcome linear(const std::string& algorithm) {
  return run(config_text(kLinear, algorithm, kLinearLr, kIterations));
}

TEST(Compression, ErrorFeedbackAndFineQuantizationReachTheBaseline) {
  // The bound: the final gap within 1.5x the baseline's. With error feedback the sum of what was sent
  // tracks the sum of the true gradients up to the current residual (Karimireddy et al., "Error
  // Feedback Fixes SignSGD", ICML 2019, Thm. II; Stich et al., "Sparsified SGD with Memory", NeurIPS
  // 2018), so the compression only adds an O(lr^2) term to constant-step SGD's O(lr) floor. MinMax
  // uint8 needs no memory to get there: its error, half a step of the range / 255, is relative to the
  // gradient and so vanishes with it. A compressor that sent nothing (or zeros) would leave the gap at
  // its initial 0.5.
  const Outcome baseline = linear(kBaseline);
  ASSERT_LT(baseline.mean_gap(), 1e-4);
  for (const std::string algorithm : {
           R"({"name": "bytegrad"})",
           R"({"name": "bytegrad", "hierarchical": false})",
           R"({"name": "bytegrad", "error_feedback": true})",
           R"({"name": "bytegrad", "compressor": "sign", "error_feedback": true})",
           R"({"name": "bytegrad", "compressor": "sign", "error_feedback": true,
              "hierarchical": false})",
           R"({"name": "bytegrad", "compressor": "topk", "topk_ratio": 0.1, "error_feedback": true})",
       }) {
    SCOPED_TRACE(algorithm);
    EXPECT_LT(linear(algorithm).mean_gap(), 1.5 * baseline.mean_gap());
  }
}

TEST(Compression, BiasedCompressionWithoutErrorFeedbackFallsFarBehind) {
  // Without memory, scaled sign (one magnitude, the mean |x|, for a whole chunk) and top-10% (the other
  // 90% of coordinates dropped, every step) are biased: the expected update is not the gradient, small
  // coordinates progress at a fraction of their rate or not at all, and the iterates lag far behind
  // (Karimireddy et al. 2019, Sec. 3: sign compression can fail to converge). The bound: a final gap at
  // least 20x the baseline's and 20x that of the same compressor with error feedback. (An
  // implementation that silently sent exact values, or that applied memory, would not lag.)
  const Outcome baseline = linear(kBaseline);
  for (const char* compressor : {R"("sign")", R"("topk", "topk_ratio": 0.1)"}) {
    SCOPED_TRACE(compressor);
    const std::string plain = std::string(R"({"name": "bytegrad", "compressor": )") + compressor + "}";
    const std::string ef =
        std::string(R"({"name": "bytegrad", "error_feedback": true, "compressor": )") + compressor +
        "}";
    const double gap = linear(plain).mean_gap();
    EXPECT_GT(gap, 20 * baseline.mean_gap());
    EXPECT_GT(gap, 20 * linear(ef).mean_gap());
  }
}

TEST(Compression, QAdamCompressedMomentumReachesFullPrecisionQAdam) {
  // QAdam against itself in full precision (warmup_steps = iterations: Adam on averaged gradients),
  // from the same warm-up of 48 steps. After it the variance is frozen and the momentum averaged
  // compressed. uint8 (Bagua's QAdam): within 1.2x of the full-precision gap, the quantization error
  // being relative to the momentum. 1-bit (sign with error feedback, as 1-bit Adam; Tang et al., ICML
  // 2021) flat, with one scale per 4-element chunk: within 1.5x. Were the momentum not averaged at all,
  // each rank would run Adam on its own batches of 16, whose floor is over twice as high.
  const Outcome full = linear(R"({"name": "qadam", "lr": 0.01, "warmup_steps": 192})");
  ASSERT_LT(full.mean_gap(), 1e-3);
  for (const std::string algorithm : {
           R"({"name": "qadam", "lr": 0.01, "warmup_steps": 48})",
           R"({"name": "qadam", "lr": 0.01, "warmup_steps": 48, "hierarchical": false})",
       }) {
    SCOPED_TRACE(algorithm);
    EXPECT_LT(linear(algorithm).mean_gap(), 1.2 * full.mean_gap());
  }
  EXPECT_LT(linear(R"({"name": "qadam", "lr": 0.01, "warmup_steps": 48, "compressor": "sign",
                      "hierarchical": false})")
                .mean_gap(),
            1.5 * full.mean_gap());
}

}  // namespace compression_test
}  // namespace
}  // namespace bagua::convergence
