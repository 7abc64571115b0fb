// Helpers for the compressor tests: encode/decode std::vectors through host buffer views, and seeded
// test inputs.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <span>
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

inline float f32_from_bytes(const std::vector<uint8_t>& b, size_t offset) {
  float v;
  std::memcpy(&v, b.data() + offset, 4);
  return v;
}

}  // namespace bagua::testing
