#include "core/compress/error_feedback.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/compress/sign.h"
#include "core/compress/topk.h"
#include "tests/core/compress/compress_test_util.h"

namespace bagua {
namespace {

using testing::decode_all;
using testing::encode_all;
using testing::uniform_values;

double norm2(const std::vector<double>& v) {
  double s = 0;
  for (double x : v)
    s += x * x;
  return std::sqrt(s);
}

// Feeds the same input x for T steps. With e_{t+1} = v_t - D(C(v_t)), v_t = x + e_t, and a compressor
// that keeps at least a fraction delta of the energy (||v - D(C(v))||^2 <= (1 - delta) ||v||^2), the
// residual obeys ||e_{t+1}|| <= q (||x|| + ||e_t||), q = sqrt(1 - delta), hence for all t
//   ||e_t|| <= q / (1 - q) ||x||.
// And sum_t D(c_t) = T x - e_T, so the decoded sum tracks the input sum within that bound.
void run_and_check(Compressor& inner_for_reference, std::unique_ptr<Compressor> ef,
                   const std::vector<float>& x, int steps, double delta) {
  const size_t n = x.size();
  std::vector<double> decoded_sum(n, 0.0);
  std::vector<double> x_d(x.begin(), x.end());
  const double q = std::sqrt(1.0 - delta);
  const double bound = q / (1.0 - q) * norm2(x_d);
  for (int t = 1; t <= steps; ++t) {
    const std::vector<float> y = decode_all(*ef, encode_all(*ef, x), n);
    std::vector<double> gap(n);
    for (size_t i = 0; i < n; ++i) {
      decoded_sum[i] += y[i];
      gap[i] = t * x_d[i] - decoded_sum[i];
    }
    EXPECT_LE(norm2(gap), bound * (1 + 1e-4) + 1e-4) << "step " << t;
    // The residual is exactly the gap (up to float accumulation).
    const auto* wrapper = dynamic_cast<const ErrorFeedbackCompressor*>(ef.get());
    const std::span<float> e = wrapper->residual().as<float>();
    for (size_t i = 0; i < n; ++i)
      ASSERT_NEAR(e[i], gap[i], 1e-3 * (1 + std::fabs(gap[i]))) << t << " " << i;
  }
  // Without error feedback the gap grows like T ||x - D(C(x))||: the bound above is a real constraint.
  const std::vector<float> once =
      decode_all(inner_for_reference, encode_all(inner_for_reference, x), n);
  std::vector<double> lost(n);
  for (size_t i = 0; i < n; ++i)
    lost[i] = x_d[i] - once[i];
  EXPECT_GT(steps * norm2(lost), 2 * bound);
}

// top-k keeps the k largest magnitudes: ||v - topk(v)||^2 <= (1 - k/n) ||v||^2, delta = k / n.
TEST(ErrorFeedback, TopKResidualStaysBounded) {
  const std::vector<float> x = uniform_values(50, -1, 1, 53);
  TopKCompressor reference(0.1);
  run_and_check(reference, make_error_feedback(std::make_unique<TopKCompressor>(0.1)), x, 300,
                5.0 / 50);
}

// Scaled sign: ||v - mean|v| sign(v)||^2 = ||v||^2 - ||v||_1^2 / n >= ... and ||v||_1^2 >= ||v||^2, so
// delta >= 1 / n.
TEST(ErrorFeedback, SignResidualStaysBounded) {
  const std::vector<float> x = uniform_values(8, -1, 2, 59);
  SignCompressor reference(0);
  run_and_check(reference, make_error_feedback(std::make_unique<SignCompressor>(0)), x, 1000, 1.0 / 8);
}

// A constant input c through top-1 of 10: step t sends the element with the most accumulated mass (the
// lowest index among equals), so the elements take turns: each is sent every 10 steps carrying 10 c,
// and in between holds at most 9 c of residual. The decoded sum of every element is within 9 c of T c.
TEST(ErrorFeedback, ConstantInputTopOne) {
  const std::vector<float> x(10, 0.5f);
  auto ef = make_error_feedback(std::make_unique<TopKCompressor>(0.1));
  std::vector<double> sum(10, 0.0);
  const int steps = 100;
  for (int t = 0; t < steps; ++t) {
    const std::vector<float> y = decode_all(*ef, encode_all(*ef, x), x.size());
    for (size_t i = 0; i < x.size(); ++i)
      sum[i] += y[i];
  }
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_NEAR(sum[i], steps * 0.5, 9 * 0.5 + 1e-9) << i;
  }
}

TEST(ErrorFeedback, OneInstancePerSite) {
  auto ef = make_error_feedback(std::make_unique<SignCompressor>(0));
  EXPECT_EQ(ef->name(), "error_feedback(sign)");
  encode_all(*ef, std::vector<float>(10, 1.0f));
  EXPECT_THROW(encode_all(*ef, std::vector<float>(11, 1.0f)), ConfigError);
}

TEST(ErrorFeedback, MetaIsANoOpWithSizesChecked) {
  auto ef = make_error_feedback(std::make_unique<TopKCompressor>(0.5));
  const Buffer in = Buffer::meta(DType::kF32, 1000);
  const Buffer out = Buffer::meta(DType::kU8, 8 * 500);
  ef->encode(in, out);
  ef->decode(out, in);
  EXPECT_TRUE(dynamic_cast<ErrorFeedbackCompressor&>(*ef).residual().is_meta());
  const Buffer wrong = Buffer::meta(DType::kU8, 8 * 500 + 1);
  EXPECT_THROW(ef->encode(in, wrong), InternalError);
  EXPECT_EQ(ef->encoded_bytes(1000).count(), 8 * 500);
}

}  // namespace
}  // namespace bagua
