#include "core/compress/sign.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/core/compress/compress_test_util.h"

namespace bagua {
namespace {

using testing::decode_all;
using testing::encode_all;
using testing::uniform_values;

// x = [1, -2, 3, -4 | 0.5, -1.5] in chunks of 4: scales 10 / 4 = 2.5 (0x40200000) and 2 / 2 = 1
// (0x3F800000); bits, least significant first: 1,0,1,0,1,0 -> 0b00010101 = 0x15. 4 * 2 + 1 = 9 bytes.
TEST(Sign, PinnedEncoding) {
  SignCompressor c(4);
  const std::vector<float> x = {1, -2, 3, -4, 0.5f, -1.5f};
  const std::vector<uint8_t> want = {0x00, 0x00, 0x20, 0x40, 0x00, 0x00, 0x80, 0x3F, 0x15};
  EXPECT_EQ(encode_all(c, x), want);
  const std::vector<float> y = decode_all(c, want, x.size());
  EXPECT_EQ(y, (std::vector<float>{2.5f, -2.5f, 2.5f, -2.5f, 1.0f, -1.0f}));
}

// Decoding gives +mean|x| for non-negative elements and -mean|x| for the others, per chunk.
TEST(Sign, DecodesToPlusMinusChunkMeanMagnitude) {
  for (size_t chunk : {size_t{0}, size_t{1}, size_t{7}, size_t{64}, size_t{100}}) {
    SignCompressor c(chunk);
    const std::vector<float> x = uniform_values(1003, -2, 1, 5);
    const std::vector<float> y = decode_all(c, encode_all(c, x), x.size());
    const size_t len = chunk ? chunk : x.size();
    for (size_t begin = 0; begin < x.size(); begin += len) {
      const size_t end = std::min(x.size(), begin + len);
      double sum = 0;
      for (size_t i = begin; i < end; ++i)
        sum += std::fabs(x[i]);
      const auto mean = static_cast<float>(sum / static_cast<double>(end - begin));
      for (size_t i = begin; i < end; ++i)
        ASSERT_FLOAT_EQ(y[i], x[i] >= 0 ? mean : -mean) << "chunk " << chunk << " element " << i;
    }
  }
}

// +0 and -0 count as non-negative; NaN as negative. Trailing bits of the last byte are zero.
TEST(Sign, ZerosAndTrailingBits) {
  SignCompressor c(0);
  const std::vector<float> x = {0.0f, -0.0f, NAN, -1.0f, 2.0f};
  const std::vector<uint8_t> bytes = encode_all(c, x);
  ASSERT_EQ(bytes.size(), 5u);
  EXPECT_EQ(bytes[4], 0b00010011);
}

}  // namespace
}  // namespace bagua
