// Helpers for the compressor tests: encode/decode std::vectors through host buffer views, and seeded
// test inputs.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/compress/compressor.h"

namespace bagua::testing {

inline std::vector<uint8_t> encode_all(Compressor& c, std::vector<float> x) {
  std::vector<uint8_t> out(static_cast<size_t>(c.encoded_bytes(x.size()).count()), 0xAB);
  c.encode(BufferView::of(std::span<float>(x)), BufferView::of(std::span<uint8_t>(out)));
  return out;
}

inline std::vector<float> decode_all(Compressor& c, std::vector<uint8_t> bytes, size_t n) {
  std::vector<float> out(n, -12345.0f);
  c.decode(BufferView::of(std::span<uint8_t>(bytes)), BufferView::of(std::span<float>(out)));
  return out;
}

inline std::vector<float> round_trip(Compressor& c, const std::vector<float>& x) {
  return decode_all(c, encode_all(c, x), x.size());
}

// n values uniform in [lo, hi), from a fixed seed (std::mt19937 is specified bit for bit; the
// distribution is not, which only changes which inputs a test sees, never what it checks).
inline std::vector<float> uniform_values(size_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> x(n);
  for (float& v : x)
    v = dist(gen);
  return x;
}

// QSGD inputs whose chunks have tiny norms, where s / norm is at or past f32's overflow (qsgd.h:
// such a chunk is quantized on x and norm scaled by 2^64).
enum class TinyNorm {
  kSubnormal,   // every element subnormal or zero, either sign
  kLone,        // zeros and one element per chunk: +-FLT_MIN, the least subnormal, 1e-36, 2^-120, ...
  kBoundary,    // one element per chunk within two ulps of qsgd_overflow_boundary(s), the others
                // 2^-30 of it or less (the norm is that element's magnitude)
  kScaled2p140  // normal(0, 1) values times 2^-140: every norm below 2^-128 <= s / FLT_MAX
};
inline constexpr TinyNorm kTinyNorms[] = {TinyNorm::kSubnormal, TinyNorm::kLone, TinyNorm::kBoundary,
                                          TinyNorm::kScaled2p140};

inline std::string to_string(TinyNorm k) {
  switch (k) {
    case TinyNorm::kSubnormal:
      return "subnormal";
    case TinyNorm::kLone:
      return "lone";
    case TinyNorm::kBoundary:
      return "boundary";
    case TinyNorm::kScaled2p140:
      return "scaled-2^-140";
  }
  return "?";
}

// The least positive float b with s / b finite in f32: norms below it overflow s / norm.
inline float qsgd_overflow_boundary(uint32_t levels) {
  const auto s = static_cast<float>(levels);
  float b = s / std::numeric_limits<float>::max();
  while (std::isfinite(s / b))
    b = std::nextafter(b, 0.0f);
  while (!std::isfinite(s / b))
    b = std::nextafter(b, std::numeric_limits<float>::infinity());
  return b;
}

inline std::vector<float> tiny_norm_values(TinyNorm kind, size_t n, size_t chunk_size, uint32_t levels,
                                           uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> half_to_one(0.5f, 1.0f);
  std::vector<float> x(n, 0.0f);
  const size_t chunk = chunk_size == 0 ? n : chunk_size;
  auto sign = [&] { return gen() % 2 ? 1.0f : -1.0f; };
  switch (kind) {
    case TinyNorm::kSubnormal:
      for (float& v : x)
        v = gen() % 5 == 0 ? 0.0f : std::bit_cast<float>(static_cast<uint32_t>(gen()) & 0x807FFFFFu);
      break;
    case TinyNorm::kLone: {
      const float lone[] = {std::numeric_limits<float>::min(),
                            std::numeric_limits<float>::denorm_min(),
                            3 * std::numeric_limits<float>::denorm_min(),
                            0x1.8p-140f,
                            0x1p-128f,
                            1e-36f,
                            0x1p-120f,
                            0x1.fffffep-113f};
      for (size_t begin = 0; begin < n; begin += chunk)
        x[begin + gen() % std::min(chunk, n - begin)] = sign() * lone[gen() % std::size(lone)];
      break;
    }
    case TinyNorm::kBoundary: {
      const float b = qsgd_overflow_boundary(levels);
      for (size_t begin = 0; begin < n; begin += chunk) {
        const size_t len = std::min(chunk, n - begin);
        for (size_t j = 0; j < len; ++j)
          x[begin + j] = sign() * std::ldexp(b * half_to_one(gen), -30);
        float v = b;
        for (int k = static_cast<int>(gen() % 5) - 2; k != 0; k += k < 0 ? 1 : -1)
          v = std::nextafter(v, k < 0 ? 0.0f : 1.0f);
        x[begin + gen() % len] = sign() * v;
      }
      break;
    }
    case TinyNorm::kScaled2p140:
      for (float& v : x)
        v = std::ldexp(normal(gen), -140);
      break;
  }
  return x;
}

inline float f32_from_bytes(const std::vector<uint8_t>& b, size_t offset) {
  float v;
  std::memcpy(&v, b.data() + offset, 4);
  return v;
}

}  // namespace bagua::testing
