#include "core/compress/qsgd.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/core/compress/compress_test_util.h"

namespace bagua {
namespace {

using testing::decode_all;
using testing::encode_all;
using testing::f32_from_bytes;
using testing::uniform_values;

// x = [3, -4, 0], s = 5, one chunk: norm = 5 (0x40A00000), r = |x| * 5 / 5 = 3, 4, 0 — integers, so
// the rounding is certain. w = bit_width(5) = 3, b = 4. Codes: 3; 4 | 1 << 3 = 12; 0. Stream: byte 0 =
// 3 | 12 << 4 = 0xC3, byte 1 = 0x00. 4 + ceil(12 / 8) = 6 bytes.
TEST(Qsgd, PinnedEncoding) {
  QsgdCompressor c(5, 0, 1);
  const std::vector<float> x = {3, -4, 0};
  const std::vector<uint8_t> want = {0x00, 0x00, 0xA0, 0x40, 0xC3, 0x00};
  EXPECT_EQ(encode_all(c, x), want);
  EXPECT_EQ(decode_all(c, want, x.size()), x);
}

// Every decoded element is one of the two grid points around its input: +-floor(r) or +-(floor(r) + 1)
// times norm / s, with r = |x| s / norm and the chunk's norm.
TEST(Qsgd, DecodesToANeighbouringLevel) {
  for (int64_t levels : {1, 3, 7, 127, 300}) {
    QsgdCompressor c(levels, 64, 5);
    const std::vector<float> x = uniform_values(1000, -1, 1, 37);
    const std::vector<uint8_t> bytes = encode_all(c, x);
    const std::vector<float> y = decode_all(c, bytes, x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const double norm = f32_from_bytes(bytes, 4 * (i / 64));
      const double unit = norm / static_cast<double>(levels);
      const double r = std::fabs(x[i]) / unit;
      const double level = std::fabs(y[i]) / unit;
      ASSERT_TRUE(std::fabs(level - std::floor(r)) < 1e-3 ||
                  std::fabs(level - std::floor(r) - 1) < 1e-3)
          << "levels " << levels << " element " << i << " r " << r << " level " << level;
      if (y[i] != 0) {
        ASSERT_EQ(std::signbit(y[i]), std::signbit(x[i]));
      }
    }
  }
}

// The norms in the header are the chunks' L2 norms.
TEST(Qsgd, HeaderHoldsChunkNorms) {
  QsgdCompressor c(7, 10, 0);
  const std::vector<float> x = uniform_values(25, -3, 3, 41);
  const std::vector<uint8_t> bytes = encode_all(c, x);
  ASSERT_EQ(bytes.size(), 4 * 3 + (25 * 4 + 7) / 8);
  for (size_t chunk = 0; chunk < 3; ++chunk) {
    double squares = 0;
    for (size_t i = 10 * chunk; i < std::min<size_t>(25, 10 * chunk + 10); ++i)
      squares += double(x[i]) * x[i];
    EXPECT_FLOAT_EQ(f32_from_bytes(bytes, 4 * chunk), static_cast<float>(std::sqrt(squares)));
  }
}

// E[x'] = x. Element i's level is floor(r) + Bernoulli(r - floor(r)), so x'_i has variance
// unit^2 p (1 - p) <= unit^2 / 4 with unit = norm / s; the mean of T draws has standard deviation at
// most unit / (2 sqrt(T)). We allow 5 of them. (Rounding to nearest instead would miss by up to unit
// / 2.)
TEST(Qsgd, UnbiasedOverSteps) {
  const int steps = 4000;
  const int64_t levels = 3;
  QsgdCompressor c(levels, 16, 9);
  const std::vector<float> x = uniform_values(64, -1, 1, 43);
  std::vector<double> sum(x.size(), 0.0);
  std::vector<uint8_t> bytes;
  for (int t = 0; t < steps; ++t) {
    bytes = encode_all(c, x);
    const std::vector<float> y = decode_all(c, bytes, x.size());
    for (size_t i = 0; i < x.size(); ++i)
      sum[i] += y[i];
  }
  for (size_t i = 0; i < x.size(); ++i) {
    const double unit = f32_from_bytes(bytes, 4 * (i / 16)) / static_cast<double>(levels);
    EXPECT_NEAR(sum[i] / steps, x[i], 5 * unit / (2 * std::sqrt(double(steps))) + 1e-6)
        << "element " << i;
  }
}

// The encoding is a function of (input, seed, step): two instances with one seed agree step by step;
// another seed rounds differently.
TEST(Qsgd, DeterministicPerSeedAndStep) {
  QsgdCompressor a(7, 512, 11), b(7, 512, 11), other(7, 512, 12);
  const std::vector<float> x = uniform_values(2000, -1, 1, 47);
  for (int step = 0; step < 3; ++step) {
    const std::vector<uint8_t> ea = encode_all(a, x);
    EXPECT_EQ(ea, encode_all(b, x)) << "step " << step;
    EXPECT_NE(ea, encode_all(other, x)) << "step " << step;
  }
}

TEST(Qsgd, ZeroChunkAndBitsPerElement) {
  EXPECT_EQ(QsgdCompressor(1, 0, 0).bits_per_element(), 2);
  EXPECT_EQ(QsgdCompressor(7, 0, 0).bits_per_element(), 4);
  EXPECT_EQ(QsgdCompressor(8, 0, 0).bits_per_element(), 5);
  EXPECT_EQ(QsgdCompressor(127, 0, 0).bits_per_element(), 8);
  QsgdCompressor c(7, 4, 0);
  const std::vector<float> x = {0, 0, 0, 0, 1, 0, 0, 0};
  const std::vector<float> y = decode_all(c, encode_all(c, x), x.size());
  EXPECT_EQ(y, x);  // the zero chunk decodes to zeros; r = 7 exactly for the lone 1
  EXPECT_THROW(QsgdCompressor(0, 0, 0), ConfigError);
}

}  // namespace
}  // namespace bagua
