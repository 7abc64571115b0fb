#include "core/compress/cast.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "tests/core/compress/compress_test_util.h"

namespace bagua {
namespace {

using testing::decode_all;
using testing::encode_all;

float from_bits(uint32_t b) {
  return std::bit_cast<float>(b);
}

TEST(Fp16, DecodesKnownPatterns) {
  EXPECT_EQ(f16_bits_to_f32(0x3C00), 1.0f);
  EXPECT_EQ(f16_bits_to_f32(0xC000), -2.0f);
  EXPECT_EQ(f16_bits_to_f32(0x7BFF), 65504.0f);               // largest finite
  EXPECT_EQ(f16_bits_to_f32(0x0400), std::ldexp(1.0f, -14));  // smallest normal
  EXPECT_EQ(f16_bits_to_f32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(f16_bits_to_f32(0x03FF), 1023 * std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_bits_to_f32(0x3555), 1365.0f / 4096.0f);  // 0.333251953125: 1 + 341/1024 times 2^-2
  EXPECT_EQ(f16_bits_to_f32(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(f16_bits_to_f32(0xFC00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(f16_bits_to_f32(0x7E00)));
  EXPECT_TRUE(std::signbit(f16_bits_to_f32(0x8000)));
}

TEST(Fp16, RoundsToNearestEven) {
  const float ulp1 = std::ldexp(1.0f, -10);  // spacing of halves in [1, 2)
  EXPECT_EQ(f32_to_f16_bits(1.0f), 0x3C00);
  EXPECT_EQ(f32_to_f16_bits(1.0f + ulp1 / 2), 0x3C00);      // tie between 0x3C00 and 0x3C01: even
  EXPECT_EQ(f32_to_f16_bits(1.0f + 3 * ulp1 / 2), 0x3C02);  // tie between 0x3C01 and 0x3C02: even
  EXPECT_EQ(f32_to_f16_bits(std::nextafter(1.0f + ulp1 / 2, 2.0f)), 0x3C01);  // just above the tie
  EXPECT_EQ(f32_to_f16_bits(65504.0f), 0x7BFF);
  EXPECT_EQ(f32_to_f16_bits(65519.996f), 0x7BFF);  // below 65520 = 65504 + half an ulp
  EXPECT_EQ(f32_to_f16_bits(65520.0f), 0x7C00);    // the tie: 0x7BFF is odd, so infinity
  EXPECT_EQ(f32_to_f16_bits(-1e6f), 0xFC00);
  // Subnormals, in units of 2^-24.
  const float unit = std::ldexp(1.0f, -24);
  EXPECT_EQ(f32_to_f16_bits(unit), 0x0001);
  EXPECT_EQ(f32_to_f16_bits(unit / 2), 0x0000);  // tie between 0 and 1: even
  EXPECT_EQ(f32_to_f16_bits(-unit / 2), 0x8000);
  EXPECT_EQ(f32_to_f16_bits(0.75f * unit), 0x0001);
  EXPECT_EQ(f32_to_f16_bits(1.5f * unit), 0x0002);     // tie between 1 and 2: even
  EXPECT_EQ(f32_to_f16_bits(2.5f * unit), 0x0002);     // tie between 2 and 3: even
  EXPECT_EQ(f32_to_f16_bits(1023.5f * unit), 0x0400);  // tie between 0x3FF and 0x400: even
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -14)), 0x0400);
  EXPECT_EQ(f32_to_f16_bits(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(f32_to_f16_bits(0.0f), 0x0000);
  EXPECT_EQ(f32_to_f16_bits(-0.0f), 0x8000);
}

TEST(Fp16, InfinityAndNan) {
  EXPECT_EQ(f32_to_f16_bits(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(f32_to_f16_bits(-std::numeric_limits<float>::infinity()), 0xFC00);
  for (uint32_t nan : {0x7FC00000u, 0x7F800001u, 0xFFC00001u, 0x7FFFFFFFu}) {
    const uint16_t h = f32_to_f16_bits(from_bits(nan));
    EXPECT_EQ(h & 0x7C00, 0x7C00) << std::hex << nan;
    EXPECT_NE(h & 0x03FF, 0) << std::hex << nan;  // a NaN, not an infinity
    EXPECT_EQ(h >> 15, nan >> 31) << std::hex << nan;
  }
}

// Every half converts to float and back to itself (NaNs to a NaN).
TEST(Fp16, EveryPatternRoundTrips) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    const float f = f16_bits_to_f32(static_cast<uint16_t>(h));
    const bool nan = (h & 0x7C00) == 0x7C00 && (h & 0x3FF);
    if (nan) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      ASSERT_TRUE(std::isnan(f16_bits_to_f32(f32_to_f16_bits(f)))) << std::hex << h;
    } else {
      ASSERT_EQ(f32_to_f16_bits(f), h) << std::hex << h;
    }
  }
}

// Reference check on random floats of the whole finite range below 65520: the chosen half is at least
// as close as both neighbours (in double, where the differences are exact), and on a tie it is even.
TEST(Fp16, NearestOnRandomFloats) {
  std::mt19937 gen(29);
  for (int i = 0; i < 200000; ++i) {
    // Exponents concentrated on the half range: magnitudes in [2^-26, 2^16).
    std::uniform_int_distribution<uint32_t> fraction(0, 0x7FFFFF), exponent(127 - 26, 127 + 15),
        sign(0, 1);
    const float f = from_bits((sign(gen) << 31) | (exponent(gen) << 23) | fraction(gen));
    const uint16_t h = f32_to_f16_bits(f);
    if (std::fabs(f) >= 65520.0f) {
      ASSERT_EQ(h & 0x7FFF, 0x7C00) << f;
      continue;
    }
    const uint16_t magnitude = h & 0x7FFF;
    ASSERT_LT(magnitude, 0x7C00) << f;
    const double a = std::fabs(static_cast<double>(f));
    const double err = std::fabs(a - f16_bits_to_f32(magnitude));
    if (magnitude > 0) {
      const double below = std::fabs(a - f16_bits_to_f32(static_cast<uint16_t>(magnitude - 1)));
      ASSERT_TRUE(err < below || (err == below && magnitude % 2 == 0)) << f;
    }
    if (magnitude < 0x7BFF) {
      const double above = std::fabs(a - f16_bits_to_f32(static_cast<uint16_t>(magnitude + 1)));
      ASSERT_TRUE(err < above || (err == above && magnitude % 2 == 0)) << f;
    }
    ASSERT_EQ(h >> 15, std::signbit(f) ? 1 : 0);
  }
}

#if defined(__FLT16_MANT_DIG__)
// Where the compiler has a half type, its conversion (IEEE round to nearest even) agrees.
TEST(Fp16, AgreesWithCompilerHalf) {
  std::mt19937 gen(31);
  for (int i = 0; i < 200000; ++i) {
    const float f = from_bits(gen());
    if (std::isnan(f)) continue;
    const auto reference = std::bit_cast<uint16_t>(static_cast<_Float16>(f));
    ASSERT_EQ(f32_to_f16_bits(f), reference) << std::hexfloat << f;
  }
}
#endif

TEST(Fp16, CompressorRoundTripsRepresentableValuesExactly) {
  Fp16Compressor c;
  const std::vector<float> x = {0.0f,
                                -0.0f,
                                1.0f,
                                -2.5f,
                                65504.0f,
                                std::ldexp(1.0f, -24),
                                0.333251953125f,
                                std::numeric_limits<float>::infinity()};
  const std::vector<uint8_t> bytes = encode_all(c, x);
  ASSERT_EQ(bytes.size(), 2 * x.size());
  EXPECT_EQ(bytes[4], 0x00);  // 1.0 = 0x3C00, little-endian
  EXPECT_EQ(bytes[5], 0x3C);
  const std::vector<float> y = decode_all(c, bytes, x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(y[i], x[i]) << i;
    EXPECT_EQ(std::signbit(y[i]), std::signbit(x[i])) << i;
  }
}

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16_bits(1.0f), 0x3F80);
  EXPECT_EQ(f32_to_bf16_bits(from_bits(0x3F808000)), 0x3F80);              // tie, 0x3F80 even
  EXPECT_EQ(f32_to_bf16_bits(from_bits(0x3F818000)), 0x3F82);              // tie, 0x3F82 even
  EXPECT_EQ(f32_to_bf16_bits(from_bits(0x3F808001)), 0x3F81);              // above the tie
  EXPECT_EQ(f32_to_bf16_bits(from_bits(0x3F807FFF)), 0x3F80);              // below the tie
  EXPECT_EQ(f32_to_bf16_bits(std::numeric_limits<float>::max()), 0x7F80);  // above the last midpoint
  EXPECT_EQ(f32_to_bf16_bits(from_bits(0x7F7F7FFF)), 0x7F7F);
  EXPECT_EQ(f32_to_bf16_bits(from_bits(0x00008000)), 0x0000);  // subnormal tie: even
  EXPECT_EQ(f32_to_bf16_bits(from_bits(0x00018000)), 0x0002);
  EXPECT_EQ(f32_to_bf16_bits(from_bits(0x807F8000)), 0x8080);  // largest subnormal rounds to 2^-126
  EXPECT_EQ(f32_to_bf16_bits(-0.0f), 0x8000);
}

TEST(Bf16, InfinityAndNan) {
  EXPECT_EQ(f32_to_bf16_bits(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(f32_to_bf16_bits(-std::numeric_limits<float>::infinity()), 0xFF80);
  // 0x7F800001's top half is infinity's pattern; it must stay a NaN.
  for (uint32_t nan : {0x7F800001u, 0x7FC00000u, 0xFFFFFFFFu, 0x7FFF8000u}) {
    EXPECT_TRUE(std::isnan(bf16_bits_to_f32(f32_to_bf16_bits(from_bits(nan))))) << std::hex << nan;
  }
}

TEST(Bf16, EveryPatternRoundTrips) {
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    const float f = bf16_bits_to_f32(static_cast<uint16_t>(b));
    ASSERT_EQ(std::bit_cast<uint32_t>(f), b << 16);
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(bf16_bits_to_f32(f32_to_bf16_bits(f))));
    } else {
      ASSERT_EQ(f32_to_bf16_bits(f), b) << std::hex << b;
    }
  }
}

TEST(Bf16, CompressorRoundTrip) {
  Bf16Compressor c;
  const std::vector<float> x = {1.0f, -3.0f, 0.15625f, from_bits(0x3F808000)};
  const std::vector<float> y = decode_all(c, encode_all(c, x), x.size());
  EXPECT_EQ(y, (std::vector<float>{1.0f, -3.0f, 0.15625f, 1.0f}));
}

}  // namespace
}  // namespace bagua
