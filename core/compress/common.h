// Helpers shared by the compressors' implementations: argument checks, device dispatch, unaligned
// little-endian loads and stores, chunking, rounding and a deterministic random number generator.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/buffer.h"
#include "core/compress/compressor.h"
#include "core/device_kernels.h"

namespace bagua::compress_detail {

// Checks the views of an encode (in: n f32, out: encoded_bytes(n) u8). Returns false when there is no
// data to touch (either view is meta, or n = 0).
bool check_encode(const Compressor& c, const BufferView& in, const BufferView& out);
// Checks the views of a decode (in: encoded_bytes(n) u8, out: n f32). Returns false as check_encode.
bool check_decode(const Compressor& c, const BufferView& in, const BufferView& out);

// Whether the work belongs on a device (either view lives in device memory).
inline bool on_device(const BufferView& a, const BufferView& b) {
  return a.memory() == Memory::kDevice || b.memory() == Memory::kDevice;
}
// The device kernels of the space of `a` or `b` (whichever is on a device); ConfigError if it has none.
const DeviceKernels& device_kernels(const Compressor& c, const BufferView& a, const BufferView& b);
[[noreturn]] void no_device_kernel(const Compressor& c);

// Encodings are byte streams: fields are stored little-endian (the native order of every target here)
// at offsets that need not be aligned, hence memcpy.
inline void store_f32(uint8_t* p, float v) {
  std::memcpy(p, &v, sizeof v);
}
inline float load_f32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store_u64(uint8_t* p, uint64_t v) {
  std::memcpy(p, &v, sizeof v);
}
inline uint64_t load_u64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline size_t div_up(size_t a, size_t b) {
  return (a + b - 1) / b;
}
inline size_t align_up(size_t a, size_t b) {
  return div_up(a, b) * b;
}

// Chunking of n elements into chunks of `chunk_size` (0: one chunk of all n). The last chunk may be
// short.
struct Chunking {
  size_t n = 0;
  size_t chunk = 0;  // elements per chunk (n when chunk_size is 0)
  size_t count = 0;  // number of chunks (0 when n is 0)
  Chunking(size_t n_, size_t chunk_size) : n(n_), chunk(chunk_size ? chunk_size : n_) {
    count = n == 0 ? 0 : div_up(n, chunk);
  }
  size_t begin(size_t i) const { return i * chunk; }
  size_t length(size_t i) const { return i + 1 < count ? chunk : n - i * chunk; }
};

// Round to nearest, ties to even — what CUDA's rintf does in the default rounding mode — written so
// that loops over it vectorize: for |v| < 2^23, adding then subtracting 2^23 (with v's sign) leaves an
// integer rounded to nearest even; larger magnitudes are integers already (and NaN passes through).
inline float rint_even(float v) {
  constexpr float kTwo23 = 8388608.0f;  // 2^23: from here on every float is an integer
  const float big = std::copysign(kTwo23, v);
  const float r = (v + big) - big;
  return std::fabs(v) < kTwo23 ? r : v;
}

// SplitMix64 (Steele, Lea & Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014; the
// constants are those of Vigna's reference splitmix64.c). Fully specified here, so that every rank and
// every run draws the same numbers — unlike std:: distributions, whose algorithms are unspecified.
class Rng {
 public:
  explicit Rng(uint64_t state) : state_(state) {}
  // The generator for draw number `step` of the stream named by `seed`.
  static Rng for_step(uint64_t seed, uint64_t step) {
    Rng mixer(seed);
    Rng stream(mixer.next() ^ step);
    return Rng(stream.next());
  }
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, bound), bound > 0, without modulo bias (Lemire, "Fast random integer generation in
  // an interval", ACM TOMACS 2019).
  uint64_t below(uint64_t bound) {
    unsigned __int128 m = static_cast<unsigned __int128>(next()) * bound;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < bound) {
      const uint64_t threshold = (0 - bound) % bound;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(next()) * bound;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }
  // Uniform in [0, 1) on the grid of 2^-24 (every value exact in float32).
  float uniform() { return static_cast<float>(static_cast<int32_t>(next() >> 40)) * 0x1p-24f; }

 private:
  uint64_t state_;
};

}  // namespace bagua::compress_detail
