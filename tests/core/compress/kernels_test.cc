// core/compress/kernels.h against core/compress/reference.h: the vectorised host kernels must give the
// scalar reference's bytes bit for bit, on random inputs and on the edge cases — NaN (quiet and
// signalling, either sign), infinities, zeros of either sign (and a zero as a chunk's min or max, where
// the kernels defer to the reference), subnormals, all-equal chunks, lengths that are not a multiple of
// any vector width, chunk sizes that do not divide n, and pointers one element (one byte) off alignment.
#include "core/compress/kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/compress/cast.h"
#include "core/compress/kernels_x86.h"
#include "core/compress/minmax_uint8.h"
#include "core/compress/qsgd.h"
#include "core/compress/reference.h"
#include "core/compress/sign.h"
#include "core/compress/topk.h"
#include "tests/core/compress/compress_test_util.h"

namespace bagua {
namespace {

namespace fast = compress_kernels;
namespace ref = compress_reference;

// Runs body once per instruction-set level this CPU has (baseline, AVX2, AVX-512), each level's
// kernels in use, then restores the highest.
template <class Body>
void for_each_isa(Body body) {
  for (fast::Isa level : {fast::Isa::kBaseline, fast::Isa::kAvx2, fast::Isa::kAvx512}) {
    if (level > fast::cpu_isa()) continue;
    ASSERT_EQ(fast::limit_isa(level), level);
    SCOPED_TRACE("isa " + fast::to_string(level));
    body();
    if (::testing::Test::HasFatalFailure()) break;
  }
  fast::limit_isa(fast::cpu_isa());
}

constexpr size_t kLengths[] = {1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 100, 513, 4099, 70001};
constexpr size_t kChunkSizes[] = {0, 1, 5, 33, 512};

// Inputs of `kind` with n elements, from `seed`.
enum class Kind { kNormal, kWide, kSpecial, kAllEqual, kZeroMin, kZeroMax };
const Kind kKinds[] = {Kind::kNormal,   Kind::kWide,    Kind::kSpecial,
                       Kind::kAllEqual, Kind::kZeroMin, Kind::kZeroMax};

std::string name(Kind k) {
  switch (k) {
    case Kind::kNormal:
      return "normal";
    case Kind::kWide:
      return "wide";
    case Kind::kSpecial:
      return "special";
    case Kind::kAllEqual:
      return "all-equal";
    case Kind::kZeroMin:
      return "zero-min";
    case Kind::kZeroMax:
      return "zero-max";
  }
  return "?";
}

std::vector<float> make(Kind kind, size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1e-2f);
  std::vector<float> x(n);
  switch (kind) {
    case Kind::kNormal:
      for (float& v : x)
        v = normal(gen);
      break;
    case Kind::kWide:  // random bit patterns of finite floats: every exponent, subnormals included
      for (float& v : x) {
        uint32_t bits = static_cast<uint32_t>(gen());
        if ((bits & 0x7F800000u) == 0x7F800000u) bits &= 0xBFFFFFFFu;
        v = std::bit_cast<float>(bits);
      }
      break;
    case Kind::kSpecial: {
      const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                                -std::numeric_limits<float>::quiet_NaN(),
                                std::numeric_limits<float>::signaling_NaN(),
                                std::bit_cast<float>(0x7FC12345u),
                                std::numeric_limits<float>::infinity(),
                                -std::numeric_limits<float>::infinity(),
                                0.0f,
                                -0.0f,
                                std::numeric_limits<float>::denorm_min(),
                                -std::numeric_limits<float>::min(),
                                65504.0f,
                                65520.0f,
                                -65519.99f,
                                0x1p-25f,
                                0x1.8p-25f,
                                std::numeric_limits<float>::max()};
      for (float& v : x)
        v = gen() % 3 == 0 ? specials[gen() % std::size(specials)] : normal(gen);
      break;
    }
    case Kind::kAllEqual:
      for (float& v : x)
        v = 0.125f;
      break;
    case Kind::kZeroMin:  // non-negative with zeros of both signs: which zero is the min
      for (float& v : x)
        v = gen() % 4 == 0 ? (gen() % 2 ? 0.0f : -0.0f) : std::fabs(normal(gen));
      break;
    case Kind::kZeroMax:
      for (float& v : x)
        v = gen() % 4 == 0 ? (gen() % 2 ? 0.0f : -0.0f) : -std::fabs(normal(gen));
      break;
  }
  return x;
}

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<uint8_t> b(n);
  for (uint8_t& v : b)
    v = static_cast<uint8_t>(gen());
  return b;
}

// The first byte where a and b differ, or -1.
long first_difference(const void* a, const void* b, size_t bytes) {
  const auto* pa = static_cast<const uint8_t*>(a);
  const auto* pb = static_cast<const uint8_t*>(b);
  for (size_t i = 0; i < bytes; ++i) {
    if (pa[i] != pb[i]) return static_cast<long>(i);
  }
  return -1;
}

// An input copied to one float (or one byte) past a 64-byte boundary, so that no vector load is
// aligned.
struct Unaligned {
  std::vector<uint8_t> storage;
  size_t offset;
  Unaligned(const void* data, size_t bytes, size_t off) : storage(bytes + 128), offset(off) {
    const size_t pad = (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64 + off;
    offset = pad;
    std::memcpy(storage.data() + offset, data, bytes);
  }
  template <class T>
  T* as() {
    return reinterpret_cast<T*>(storage.data() + offset);
  }
};

// Runs an encode kernel and its reference on x (aligned, and shifted by one float with the output
// shifted by one byte), expecting equal bytes.
template <class Fast, class Ref>
void expect_same_encoding(const std::vector<float>& x, size_t bytes, Fast fast_encode, Ref ref_encode,
                          const std::string& what) {
  for (size_t shift : {size_t{0}, size_t{4}}) {
    Unaligned in(x.data(), 4 * x.size(), shift);
    std::vector<uint8_t> a(bytes + 1, 0xAB), b(bytes + 1, 0xAB);
    fast_encode(in.as<float>(), a.data() + (shift ? 1 : 0));
    ref_encode(in.as<float>(), b.data() + (shift ? 1 : 0));
    const long at = first_difference(a.data(), b.data(), a.size());
    ASSERT_EQ(at, -1) << what << (shift ? " (unaligned)" : "") << ": first differing byte " << at
                      << ": kernel " << int{a[at]} << ", reference " << int{b[at]};
  }
}

template <class Fast, class Ref>
void expect_same_decoding(const std::vector<uint8_t>& y, size_t n, Fast fast_decode, Ref ref_decode,
                          const std::string& what) {
  for (size_t shift : {size_t{0}, size_t{1}}) {
    Unaligned in(y.data(), y.size(), shift);
    std::vector<float> a(n + 1, -7.0f), b(n + 1, -7.0f);
    fast_decode(in.as<uint8_t>(), a.data() + shift);
    ref_decode(in.as<uint8_t>(), b.data() + shift);
    const long at = first_difference(a.data(), b.data(), 4 * a.size());
    ASSERT_EQ(at, -1) << what << (shift ? " (unaligned)" : "") << ": first differing element " << at / 4
                      << ": kernel " << a[static_cast<size_t>(at) / 4] << ", reference "
                      << b[static_cast<size_t>(at) / 4];
  }
}

TEST(CompressKernels, MinMaxUint8MatchesTheReference) {
  for_each_isa([&] {
    for (Kind kind : kKinds) {
      for (size_t n : kLengths) {
        for (size_t chunk : kChunkSizes) {
          const std::string what = "minmax_uint8 " + name(kind) + " n=" + std::to_string(n) +
                                   " chunk=" + std::to_string(chunk);
          const auto x = make(kind, n, static_cast<uint32_t>(n * 31 + chunk));
          const MinMaxUint8Compressor c(chunk);
          const auto bytes = static_cast<size_t>(c.encoded_bytes(n).count());
          expect_same_encoding(
              x, bytes,
              [&](const float* in, uint8_t* out) { fast::minmax_uint8_encode(in, n, chunk, out); },
              [&](const float* in, uint8_t* out) { ref::minmax_uint8_encode(in, n, chunk, out); },
              what);
          std::vector<uint8_t> encoded(bytes);
          ref::minmax_uint8_encode(x.data(), n, chunk, encoded.data());
          expect_same_decoding(
              encoded, n,
              [&](const uint8_t* in, float* out) { fast::minmax_uint8_decode(in, n, chunk, out); },
              [&](const uint8_t* in, float* out) { ref::minmax_uint8_decode(in, n, chunk, out); },
              what + " decode");
        }
      }
    }
  });
}

// A record of n bytes (every byte value, n >= 1024 so that the certified decode runs) under the
// header (min, max).
std::vector<uint8_t> minmax_record(float min, float max, size_t n) {
  std::vector<uint8_t> y(static_cast<size_t>(MinMaxUint8Compressor(0).encoded_bytes(n).count()), 0);
  std::memcpy(y.data(), &min, 4);
  std::memcpy(y.data() + 4, &max, 4);
  for (size_t j = 0; j < n; ++j)
    y[MinMaxUint8Compressor::kHeaderBytes + j] = static_cast<uint8_t>(j * 37 % 256);
  return y;
}

TEST(CompressKernels, MinMaxDecodeIsTheDivisionForEveryGrid) {
  // Headers that make (q + lower_bound) / scale underflow, overflow, divide by zero or infinity, or
  // land on ordinary floats; any pair decodes, so random bit patterns (either order) are used too.
  std::vector<std::pair<float, float>> headers = {
      {-0.03f, 0.031f},
      {0.125f, 0.125f},
      {1e6f, 1e6f},
      {-std::numeric_limits<float>::max(), std::numeric_limits<float>::max()},
      {0.0f, std::numeric_limits<float>::max()},
      {std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::denorm_min()},
      {-std::numeric_limits<float>::infinity(), 1.0f},
      {0.0f, std::numeric_limits<float>::quiet_NaN()},
      {1.0f + 1e-7f, 1.0f},  // max - min + eps is about 0: a huge scale
      {3e38f, -3e38f},
      {1e-30f, 2e-30f},
      {-1e30f, 1e30f}};
  std::mt19937 gen(9);
  for (int i = 0; i < 300; ++i) {
    const auto a = std::bit_cast<float>(static_cast<uint32_t>(gen()) & 0xBF7FFFFFu);
    const auto b = std::bit_cast<float>(static_cast<uint32_t>(gen()) & 0xBF7FFFFFu);
    headers.emplace_back(a, b);
    headers.emplace_back(a, a * 1.001f);
  }
  const size_t n = 1100;
  size_t certified = 0, divided = 0;
  for_each_isa([&] {
    for (const auto& [min, max] : headers) {
      const auto y = minmax_record(min, max, n);
      expect_same_decoding(
          y, n, [&](const uint8_t* in, float* out) { fast::minmax_uint8_decode(in, n, 0, out); },
          [&](const uint8_t* in, float* out) { ref::minmax_uint8_decode(in, n, 0, out); },
          "minmax decode min=" + std::to_string(min) + " max=" + std::to_string(max));
      if (fast::isa() == fast::Isa::kAvx2)
        ++(fast::x86::decode_exact_avx2(MinMaxUint8Compressor::levels(min, max)) ? certified : divided);
    }
  });
  // Both paths ran (where the CPU has AVX2): most grids are certified, the degenerate ones are not.
  if (fast::cpu_isa() >= fast::Isa::kAvx2) {
    EXPECT_GT(certified, headers.size() / 2);
    EXPECT_GT(divided, 0u);
  }
}

TEST(CompressKernels, MinMaxQuantizeAtRoundingBoundaries) {
  // Elements whose x * scale lies at, just below and just above k + 1/2 (where rint's tie goes to
  // even), for every level k of a chunk with min -1 and max 1.5, and the same at a large offset.
  for (float offset : {0.0f, 1000.0f}) {
    const float min = offset - 1.0f, max = offset + 1.5f;
    const MinMaxUint8Compressor::Levels l = MinMaxUint8Compressor::levels(min, max);
    std::vector<float> x = {min, max};
    for (float k = l.lower_bound - 2; k <= l.upper_bound + 2; k += 1.0f) {
      const float tie = (k + 0.5f) / l.scale;
      for (float v : {std::nextafter(tie, -INFINITY), tie, std::nextafter(tie, INFINITY)}) {
        if (v >= min && v <= max) x.push_back(v);
      }
    }
    const size_t n = x.size();
    const auto bytes = static_cast<size_t>(MinMaxUint8Compressor(0).encoded_bytes(n).count());
    for_each_isa([&] {
      expect_same_encoding(
          x, bytes, [&](const float* in, uint8_t* out) { fast::minmax_uint8_encode(in, n, 0, out); },
          [&](const float* in, uint8_t* out) { ref::minmax_uint8_encode(in, n, 0, out); },
          "minmax ties offset=" + std::to_string(offset));
    });
  }
}

TEST(CompressKernels, MinMaxQuantizeAroundTheSmallLevelsBound) {
  // The AVX-512 quantize takes a shortcut (integer codes straight from the conversion) where
  // |upper_bound| <= 2^22 and every rint(x scale) >= -2^22, and the exact loop elsewhere: chunks of
  // range 1 (scale about 255) whose upper_bound (or, below zero, the rint of min x scale) lies just
  // inside, at and just outside that bound and far beyond it (to past int32's range), with x at its min and max, at rint's
  // ties and at random; each also with a NaN among them (the shortcut's conversion makes it INT32_MIN
  // and the exact loop must take over). Here x scale's ulp is 1/2 or more, so ties are common.
  constexpr float kBound = 4194304.0f;  // 2^22
  std::mt19937 gen(22);
  for (float target : {kBound - 300, kBound - 1, kBound, kBound + 1, kBound + 255, kBound + 256,
                       2 * kBound, 8 * kBound, 256 * kBound, 512 * kBound, 1024 * kBound}) {
    for (float sign : {1.0f, -1.0f}) {
      for (bool with_nan : {false, true}) {
        // max x scale near target (above zero) or min x scale near -target (below).
        const float min = sign > 0 ? target / 255.0f - 1.0f : -target / 255.0f;
        const float max = min + 1.0f;
        const MinMaxUint8Compressor::Levels l = MinMaxUint8Compressor::levels(min, max);
        std::vector<float> x = {min, max};
        std::uniform_real_distribution<float> in(min, max);
        for (int i = 0; i < 4000; ++i) {
          const float v = in(gen);
          const float tie = (std::floor(v * l.scale) + 0.5f) / l.scale;  // near k + 1/2
          for (float w : {v, tie, std::nextafter(tie, -INFINITY), std::nextafter(tie, INFINITY)})
            if (w >= min && w <= max) x.push_back(w);
        }
        if (with_nan) x[x.size() / 3] = std::numeric_limits<float>::quiet_NaN();
        const size_t n = x.size();
        const auto bytes = static_cast<size_t>(MinMaxUint8Compressor(0).encoded_bytes(n).count());
        for_each_isa([&] {
          expect_same_encoding(
              x, bytes, [&](const float* v, uint8_t* out) { fast::minmax_uint8_encode(v, n, 0, out); },
              [&](const float* v, uint8_t* out) { ref::minmax_uint8_encode(v, n, 0, out); },
              "minmax near the bound: target=" + std::to_string(target) +
                  " sign=" + std::to_string(sign) + " nan=" + std::to_string(with_nan) +
                  " upper_bound=" + std::to_string(l.upper_bound));
        });
      }
    }
  }
}

TEST(CompressKernels, MinMaxOfZerosKeepsTheReferencesZero) {
  for_each_isa([&] {
    // The first element is +0 and a -0 follows in another lane: the reference keeps +0 as the min (-0 <
    // +0 is false) — so must the kernel, whichever lane sees the -0 first.
    std::vector<float> x(64, 1.0f);
    x[0] = 0.0f;
    x[41] = -0.0f;
    const auto fast_mm = fast::chunk_min_max(x.data(), x.size());
    const auto ref_mm = ref::chunk_min_max(x.data(), x.size());
    EXPECT_EQ(std::bit_cast<uint32_t>(fast_mm.first), std::bit_cast<uint32_t>(ref_mm.first));
    EXPECT_EQ(std::bit_cast<uint32_t>(ref_mm.first), 0u);
    // A NaN first element: every lane starts from it and keeps it.
    x[0] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_TRUE(std::isnan(fast::chunk_min_max(x.data(), x.size()).first));
    EXPECT_TRUE(std::isnan(fast::chunk_min_max(x.data(), x.size()).second));
  });
}

TEST(CompressKernels, SignMatchesTheReference) {
  for_each_isa([&] {
    for (Kind kind : kKinds) {
      for (size_t n : kLengths) {
        for (size_t chunk : kChunkSizes) {
          const std::string what =
              "sign " + name(kind) + " n=" + std::to_string(n) + " chunk=" + std::to_string(chunk);
          const auto x = make(kind, n, static_cast<uint32_t>(n * 17 + chunk));
          const SignCompressor c(chunk);
          const auto bytes = static_cast<size_t>(c.encoded_bytes(n).count());
          expect_same_encoding(
              x, bytes, [&](const float* in, uint8_t* out) { fast::sign_encode(in, n, chunk, out); },
              [&](const float* in, uint8_t* out) { ref::sign_encode(in, n, chunk, out); }, what);
          const auto encoded = random_bytes(bytes, static_cast<uint32_t>(n + chunk));
          expect_same_decoding(
              encoded, n, [&](const uint8_t* in, float* out) { fast::sign_decode(in, n, chunk, out); },
              [&](const uint8_t* in, float* out) { ref::sign_decode(in, n, chunk, out); },
              what + " decode");
        }
      }
    }
  });
}

TEST(CompressKernels, SignScaleFallsBackWhereTheOrderCouldMatter) {
  for_each_isa([&] {
    // Two elements, 1 and 2^-24: the mean 0.5 + 2^-25 is exactly halfway between two floats (0.5's ulp
    // is 2^-24), so a sum a rounding error off would round the other way: the kernel must take the
    // reference's sum, which rounds the tie to even, 0.5.
    const float x[] = {1.0f, 0x1p-24f};
    EXPECT_EQ(ref::sign_scale(x, 2), 0.5f);
    EXPECT_EQ(fast::sign_scale(x, 2), 0.5f);
    // Many terms of mixed magnitude, where sums in another order differ in their last bits.
    const auto wide = make(Kind::kWide, 100000, 5);
    EXPECT_EQ(std::bit_cast<uint32_t>(fast::sign_scale(wide.data(), wide.size())),
              std::bit_cast<uint32_t>(ref::sign_scale(wide.data(), wide.size())));
  });
}

TEST(CompressKernels, CastsMatchTheReference) {
  for_each_isa([&] {
    for (Kind kind : kKinds) {
      for (size_t n : kLengths) {
        const std::string what = name(kind) + " n=" + std::to_string(n);
        const auto x = make(kind, n, static_cast<uint32_t>(n));
        expect_same_encoding(
            x, 2 * n, [&](const float* in, uint8_t* out) { fast::fp16_encode(in, n, out); },
            [&](const float* in, uint8_t* out) { ref::fp16_encode(in, n, out); }, "fp16 " + what);
        expect_same_encoding(
            x, 2 * n, [&](const float* in, uint8_t* out) { fast::bf16_encode(in, n, out); },
            [&](const float* in, uint8_t* out) { ref::bf16_encode(in, n, out); }, "bf16 " + what);
        // Every 16-bit pattern decodes: random ones cover NaNs, infinities and subnormals.
        const auto encoded = random_bytes(2 * n, static_cast<uint32_t>(n + 1));
        expect_same_decoding(
            encoded, n, [&](const uint8_t* in, float* out) { fast::fp16_decode(in, n, out); },
            [&](const uint8_t* in, float* out) { ref::fp16_decode(in, n, out); },
            "fp16 decode " + what);
        expect_same_decoding(
            encoded, n, [&](const uint8_t* in, float* out) { fast::bf16_decode(in, n, out); },
            [&](const uint8_t* in, float* out) { ref::bf16_decode(in, n, out); },
            "bf16 decode " + what);
      }
    }
  });
}

TEST(CompressKernels, EveryHalfPatternAndEveryBf16RoundingCase) {
  for_each_isa([&] {
    // All 65536 half patterns decode alike, and the floats just around every half's rounding boundary
    // encode alike.
    std::vector<uint8_t> halves(2 * 65536);
    std::vector<float> around;
    for (uint32_t h = 0; h < 65536; ++h) {
      std::memcpy(halves.data() + 2 * h, &h, 2);
      const uint32_t f = std::bit_cast<uint32_t>(f16_bits_to_f32(static_cast<uint16_t>(h)));
      for (uint32_t d : {0u, 0xFFFu, 0x1000u, 0x1001u, 0x7FFFu, 0x8000u, 0x8001u})
        around.push_back(std::bit_cast<float>(f + d));
    }
    expect_same_decoding(
        halves, 65536, [](const uint8_t* in, float* out) { fast::fp16_decode(in, 65536, out); },
        [](const uint8_t* in, float* out) { ref::fp16_decode(in, 65536, out); }, "fp16 all patterns");
    const size_t n = around.size();
    expect_same_encoding(
        around, 2 * n, [&](const float* in, uint8_t* out) { fast::fp16_encode(in, n, out); },
        [&](const float* in, uint8_t* out) { ref::fp16_encode(in, n, out); }, "fp16 boundaries");
    expect_same_encoding(
        around, 2 * n, [&](const float* in, uint8_t* out) { fast::bf16_encode(in, n, out); },
        [&](const float* in, uint8_t* out) { ref::bf16_encode(in, n, out); }, "bf16 boundaries");
  });
}

TEST(CompressKernels, TopKMatchesTheReference) {
  for_each_isa([&] {
    for (Kind kind : kKinds) {
      for (size_t n : kLengths) {
        for (double ratio : {0.01, 0.3, 1.0}) {
          const std::string what =
              "topk " + name(kind) + " n=" + std::to_string(n) + " ratio=" + std::to_string(ratio);
          const auto x = make(kind, n, static_cast<uint32_t>(n * 7));
          const size_t k = sparse_k(ratio, n);
          std::vector<uint32_t> scratch_a, scratch_b;
          expect_same_encoding(
              x, 8 * k,
              [&](const float* in, uint8_t* out) { fast::topk_encode(in, n, k, out, scratch_a); },
              [&](const float* in, uint8_t* out) { ref::topk_encode(in, n, k, out, scratch_b); }, what);
        }
      }
    }
  });
}

TEST(CompressKernels, TopKWhoseSampleMisleadsStillMatches) {
  for_each_isa([&] {
    // The kernel picks its candidates' floor from a strided sample (1024 keys at stride n / 1024): make
    // exactly the sampled elements large, so that fewer than k elements reach the floor and the kernel
    // must redo its pass from floor 0.
    const size_t n = 70001, samples = 1024;
    std::vector<float> x = make(Kind::kNormal, n, 3);
    for (size_t s = 0; s < samples; ++s)
      x[s * n / samples] = 1.0f + static_cast<float>(s);
    for (double ratio : {0.05, 0.3}) {
      const size_t k = sparse_k(ratio, n);
      ASSERT_GT(k, samples);
      std::vector<uint32_t> scratch_a, scratch_b;
      expect_same_encoding(
          x, 8 * k, [&](const float* in, uint8_t* out) { fast::topk_encode(in, n, k, out, scratch_a); },
          [&](const float* in, uint8_t* out) { ref::topk_encode(in, n, k, out, scratch_b); },
          "topk misleading sample ratio=" + std::to_string(ratio));
    }
  });
}

TEST(CompressKernels, TopKWithTiesAtTheThresholdMatches) {
  for_each_isa([&] {
    // Magnitudes from eight values only: the k-th largest key is shared by many elements, some kept
    // (the first in index order) and some not, in blocks where other elements are kept too; the
    // AVX-512 pass keeps such blocks one element at a time while ties are left, sixteen at a time after.
    for (size_t n : {size_t{100}, size_t{4099}, size_t{70001}}) {
      std::vector<float> x(n);
      for (size_t i = 0; i < n; ++i)
        x[i] = static_cast<float>((i * 2654435761u >> 7) % 8) * ((i % 3 == 0) ? -0.5f : 0.5f);
      for (double ratio : {0.01, 0.2, 0.5, 0.9}) {
        const size_t k = sparse_k(ratio, n);
        std::vector<uint32_t> scratch_a, scratch_b;
        expect_same_encoding(
            x, 8 * k,
            [&](const float* in, uint8_t* out) { fast::topk_encode(in, n, k, out, scratch_a); },
            [&](const float* in, uint8_t* out) { ref::topk_encode(in, n, k, out, scratch_b); },
            "topk ties n=" + std::to_string(n) + " ratio=" + std::to_string(ratio));
      }
    }
  });
}

// One QSGD case at the level in use: the kernel encodes x as the reference does (at `seed`, `step`),
// and decodes as the reference does the random bytes of `random_seed` where given, else the
// reference's encoding of x.
void expect_qsgd_matches(const std::vector<float>& x, size_t chunk, uint32_t levels, uint64_t seed,
                         uint64_t step, std::optional<uint32_t> random_seed, const std::string& what) {
  const size_t n = x.size();
  const QsgdCompressor c(levels, chunk, 0);
  const auto bytes = static_cast<size_t>(c.encoded_bytes(n).count());
  expect_same_encoding(
      x, bytes,
      [&](const float* in, uint8_t* out) { fast::qsgd_encode(in, n, chunk, levels, seed, step, out); },
      [&](const float* in, uint8_t* out) { ref::qsgd_encode(in, n, chunk, levels, seed, step, out); },
      what);
  std::vector<uint8_t> encoded(bytes);
  if (random_seed)
    encoded = random_bytes(bytes, *random_seed);
  else
    ref::qsgd_encode(x.data(), n, chunk, levels, seed, step, encoded.data());
  expect_same_decoding(
      encoded, n, [&](const uint8_t* in, float* out) { fast::qsgd_decode(in, n, chunk, levels, out); },
      [&](const uint8_t* in, float* out) { ref::qsgd_decode(in, n, chunk, levels, out); },
      what + " decode");
}

TEST(CompressKernels, QsgdMatchesTheReference) {
  for_each_isa([&] {
    for (Kind kind : kKinds) {
      for (size_t n : kLengths) {
        for (uint32_t levels : {1u, 7u, 127u, 65535u}) {
          for (size_t chunk : {size_t{0}, size_t{5}, size_t{512}}) {
            const std::string what = "qsgd " + name(kind) + " n=" + std::to_string(n) +
                                     " levels=" + std::to_string(levels) +
                                     " chunk=" + std::to_string(chunk);
            const auto x = make(kind, n, static_cast<uint32_t>(n * 3 + levels));
            expect_qsgd_matches(x, chunk, levels, 42, n, static_cast<uint32_t>(n + levels), what);
          }
        }
      }
    }
  });
}

// Chunks whose s / norm overflows f32 (qsgd.h: quantized on x and norm scaled by 2^64): subnormal
// elements, a lone FLT_MIN-sized element, norms within two ulps of the overflow boundary, many small
// elements. Every ISA level's encoding is the reference's, at every code width (2, 4, 5, 8, 9 and 17
// bits: the 4- and 8-bit AVX-512 packings, bit extracts, the bit writer), with chunks that take the
// vector loops and the chunk-by-chunk AVX-512 encoder (16, 512, one chunk) and those that do not (1,
// 5); the decodings of those encodings too.
TEST(CompressKernels, QsgdTinyNormsMatchTheReference) {
  for_each_isa([&] {
    for (testing::TinyNorm kind : testing::kTinyNorms) {
      for (size_t n : {size_t{1}, size_t{7}, size_t{16}, size_t{17}, size_t{33}, size_t{100},
                       size_t{513}, size_t{4099}}) {
        for (uint32_t levels : {1u, 7u, 15u, 127u, 255u, 65535u}) {
          for (size_t chunk : {size_t{0}, size_t{1}, size_t{5}, size_t{16}, size_t{512}}) {
            const std::string what = "qsgd " + testing::to_string(kind) + " n=" + std::to_string(n) +
                                     " levels=" + std::to_string(levels) +
                                     " chunk=" + std::to_string(chunk);
            const auto x = testing::tiny_norm_values(kind, n, chunk, levels,
                                                     static_cast<uint32_t>(n * 7 + levels + chunk));
            expect_qsgd_matches(x, chunk, levels, 5, levels, std::nullopt, what);
          }
        }
      }
    }
  });
}

// x + e where both are NaN is a NaN with either operand's sign and payload (IEEE 754-2008, 6.2.3), and
// GCC may swap the operands of a commutative + (at -O1 the fused and the reference sides then differ):
// the whole-step tests keep e a number wherever x is NaN, so that every sum is defined bit for bit.
void no_nan_pairs(const std::vector<float>& x, std::vector<float>& e) {
  for (size_t i = 0; i < x.size(); ++i)
    if (std::isnan(x[i]) && std::isnan(e[i])) e[i] = 0.5f;
}

// Error feedback's fused step: the encoding and the new residual must be what the reference's encode,
// decode and add_scaled (corrected + (-1) D(c)) give. Where both corrected and D(c) are NaN the sum is
// a NaN whose sign and payload are either operand's (IEEE 754-2008, 6.2.3; GCC may swap the operands of
// a commutative +, and at -O1 the two sides differ): there the residual must be NaN on both sides;
// every other element, NaNs included, bit for bit.
template <class Fused, class Encode, class Decode>
void expect_same_feedback(const std::vector<float>& corrected, size_t bytes, Fused fused,
                          Encode ref_encode, Decode ref_decode, const std::string& what) {
  const size_t n = corrected.size();
  std::vector<float> e = corrected, expected(n), decoded(n);
  std::vector<uint8_t> a(bytes + 1, 0xAB), b(bytes + 1, 0xAB);
  fused(e.data(), a.data());
  ref_encode(corrected.data(), b.data());
  ref_decode(b.data(), decoded.data());
  ref::add_scaled(corrected.data(), -1.0f, decoded.data(), n, expected.data());
  const long at = first_difference(a.data(), b.data(), a.size());
  ASSERT_EQ(at, -1) << what << ": encoding differs at byte " << at;
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(corrected[i]) && std::isnan(decoded[i])) {
      ASSERT_TRUE(std::isnan(e[i]) && std::isnan(expected[i]))
          << what << ": residual differs at element " << i << ": " << e[i] << " vs " << expected[i];
      continue;
    }
    ASSERT_EQ(first_difference(&e[i], &expected[i], 4), -1)
        << what << ": residual differs at element " << i << ": " << e[i] << " vs " << expected[i];
  }
}

TEST(CompressKernels, FusedErrorFeedbackMatchesTheReference) {
  for_each_isa([&] {
    volatile float opaque = -1.0f;  // as error feedback passes it: a value, not a literal to fold
    const float minus_one = opaque, one = -opaque;
    for (Kind kind : kKinds) {
      for (size_t n : kLengths) {
        // corrected = x + e is a sum: no signalling NaN (the fused forms rely on it).
        std::vector<float> corrected = make(kind, n, static_cast<uint32_t>(n + 11));
        for (float& v : corrected)
          v = v + 0.0f * 1.0f;
        for (size_t chunk : kChunkSizes) {
          const std::string suffix =
              " " + name(kind) + " n=" + std::to_string(n) + " chunk=" + std::to_string(chunk);
          const SignCompressor sign(chunk);
          expect_same_feedback(
              corrected, static_cast<size_t>(sign.encoded_bytes(n).count()),
              [&](float* e, uint8_t* y) { fast::sign_encode_residual(e, n, chunk, minus_one, y); },
              [&](const float* in, uint8_t* y) { ref::sign_encode(in, n, chunk, y); },
              [&](const uint8_t* y, float* out) { ref::sign_decode(y, n, chunk, out); },
              "sign" + suffix);
          const MinMaxUint8Compressor minmax(chunk);
          expect_same_feedback(
              corrected, static_cast<size_t>(minmax.encoded_bytes(n).count()),
              [&](float* e, uint8_t* y) {
                fast::minmax_uint8_encode_residual(e, n, chunk, minus_one, y);
              },
              [&](const float* in, uint8_t* y) { ref::minmax_uint8_encode(in, n, chunk, y); },
              [&](const uint8_t* y, float* out) { ref::minmax_uint8_decode(y, n, chunk, out); },
              "minmax_uint8" + suffix);
          // The whole step, x + 1 e included, against add_scaled then the reference's three steps.
          const std::vector<float> x = make(Kind::kSpecial, n, static_cast<uint32_t>(n + 12));
          std::vector<float> e0 = make(kind, n, static_cast<uint32_t>(n + 13)), sum(n);
          no_nan_pairs(x, e0);
          ref::add_scaled(x.data(), one, e0.data(), n, sum.data());
          expect_same_feedback(
              sum, static_cast<size_t>(sign.encoded_bytes(n).count()),
              [&](float* e, uint8_t* y) {
                std::copy(e0.begin(), e0.end(), e);
                fast::sign_encode_feedback(x.data(), one, e, n, chunk, minus_one, y);
              },
              [&](const float* in, uint8_t* y) { ref::sign_encode(in, n, chunk, y); },
              [&](const uint8_t* y, float* out) { ref::sign_decode(y, n, chunk, out); },
              "sign from x" + suffix);
          expect_same_feedback(
              sum, static_cast<size_t>(minmax.encoded_bytes(n).count()),
              [&](float* e, uint8_t* y) {
                std::copy(e0.begin(), e0.end(), e);
                fast::minmax_uint8_encode_feedback(x.data(), one, e, n, chunk, minus_one, y);
              },
              [&](const float* in, uint8_t* y) { ref::minmax_uint8_encode(in, n, chunk, y); },
              [&](const uint8_t* y, float* out) { ref::minmax_uint8_decode(y, n, chunk, out); },
              "minmax_uint8 from x" + suffix);
        }
        const size_t k = sparse_k(0.05, n);
        std::vector<uint32_t> scratch_a, scratch_b;
        expect_same_feedback(
            corrected, 8 * k,
            [&](float* e, uint8_t* y) { fast::topk_encode_residual(e, n, k, minus_one, y, scratch_a); },
            [&](const float* in, uint8_t* y) { ref::topk_encode(in, n, k, y, scratch_b); },
            [&](const uint8_t* y, float* out) {
              // topk.cc's decode: zeros, then the kept values scattered.
              std::fill_n(out, n, 0.0f);
              for (size_t j = 0; j < k; ++j) {
                int32_t index;
                std::memcpy(&index, y + 4 * j, 4);
                std::memcpy(out + index, y + 4 * k + 4 * j, 4);
              }
            },
            "topk " + name(kind) + " n=" + std::to_string(n));
        // The whole step from x, for a few ratios (the last keeps every element).
        const std::vector<float> x = make(Kind::kSpecial, n, static_cast<uint32_t>(n + 14));
        std::vector<float> e0 = make(kind, n, static_cast<uint32_t>(n + 15)), sum(n);
        no_nan_pairs(x, e0);
        ref::add_scaled(x.data(), one, e0.data(), n, sum.data());
        for (double ratio : {0.01, 0.05, 1.0}) {
          const size_t kept = sparse_k(ratio, n);
          expect_same_feedback(
              sum, 8 * kept,
              [&](float* e, uint8_t* y) {
                std::copy(e0.begin(), e0.end(), e);
                fast::topk_encode_feedback(x.data(), one, e, n, kept, minus_one, y, scratch_a);
              },
              [&](const float* in, uint8_t* y) { ref::topk_encode(in, n, kept, y, scratch_b); },
              [&](const uint8_t* y, float* out) {
                std::fill_n(out, n, 0.0f);
                for (size_t j = 0; j < kept; ++j) {
                  int32_t index;
                  std::memcpy(&index, y + 4 * j, 4);
                  std::memcpy(out + index, y + 4 * kept + 4 * j, 4);
                }
              },
              "topk from x ratio=" + std::to_string(ratio) + " " + name(kind) +
                  " n=" + std::to_string(n));
        }
      }
    }
  });
}

TEST(CompressKernels, AddScaledMatchesTheReference) {
  for (size_t n : kLengths) {
    const auto x = make(Kind::kSpecial, n, static_cast<uint32_t>(n));
    const auto e = make(Kind::kWide, n, static_cast<uint32_t>(n + 1));
    for (float a : {1.0f, -1.0f, 0.5f}) {
      std::vector<float> p(n + 1), q(n + 1);
      fast::add_scaled(x.data(), a, e.data(), n, p.data() + 1);
      ref::add_scaled(x.data(), a, e.data(), n, q.data() + 1);
      ASSERT_EQ(first_difference(p.data(), q.data(), 4 * p.size()), -1) << "n=" << n << " a=" << a;
    }
  }
}

}  // namespace
}  // namespace bagua
