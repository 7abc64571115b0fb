#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "core/compress/randomk.h"
#include "core/compress/topk.h"
#include "tests/core/compress/compress_test_util.h"

namespace bagua {
namespace {

using testing::decode_all;
using testing::encode_all;
using testing::uniform_values;

int32_t i32_at(const std::vector<uint8_t>& b, size_t offset) {
  int32_t v;
  std::memcpy(&v, b.data() + offset, 4);
  return v;
}

TEST(SparseK, CeilOfRatioTimesN) {
  EXPECT_EQ(sparse_k(0.1, 0), 0u);
  EXPECT_EQ(sparse_k(0.1, 1), 1u);   // ceil(0.1)
  EXPECT_EQ(sparse_k(0.1, 7), 1u);   // ceil(0.7)
  EXPECT_EQ(sparse_k(0.1, 11), 2u);  // ceil(1.1)
  EXPECT_EQ(sparse_k(0.1, 1000000), 100000u);
  EXPECT_EQ(sparse_k(0.07, 100), 7u);   // 0.07 * 100 = 7.000000000000001 in double: still 7
  EXPECT_EQ(sparse_k(0.14, 100), 14u);  // 0.14 * 100 = 14.000000000000002 in double: still 14
  EXPECT_EQ(sparse_k(0.29, 100), 29u);  // 0.29 * 100 = 28.999999999999996: ceil is 29
  EXPECT_EQ(sparse_k(1.0, 5), 5u);
  EXPECT_EQ(sparse_k(1e-9, 5), 1u);
}

// [0.5, -3, 2, 0.1, -2.5] with ratio 0.4: k = 2, the magnitudes 3 (index 1) and 2.5 (index 4).
// Indices i32 1, 4 then values -3.0f (0xC0400000), -2.5f (0xC0200000).
TEST(TopK, PinnedEncoding) {
  TopKCompressor c(0.4);
  const std::vector<float> x = {0.5f, -3, 2, 0.1f, -2.5f};
  const std::vector<uint8_t> want = {1, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0x40, 0xC0, 0, 0, 0x20, 0xC0};
  EXPECT_EQ(encode_all(c, x), want);
  EXPECT_EQ(decode_all(c, want, x.size()), (std::vector<float>{0, -3, 0, 0, -2.5f}));
}

// The decoded vector holds exactly the k largest magnitudes (reference: sort the magnitudes) and zeros.
TEST(TopK, KeepsExactlyTheKLargestMagnitudes) {
  for (double ratio : {0.001, 0.05, 0.5, 1.0}) {
    TopKCompressor c(ratio);
    const std::vector<float> x = uniform_values(10007, -5, 5, 13);
    const size_t k = sparse_k(ratio, x.size());
    std::vector<float> magnitudes(x.size());
    std::transform(x.begin(), x.end(), magnitudes.begin(), [](float v) { return std::fabs(v); });
    std::sort(magnitudes.begin(), magnitudes.end(), std::greater<>());
    const float threshold = magnitudes[k - 1];
    ASSERT_TRUE(k == x.size() || magnitudes[k] < threshold)
        << "test input must have no tie at the threshold";

    const std::vector<uint8_t> bytes = encode_all(c, x);
    const std::vector<float> y = decode_all(c, bytes, x.size());
    size_t kept = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      if (std::fabs(x[i]) >= threshold) {
        ASSERT_EQ(y[i], x[i]) << "ratio " << ratio << " element " << i;
        ++kept;
      } else {
        ASSERT_EQ(y[i], 0.0f) << "ratio " << ratio << " element " << i;
      }
    }
    EXPECT_EQ(kept, k);
    for (size_t j = 1; j < k; ++j)
      ASSERT_LT(i32_at(bytes, 4 * (j - 1)), i32_at(bytes, 4 * j));
  }
}

// Among equal magnitudes the lower index is kept.
TEST(TopK, TiesKeepLowerIndices) {
  TopKCompressor c(0.4);
  const std::vector<float> x = {0.5f, 1, -1, 1, -1};
  EXPECT_EQ(decode_all(c, encode_all(c, x), x.size()), (std::vector<float>{0, 1, -1, 0, 0}));
}

// Many equal magnitudes around the threshold: the lowest indices fill k. NaN and infinity count as the
// largest magnitudes (ties between them also go to the lower index).
TEST(TopK, TiesAtTheThresholdAndNonFinite) {
  TopKCompressor c(0.1);
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = i % 2 ? -1.0f : 1.0f;
  x[500] = 3.0f;  // one larger magnitude: kept, plus the 99 lowest indices of the ties
  const std::vector<float> y = decode_all(c, encode_all(c, x), x.size());
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(y[i], (i < 99 || i == 500) ? x[i] : 0.0f) << i;

  TopKCompressor half(0.5);
  const std::vector<float> z = {1, NAN, -INFINITY, 2};
  const std::vector<float> w = decode_all(half, encode_all(half, z), z.size());
  EXPECT_EQ(w[0], 0.0f);
  EXPECT_TRUE(std::isnan(w[1]));
  EXPECT_EQ(w[2], -INFINITY);
  EXPECT_EQ(w[3], 0.0f);
}

TEST(RandomK, SameSeedSameIndicesOnEveryInstance) {
  RandomKCompressor a(0.1, 42), b(0.1, 42), other(0.1, 43);
  const std::vector<float> x = uniform_values(1000, -1, 1, 17);
  bool some_step_differs_from_other_seed = false;
  std::vector<uint8_t> previous;
  for (int step = 0; step < 5; ++step) {
    const std::vector<uint8_t> ea = encode_all(a, x);
    EXPECT_EQ(ea, encode_all(b, x)) << "step " << step;
    EXPECT_EQ(a.indices(step, x.size()), b.indices(step, x.size()));
    some_step_differs_from_other_seed |= encode_all(other, x) != ea;
    EXPECT_NE(ea, previous) << "the indices change from step to step";
    previous = ea;
  }
  EXPECT_TRUE(some_step_differs_from_other_seed);
}

// Any instance with the seed decodes: the step travels in the header. The values land at the drawn
// indices (k distinct, increasing, in range), zeros elsewhere.
TEST(RandomK, DecodesOnAnotherInstance) {
  RandomKCompressor sender(0.05, 7), receiver(0.05, 7);
  const std::vector<float> x = uniform_values(999, 1, 2, 19);  // no zeros in the input
  const size_t k = sparse_k(0.05, x.size());
  encode_all(sender, x);                                     // step 0
  const std::vector<uint8_t> bytes = encode_all(sender, x);  // step 1
  ASSERT_EQ(bytes.size(), 8 + 4 * k);
  uint64_t step;
  std::memcpy(&step, bytes.data(), 8);
  EXPECT_EQ(step, 1u);
  const std::vector<uint64_t> idx = receiver.indices(1, x.size());
  ASSERT_EQ(idx.size(), k);
  for (size_t j = 0; j < k; ++j) {
    ASSERT_LT(idx[j], x.size());
    if (j) {
      ASSERT_LT(idx[j - 1], idx[j]);
    }
  }
  const std::vector<float> y = decode_all(receiver, bytes, x.size());
  const std::set<uint64_t> chosen(idx.begin(), idx.end());
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(y[i], chosen.count(i) ? x[i] : 0.0f) << i;
}

// With `unbiased`, E[x'] = x: each element is kept with probability k/n and then scaled by n/k. Over
// T steps the mean of x'_i has standard deviation |x_i| sqrt((n/k - 1) / T); with n = 100, k = 10,
// T = 20000 that is 0.0212 |x_i|, and we allow 5 of them. The selection frequency of every index is
// k/n = 0.1 with standard deviation sqrt(0.1 * 0.9 / T) = 0.00212; again 5 of them.
TEST(RandomK, UnbiasedOverSteps) {
  const size_t n = 100;
  const int steps = 20000;
  RandomKCompressor c(0.1, 3, /*unbiased=*/true);
  const std::vector<float> x = uniform_values(n, -2, 2, 23);
  std::vector<double> sum(n, 0.0), hits(n, 0.0);
  for (int t = 0; t < steps; ++t) {
    const std::vector<float> y = decode_all(c, encode_all(c, x), n);
    for (size_t i = 0; i < n; ++i) {
      sum[i] += y[i];
      hits[i] += y[i] != 0.0f;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    EXPECT_NEAR(sum[i] / steps, x[i], 5 * 0.0212 * std::fabs(x[i]) + 1e-6) << "element " << i;
    EXPECT_NEAR(hits[i] / steps, 0.1, 5 * 0.00212) << "element " << i;
  }
}

}  // namespace
}  // namespace bagua
