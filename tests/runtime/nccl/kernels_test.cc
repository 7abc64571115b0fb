// The device compressor kernels (CudaKernels, reached through the compressors on device buffers)
// against the host compressors: MinMax uint8 and fp16 encodings are the host's bytes, and their
// decodings the host's values; sign encodings have the host's bits and scales equal to the host's up to
// summation order (core/compress/sign.h), and sign decodings are the host's values.
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/compress/cast.h"
#include "core/compress/minmax_uint8.h"
#include "core/compress/sign.h"
#include "tests/runtime/nccl/support.h"

namespace bagua {
namespace {

using testing::first_byte_difference;
using testing::first_value_difference;
using testing::NcclTest;
using testing::on_host;
using testing::TestRng;

// Data that exercises every branch of the MinMax arithmetic: ordinary values, many copies of the chunk
// extremes (as -0 and +0 too: the header keeps the first one the host's scan meets), exact ties of
// x * scale (multiples of 1/2 over a range of 255 units), subnormals and runs of equal values.
std::vector<float> tricky(size_t n, uint64_t seed) {
  TestRng rng(seed);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    switch (rng.next() % 10) {
      case 0:
        v[i] = 0.0f;
        break;
      case 1:
        v[i] = -0.0f;
        break;
      case 2:
        v[i] = static_cast<float>(rng.next() % 511) * 0.5f - 127.5f;
        break;
      case 3:
        v[i] = std::numeric_limits<float>::denorm_min() * static_cast<float>(rng.next() % 100);
        break;
      case 4:
        v[i] = i > 0 ? v[i - 1] : 1.0f;
        break;
      default:
        v[i] = static_cast<float>(rng.uniform(-3.0, 3.0));
        break;
    }
  }
  return v;
}

// Chunk contents on which float arithmetic misbehaves: a constant chunk, NaN first (the host keeps it
// as min and max), NaN later (ignored by min and max), infinities, huge values.
std::vector<float> special(size_t chunk) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<std::vector<float>> chunks = {
      {2.5f},
      {nan, 1.0f, -1.0f},
      {1.0f, nan, -1.0f, 3.0f},
      {-inf, 0.0f, 1.0f},
      {0.0f, inf, 1.0f},
      {-inf, inf},
      {3e38f, -3e38f, 1.0f},
      {-0.0f, 0.0f, -0.0f},
      {0.0f, -0.0f, 1.0f, -1.0f, -1.0f},
  };
  std::vector<float> v;
  for (const auto& c : chunks) {
    for (size_t j = 0; j < chunk; ++j)
      v.push_back(c[j % c.size()]);
  }
  return v;
}

class CompressorOnDevice : public NcclTest {
 protected:
  // Encodes `x` with `c` on the host and on the device; returns (host bytes, device bytes).
  std::pair<std::vector<uint8_t>, std::vector<uint8_t>> encode_both(Compressor& c,
                                                                    std::vector<float> x) {
    const size_t bytes = static_cast<size_t>(c.encoded_bytes(x.size()).count());
    std::vector<uint8_t> host(bytes, 0xAB);  // the kernels must write every byte: start from garbage
    c.encode(BufferView::of(std::span<float>(x)), BufferView::of(std::span<uint8_t>(host)));
    Buffer in = on_device(x);
    Buffer out = on_device(std::vector<uint8_t>(bytes, 0xCD));
    c.encode(in, out);
    return {host, on_host<uint8_t>(out)};
  }
  // Decodes `encoded` (n elements) with `c` on the host and on the device.
  std::pair<std::vector<float>, std::vector<float>> decode_both(Compressor& c,
                                                                std::vector<uint8_t> encoded,
                                                                size_t n) {
    std::vector<float> host(n);
    c.decode(BufferView::of(std::span<uint8_t>(encoded)), BufferView::of(std::span<float>(host)));
    Buffer in = on_device(encoded);
    Buffer out(device(), DType::kF32, n);
    c.decode(in, out);
    return {host, on_host<float>(out)};
  }
};

TEST_F(CompressorOnDevice, MinMaxEncodingsAreTheHostsBytes) {
  for (size_t n : {size_t{1}, size_t{7}, size_t{33}, size_t{1000}, size_t{4097}, size_t{100003}}) {
    for (size_t chunk_size :
         {size_t{0}, size_t{1}, size_t{7}, size_t{32}, size_t{1000}, size_t{5000}}) {
      MinMaxUint8Compressor c(chunk_size);
      const std::vector<float> x = tricky(n, n * 31 + chunk_size);
      const auto [host, dev] = encode_both(c, x);
      EXPECT_EQ(first_byte_difference(dev, host), "") << "encode n " << n << " chunk " << chunk_size;
      const auto [host_x, dev_x] = decode_both(c, host, n);
      EXPECT_EQ(first_value_difference(dev_x, host_x), "")
          << "decode n " << n << " chunk " << chunk_size;
    }
  }
}

TEST_F(CompressorOnDevice, MinMaxSpecialChunksAreTheHostsBytes) {
  for (size_t chunk : {size_t{1}, size_t{5}, size_t{300}, size_t{5000}}) {
    MinMaxUint8Compressor c(chunk);
    const std::vector<float> x = special(chunk);
    const auto [host, dev] = encode_both(c, x);
    EXPECT_EQ(first_byte_difference(dev, host), "") << "encode, chunk " << chunk;
    // Decoded values may be NaN where the levels are (a NaN's payload is the processor's choice).
    const auto [host_x, dev_x] = decode_both(c, host, x.size());
    EXPECT_EQ(first_value_difference(dev_x, host_x), "") << "decode, chunk " << chunk;
  }
}

TEST_F(CompressorOnDevice, Fp16EncodingsAreTheHostsBytes) {
  std::vector<float> x;
  // Every half value, the midpoints between neighbouring halves (ties: round to even) and a hair on
  // either side of them, as float32 inputs; then special values and random floats over all exponents.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float here = f16_bits_to_f32(static_cast<uint16_t>(h));
    x.push_back(here);
    if ((h & 0x7C00u) == 0x7C00u || (h & 0x7FFFu) == 0x7BFFu)
      continue;  // inf/NaN, or the largest finite
    const float next = f16_bits_to_f32(static_cast<uint16_t>(h + 1));
    const float mid = here + (next - here) / 2;  // exact: halves have 11 significant bits
    x.push_back(mid);
    x.push_back(std::nextafter(mid, 0.0f));
    x.push_back(std::nextafter(mid, 2 * mid));
  }
  for (float s :
       {65504.0f, 65519.99f, 65520.0f, 1e30f, 0x1p-24f, 0x1p-25f, 0x1.8p-25f, 0x1p-26f, 1e-45f})
    for (float sign : {1.0f, -1.0f})
      x.push_back(sign * s);
  x.push_back(std::bit_cast<float>(0x7FA12345u));  // signalling NaN with a payload
  x.push_back(std::bit_cast<float>(0xFFC54321u));  // negative quiet NaN with a payload
  TestRng rng(7);
  for (int i = 0; i < 100000; ++i)
    x.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng.next())));

  Fp16Compressor c;
  const auto [host, dev] = encode_both(c, x);
  EXPECT_EQ(first_byte_difference(dev, host), "") << "f32 -> f16";

  // Every half pattern back to f32 (NaN payloads are moved bit for bit, so even they must agree).
  std::vector<uint8_t> halves(2 * 0x10000);
  for (uint32_t h = 0; h < 0x10000; ++h) {
    halves[2 * h] = static_cast<uint8_t>(h);
    halves[2 * h + 1] = static_cast<uint8_t>(h >> 8);
  }
  const auto [host_x, dev_x] = decode_both(c, halves, 0x10000);
  EXPECT_EQ(first_byte_difference(dev_x, host_x), "") << "f16 -> f32";
}

TEST_F(CompressorOnDevice, SignBitsMatchAndScalesAgreeToRounding) {
  for (size_t n : {size_t{1}, size_t{9}, size_t{1000}, size_t{100003}}) {
    for (size_t chunk_size : {size_t{0}, size_t{3}, size_t{64}, size_t{1000}}) {
      SignCompressor c(chunk_size);
      const std::vector<float> x = tricky(n, n + 17 * chunk_size);
      const auto [host, dev] = encode_both(c, x);
      const size_t chunks = chunk_size == 0 ? 1 : (n + chunk_size - 1) / chunk_size;
      // Bits: identical.
      EXPECT_EQ(first_byte_difference(std::vector<uint8_t>(dev.begin() + 4 * chunks, dev.end()),
                                      std::vector<uint8_t>(host.begin() + 4 * chunks, host.end())),
                "")
          << "sign bits, n " << n << " chunk " << chunk_size;
      // Scales: the mean of |x| summed in double in another order, rounded to float: within 2 ulp.
      for (size_t i = 0; i < chunks; ++i) {
        float h, d;
        std::memcpy(&h, host.data() + 4 * i, 4);
        std::memcpy(&d, dev.data() + 4 * i, 4);
        EXPECT_NEAR(d, h, 2 * std::numeric_limits<float>::epsilon() * std::fabs(h) + 1e-44f)
            << "scale " << i << ", n " << n << " chunk " << chunk_size;
      }
      // Decoding the host's encoding: the host's values exactly (a selection, no arithmetic).
      const auto [host_x, dev_x] = decode_both(c, host, n);
      EXPECT_EQ(first_byte_difference(dev_x, host_x), "")
          << "sign decode, n " << n << " chunk " << chunk_size;
    }
  }
}

TEST_F(CompressorOnDevice, EmptyAndHostDeviceMixturesAreHandled) {
  MinMaxUint8Compressor c(0);
  Buffer empty_in(device(), DType::kF32, 0);
  Buffer empty_out(device(), DType::kU8, 0);
  c.encode(empty_in, empty_out);  // nothing to do, nothing launched
  c.decode(empty_out, empty_in);

  // A device input with a host output is a user error the kernels refuse.
  Buffer in = on_device(std::vector<float>{1.0f, 2.0f});
  std::vector<uint8_t> host_out(static_cast<size_t>(c.encoded_bytes(2).count()));
  EXPECT_THROW(c.encode(in, BufferView::of(std::span<uint8_t>(host_out))), ConfigError);
}

}  // namespace
}  // namespace bagua
