#include "core/compress/qsgd.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

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

// QSGD's Q_s(c v) = c Q_s(v) for c > 0 (Alistarh et al., section 3.1: Q_s depends on v / ||v|| and
// ||v|| only). A chunk whose norm is normal but below s / FLT_MAX (s / norm overflows f32: qsgd.h) is
// quantized on x and norm scaled by 2^64, so it has the codes of its copy times 2^64 (whose norm, the
// sum and square root scaled exactly, is 2^64 times its own, and whose s / norm is finite), draw for
// draw. Neither dropping such a chunk (all levels 0) nor clamping s / norm to FLT_MAX gives them: with
// s = 7 and a lone element, r = 7 for the copy, 0 dropped, |x| FLT_MAX < 7 clamped.
TEST(Qsgd, TinyNormChunkIsQuantizedLikeItsCopyScaledBy2p64) {
  for (uint32_t levels : {7u, 127u, 65535u}) {
    for (size_t chunk : {size_t{1}, size_t{16}, size_t{512}, size_t{0}}) {
      const auto s = static_cast<float>(levels);
      const size_t n = 1000, len = chunk == 0 ? n : chunk;
      // Each chunk scaled to a norm near sqrt(2^-126 b), b the overflow boundary: normal and tiny.
      const double target = std::sqrt(0x1p-126 * testing::qsgd_overflow_boundary(levels));
      std::vector<float> x = uniform_values(n, -1, 1, 53 + levels);
      for (size_t begin = 0; begin < n; begin += len) {
        const size_t end = std::min(n, begin + len);
        double squares = 0;
        for (size_t j = begin; j < end; ++j)
          squares += double(x[j]) * x[j];
        for (size_t j = begin; j < end; ++j)
          x[j] = static_cast<float>(x[j] * (target / std::sqrt(squares)));
      }
      std::vector<float> copy(n);
      for (size_t j = 0; j < n; ++j)
        copy[j] = x[j] * 0x1p64f;
      QsgdCompressor a(levels, chunk, 3), b(levels, chunk, 3);
      const std::vector<uint8_t> ex = encode_all(a, x), ey = encode_all(b, copy);
      const size_t chunks = (n + len - 1) / len;
      for (size_t i = 0; i < chunks; ++i) {
        const float norm = f32_from_bytes(ex, 4 * i);
        ASSERT_GE(norm, std::numeric_limits<float>::min()) << "chunk " << i;
        ASSERT_TRUE(std::isinf(s / norm)) << "levels " << levels << " chunk " << i << " norm " << norm;
        ASSERT_EQ(f32_from_bytes(ey, 4 * i), norm * 0x1p64f) << "chunk " << i;
      }
      const std::vector<uint8_t> codes_x(ex.begin() + 4 * chunks, ex.end());
      const std::vector<uint8_t> codes_y(ey.begin() + 4 * chunks, ey.end());
      EXPECT_EQ(codes_x, codes_y) << "levels " << levels << " chunk " << chunk;
      const std::vector<float> decoded = decode_all(b, ey, n);
      EXPECT_TRUE(std::any_of(decoded.begin(), decoded.end(), [](float v) { return v != 0; }));
    }
  }
}

// Tiny norms (compress_test_util.h: subnormal elements, a lone FLT_MIN-sized element, norms around
// the overflow boundary, many elements of 2^-140) quantize within QSGD's bound: the level l of element
// x is floor(r) or floor(r) + 1, r = |x| s / norm (here in double; the f32 r is within 2^-22 of it),
// l <= s, the sign bit set for l != 0 and x < 0, and so |x' - x| <= norm / s (section 3.1: xi_i is
// l / s or (l + 1) / s), plus the f32 roundings of the decode x' = l f32(norm / s): relative 2^-24 each, or,
// where norm / s or x' is subnormal, up to 2^-150 absolute each — (l + 1) 2^-150 in all. Worked case:
// s = 7, x = [FLT_MIN] alone: norm = FLT_MIN, r = 7, l = 7 (6 only where u >= 1 - 2^-24), unit =
// 2^-126 / 7 rounded to a multiple of 2^-149, x' = 7 unit, within 8 2^-150 of FLT_MIN.
TEST(Qsgd, TinyNormsDecodeWithinQsgdsBound) {
  for (testing::TinyNorm kind : testing::kTinyNorms) {
    for (uint32_t levels : {1u, 3u, 7u, 127u, 65535u}) {
      size_t tiny_chunks = 0, top_levels = 0;
      for (size_t chunk : {size_t{1}, size_t{5}, size_t{16}, size_t{512}}) {
        const size_t n = 777;
        const auto s = static_cast<double>(levels);
        const auto x = testing::tiny_norm_values(kind, n, chunk, levels, 61 + levels);
        QsgdCompressor c(levels, chunk, 17);
        const std::vector<uint8_t> bytes = encode_all(c, x);
        const std::vector<float> y = decode_all(c, bytes, n);
        const int w = c.bits_per_element() - 1;
        const size_t chunks = (n + chunk - 1) / chunk;
        for (size_t e = 0; e < n; ++e) {
          const std::string what = testing::to_string(kind) + " levels " + std::to_string(levels) +
                                   " chunk " + std::to_string(chunk) + " element " + std::to_string(e) +
                                   " x " + std::to_string(x[e]);
          uint32_t code = 0;  // stream bits [e (w + 1), (e + 1) (w + 1))
          for (int k = 0; k <= w; ++k) {
            const size_t t = e * static_cast<size_t>(w + 1) + static_cast<size_t>(k);
            code |= static_cast<uint32_t>((bytes[4 * chunks + t / 8] >> (t % 8)) & 1u) << k;
          }
          const uint32_t l = code & ((1u << w) - 1u);
          const double norm = f32_from_bytes(bytes, 4 * (e / chunk));
          if (e % chunk == 0 && std::isinf(static_cast<float>(levels) / static_cast<float>(norm)))
            ++tiny_chunks;
          ASSERT_LE(l, levels) << what;
          ASSERT_EQ(code >> w, (l != 0 && x[e] < 0) ? 1u : 0u) << what;
          const double r = norm > 0 ? std::fabs(double(x[e])) * s / norm : 0;
          ASSERT_GE(l, std::floor(r * (1 - 0x1p-21))) << what << " r " << r;
          ASSERT_LE(l, std::floor(r * (1 + 0x1p-21)) + 1) << what << " r " << r;
          top_levels += levels > 1 && l == levels;
          const double bound = norm / s + norm * 0x1p-21 + (l + 1) * 0x1p-150;
          ASSERT_LE(std::fabs(double(y[e]) - double(x[e])), bound) << what << " decoded " << y[e];
        }
      }
      // Not vacuous: the inputs have chunks whose s / norm overflows, and levels up to s in them.
      EXPECT_GT(tiny_chunks, 0u) << testing::to_string(kind) << " levels " << levels;
      if (levels > 1 && kind == testing::TinyNorm::kLone) {
        EXPECT_GT(top_levels, 0u) << "levels " << levels;
      }
    }
  }
}

// A norm at FLT_MAX: l f32(norm / s) would round past FLT_MAX, and decoding saturates instead (qsgd.h).
// Worked case: s = 65535, chunks of one, x = [FLT_MAX, -FLT_MAX]: norm = FLT_MAX = (2 - 2^-23) 2^127,
// levels_per_unit = f32(s / norm), r = norm levels_per_unit = 65535 exactly (so l = 65535 whatever the
// draw), unit = f32(norm / s) = (1 + 2^-16) 2^112 and l unit = (2^16 - 2^-16) 2^112 = 2^128 - 2^96,
// above FLT_MAX + half its ulp (2^128 - 2^103): f32 rounds it to infinity. Decoded: +-FLT_MAX, exact.
// s = 7 rounds to FLT_MAX itself (7 f32(norm / 7) = FLT_MAX), so the saturation changes nothing there.
TEST(Qsgd, NormAtFltMaxDecodesToFltMaxNotInfinity) {
  constexpr float kMax = std::numeric_limits<float>::max();
  for (uint32_t levels : {65535u, 127u, 7u}) {
    QsgdCompressor c(levels, 1, 3);
    const std::vector<float> x = {kMax, -kMax};
    const std::vector<float> y = decode_all(c, encode_all(c, x), x.size());
    EXPECT_EQ(y, x) << "levels " << levels;
  }
  // Not vacuous: at s = 65535 the unsaturated product is infinite.
  const float unit = kMax / 65535.0f;
  EXPECT_TRUE(std::isinf(65535.0f * unit));
  // A non-finite norm still decodes as NaN (level 0 times an infinite unit), as before.
  QsgdCompressor c(7, 2, 3);
  const std::vector<float> inf = {std::numeric_limits<float>::infinity(), 1.0f};
  const std::vector<float> y = decode_all(c, encode_all(c, inf), inf.size());
  EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]));
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
