#include "core/compress/minmax_uint8.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "tests/core/compress/compress_test_util.h"

namespace bagua {
namespace {

using testing::decode_all;
using testing::encode_all;
using testing::f32_from_bytes;
using testing::uniform_values;

// Eleven elements in chunks of 4: records of 32 + align32(4) = 64 bytes, the short last one (3
// elements) also 32 + 32 = 64: 192 bytes. Worked out by hand from Bagua's kernel arithmetic
// (scale = f32(255.0 / f64(max - min + 1e-7f)), upper = rint(max * scale), lower = upper - 255,
// q = rint(x * scale) - lower):
//
// chunk 0 = [-1, 3, 1, 0.2]: min -1, max 3. max - min = 4, and 4 + 1e-7 rounds back to 4 in float (the
//   ulp of 4 is 4.8e-7). scale = 255 / 4 = 63.75 exactly; upper = rint(191.25) = 191; lower = -64.
//   q(-1) = rint(-63.75) + 64 = -64 + 64 = 0;  q(3) = 191 + 64 = 255;  q(1) = rint(63.75) + 64 = 128;
//   q(0.2) = rint(12.75000019) + 64 = 13 + 64 = 77.
// chunk 1 = [0, 1, 0.5, 0.25]: min 0, max 1. 1 + 1e-7 rounds to 1 + 2^-23 = 1.00000012 (the ulp of 1 is
//   1.19e-7); 255 / 1.00000012 = 254.9999696 in double, which rounds to the float 255 - 2 * 2^-16 =
//   254.99996948. upper = rint(254.99997) = 255; lower = 0.
//   q(0) = 0;  q(1) = 255;  q(0.5) = rint(127.4999847) = 127 (not 128: eps shifts the grid);
//   q(0.25) = rint(63.7499924) = 64.
// chunk 2 = [0.5, 2.5, 1.5]: min 0.5, max 2.5; 2 + 1e-7 rounds to 2 (ulp 2.4e-7). scale = 127.5;
//   upper = rint(318.75) = 319; lower = 64.  q(0.5) = rint(63.75) - 64 = 0;  q(2.5) = 319 - 64 = 255;
//   q(1.5) = rint(191.25) - 64 = 127.
// Headers: -1.0f = 0xBF800000, 3.0f = 0x40400000, 0.0f = 0, 1.0f = 0x3F800000, 0.5f = 0x3F000000,
// 2.5f = 0x40200000, stored little-endian, then zeros up to byte 32 of the record.
TEST(MinMaxUint8, PinnedEncodingFromBaguaFormula) {
  MinMaxUint8Compressor c(4);
  const std::vector<float> x = {-1, 3, 1, 0.2f, 0, 1, 0.5f, 0.25f, 0.5f, 2.5f, 1.5f};
  std::vector<uint8_t> expected(192, 0);
  auto put = [&](size_t record, std::vector<uint8_t> min_max, std::vector<uint8_t> q) {
    std::copy(min_max.begin(), min_max.end(), expected.begin() + static_cast<long>(64 * record));
    std::copy(q.begin(), q.end(), expected.begin() + static_cast<long>(64 * record + 32));
  };
  put(0, {0x00, 0x00, 0x80, 0xBF, 0x00, 0x00, 0x40, 0x40}, {0, 255, 128, 77});
  put(1, {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x3F}, {0, 255, 127, 64});
  put(2, {0x00, 0x00, 0x00, 0x3F, 0x00, 0x00, 0x20, 0x40}, {0, 255, 127});
  ASSERT_EQ(c.encoded_bytes(x.size()).count(), 192);
  const std::vector<uint8_t> got = encode_all(c, x);
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_EQ(got[i], expected[i]) << "byte " << i;

  // Decoding: x' = (q + lower) / scale.
  const std::vector<float> y = decode_all(c, got, x.size());
  const std::vector<float> want = {-64.0f / 63.75f,
                                   191.0f / 63.75f,
                                   64.0f / 63.75f,
                                   13.0f / 63.75f,  // chunk 0
                                   0.0f,
                                   255.0f / 254.99996948242188f,
                                   127.0f / 254.99996948242188f,
                                   64.0f / 254.99996948242188f,
                                   64.0f / 127.5f,
                                   319.0f / 127.5f,
                                   191.0f / 127.5f};
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_EQ(y[i], want[i]) << "element " << i;
}

// Every element decodes within half a quantization step of its input, (max - min + eps) / 255 / 2 for
// its chunk, plus float rounding (a few ulps of the chunk's largest magnitude).
TEST(MinMaxUint8, RoundTripWithinHalfAStepPerChunk) {
  struct Case {
    size_t n, chunk;
    float lo, hi;
  };
  for (const Case& k : {Case{1000, 0, -1, 1}, Case{1000, 64, -3, 7}, Case{1001, 100, 10, 11},
                        Case{777, 33, -1e-3f, 1e-3f}, Case{4096, 1024, -100, -50}, Case{5, 2, -1, 1}}) {
    SCOPED_TRACE(::testing::Message() << "n " << k.n << " chunk " << k.chunk);
    MinMaxUint8Compressor c(k.chunk);
    const std::vector<float> x = uniform_values(k.n, k.lo, k.hi, 7);
    const std::vector<uint8_t> bytes = encode_all(c, x);
    const std::vector<float> y = decode_all(c, bytes, x.size());
    const size_t chunk = k.chunk ? k.chunk : k.n;
    for (size_t begin = 0; begin < k.n; begin += chunk) {
      const size_t end = std::min(k.n, begin + chunk);
      const auto [mn, mx] =
          std::minmax_element(x.begin() + static_cast<long>(begin), x.begin() + static_cast<long>(end));
      const double half_step = (static_cast<double>(*mx) - *mn + 1e-7) / 255.0 / 2.0;
      const double slack = 4.0 * FLT_EPSILON * std::max(std::fabs(*mn), std::fabs(*mx));
      // The header holds the chunk's min and max.
      const size_t record = (begin / chunk) * (32 + (chunk + 31) / 32 * 32);
      EXPECT_EQ(f32_from_bytes(bytes, record), *mn);
      EXPECT_EQ(f32_from_bytes(bytes, record + 4), *mx);
      for (size_t i = begin; i < end; ++i)
        ASSERT_LE(std::fabs(static_cast<double>(y[i]) - x[i]), half_step + slack) << "element " << i;
    }
  }
}

TEST(MinMaxUint8, ConstantAndZeroChunks) {
  MinMaxUint8Compressor c(4);
  const std::vector<float> x = {0, 0, 0, 0, 2.5f, 2.5f, 2.5f, 2.5f};
  const std::vector<float> y = decode_all(c, encode_all(c, x), x.size());
  // Zero chunk: scale = 255 / 1e-7, upper = 0, lower = -255, q = 255, x' = 0 exactly.
  for (size_t i = 0; i < 4; ++i)
    EXPECT_EQ(y[i], 0.0f);
  // Constant 2.5: the range is eps alone, scale = 2.55e9; every element gets q = 255 and decodes to
  // upper / scale = f32(2.5 * scale) / scale, i.e. 2.5 up to float rounding (2^-23 relative).
  for (size_t i = 4; i < 8; ++i)
    EXPECT_NEAR(y[i], 2.5f, 1e-6);
}

// Padding bytes (header bytes 8..31, data past the chunk) are zero, whatever the output held before.
TEST(MinMaxUint8, PaddingIsZero) {
  MinMaxUint8Compressor c(40);
  const std::vector<float> x = uniform_values(50, -1, 1, 3);
  const std::vector<uint8_t> bytes = encode_all(c, x);  // encode_all pre-fills with 0xAB
  ASSERT_EQ(bytes.size(), size_t{(32 + 64) + (32 + 32)});
  for (size_t r : {size_t{0}, size_t{96}}) {
    for (size_t i = 8; i < 32; ++i)
      EXPECT_EQ(bytes[r + i], 0) << "record at " << r << " byte " << i;
  }
  for (size_t i = 32 + 40; i < 96; ++i)
    EXPECT_EQ(bytes[i], 0) << i;
  for (size_t i = 96 + 32 + 10; i < bytes.size(); ++i)
    EXPECT_EQ(bytes[i], 0) << i;
}

// Bagua compresses a bucket as n_chunks = nranks chunks; encoding each rank's slice on its own (chunk
// size 0) gives the same bytes as encoding the whole with chunk = slice length.
TEST(MinMaxUint8, SlicesEncodeLikeChunks) {
  const size_t ranks = 4, slice = 300;
  const std::vector<float> x = uniform_values(ranks * slice, -2, 5, 11);
  MinMaxUint8Compressor whole(slice);
  const std::vector<uint8_t> all = encode_all(whole, x);
  ASSERT_EQ(all.size(), ranks * (32 + 320));  // Bagua: (align32(chunk) + align32(8)) * n_chunks
  MinMaxUint8Compressor one(0);
  std::vector<uint8_t> concatenated;
  for (size_t r = 0; r < ranks; ++r) {
    std::vector<float> part(x.begin() + static_cast<long>(r * slice),
                            x.begin() + static_cast<long>((r + 1) * slice));
    const std::vector<uint8_t> b = encode_all(one, part);
    concatenated.insert(concatenated.end(), b.begin(), b.end());
  }
  EXPECT_EQ(all, concatenated);
}

}  // namespace
}  // namespace bagua
