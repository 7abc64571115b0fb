// The vectorised host kernels (kernels.h). Each function names, in its comment, the reference
// function (reference.cc) whose loop it performs eight lanes at a time.
#include "core/compress/kernels.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <functional>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/check.h"
#include "core/compress/cast.h"
#include "core/compress/common.h"
#include "core/compress/kernels_x86.h"
#include "core/compress/minmax_uint8.h"
#include "core/compress/qsgd_code.h"
#include "core/compress/reference.h"
#include "core/compress/simd.h"
#include "core/compress/topk_keep.h"

// Every float operation here is the reference's, rounded as the reference rounds it: no a * b + c may
// become a fused multiply-add (the x86-64-v4 clone has FMA instructions).
#pragma GCC optimize("fp-contract=off")

namespace bagua::compress_kernels {

using namespace compress_detail;
using namespace simd;

namespace {

typedef float F32x4 __attribute__((vector_size(16)));
typedef int32_t I32x4 __attribute__((vector_size(16)));

constexpr float kTwo23 = 8388608.0f;  // common.h's rint_even: from 2^23 on every float is an integer

// common.h's rint_even, lane by lane: (v + copysign(2^23, v)) - copysign(2^23, v) where |v| < 2^23.
inline F32x8 rint_even8(F32x8 v) {
  const U32x8 bits = bits_as<U32x8>(v);
  const F32x8 big = bits_as<F32x8>((bits & 0x80000000u) | std::bit_cast<uint32_t>(kTwo23));
  const F32x8 r = (v + big) - big;
  const F32x8 magnitude = bits_as<F32x8>(bits & 0x7FFFFFFFu);
  return magnitude < kTwo23 ? r : v;
}

size_t minmax_record_bytes(size_t len) {
  return MinMaxUint8Compressor::kHeaderBytes + align_up(len, MinMaxUint8Compressor::kAlignBytes);
}

// One element of the reference's quantize loop.
inline uint8_t quantize1(float x, const MinMaxUint8Compressor::Levels& l) {
  float level = rint_even(x * l.scale);
  level = level < l.upper_bound ? level : l.upper_bound;
  float v = level - l.lower_bound;
  v = v > 0.0f ? v : 0.0f;
  v = v < 255.0f ? v : 255.0f;
  return static_cast<uint8_t>(static_cast<int32_t>(v));
}

// Eight elements of it, up to the saturation, which store_bytes16 finishes in the integers: with
// v' = (255 < v ? 255 : v) (a NaN v stays NaN), then q = trunc(v') saturated to [0, 255] — a NaN or a
// negative v' truncates to a negative int32 (NaN to INT32_MIN) and saturates to 0, as the
// reference's v > 0 ? v : 0 makes it 0; every other v' is at most 255 and truncates like the
// reference's cast. One lane select fewer than the reference's two clamps, the same bytes.
inline I32x8 quantize8(F32x8 x, const MinMaxUint8Compressor::Levels& l) {
  F32x8 level = rint_even8(x * l.scale);
  level = level < l.upper_bound ? level : l.upper_bound;
  F32x8 v = level - l.lower_bound;
  v = 255.0f < v ? 255.0f : v;
  return __builtin_convertvector(v, I32x8);
}

// Sum of |x| over 32 lanes of double, then the tail; see kernels.h for why its f32 mean can be
// trusted after the check in certified_mean.
BAGUA_MULTIVERSION
double sum_abs(const float* x, size_t len) {
  F64x4 acc[8] = {};  // eight chains, so that the adds' latency does not bound the loop
  const uint64_t kAbs = 0x7FFFFFFFFFFFFFFFull;
  size_t j = 0;
  for (; j + 32 <= len; j += 32) {
#pragma GCC unroll 8  // the accumulators in registers (GCC keeps a rolled loop's array in memory)
    for (int a = 0; a < 8; ++a) {
      const F64x4 d = __builtin_convertvector(load<F32x4>(x + j + 4 * a), F64x4);
      acc[a] += bits_as<F64x4>(bits_as<U64x4>(d) & kAbs);
    }
  }
  double sum = 0;
  for (; j < len; ++j)
    sum += std::fabs(x[j]);
  const F64x4 total = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  return sum + ((total[0] + total[1]) + (total[2] + total[3]));
}

// Sum of x^2 in double over 32 lanes (each square exact: a float's 24-bit significand squared fits
// double's 53), then the tail: the norm's sum, to be certified as sign's mean is.
BAGUA_MULTIVERSION
double sum_squares(const float* x, size_t len) {
  F64x4 acc[8] = {};
  size_t j = 0;
  for (; j + 32 <= len; j += 32) {
#pragma GCC unroll 8  // the accumulators in registers (GCC keeps a rolled loop's array in memory)
    for (int a = 0; a < 8; ++a) {
      const F64x4 d = __builtin_convertvector(load<F32x4>(x + j + 4 * a), F64x4);
      acc[a] += d * d;
    }
  }
  double sum = 0;
  for (; j < len; ++j)
    sum += static_cast<double>(x[j]) * x[j];
  const F64x4 total = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  return sum + ((total[0] + total[1]) + (total[2] + total[3]));
}

// f32(sum / len) where `sum` was taken in some order: the value the reference's sequential sum gives,
// when every sum within the error bound of kernels.h gives it; NaN as "unknown" otherwise.
float certified_mean(double sum, size_t len, bool* known) {
  *known = false;
  if (!std::isfinite(sum)) return 0.0f;
  const double delta = 4.0 * static_cast<double>(len + 2) * 0x1p-53;
  const double count = static_cast<double>(len);
  const auto lo = static_cast<float>(sum * (1.0 - delta) / count);
  const auto hi = static_cast<float>(sum * (1.0 + delta) / count);
  if (std::bit_cast<uint32_t>(lo) != std::bit_cast<uint32_t>(hi)) return 0.0f;
  *known = true;
  return lo;
}

}  // namespace

// ---- Instruction-set level ---------------------------------------------------------------------

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__ELF__)
#define BAGUA_X86_KERNELS 1
#endif

std::string to_string(Isa level) {
  switch (level) {
    case Isa::kBaseline:
      return "baseline";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
  }
  return "?";
}

Isa cpu_isa() {
#if defined(BAGUA_X86_KERNELS)
  static const Isa level = [] {
    __builtin_cpu_init();
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                      __builtin_cpu_supports("f16c");
    const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                        __builtin_cpu_supports("bmi2");
    return avx2 && avx512 ? Isa::kAvx512 : avx2 ? Isa::kAvx2 : Isa::kBaseline;
  }();
  return level;
#else
  return Isa::kBaseline;
#endif
}

namespace {

std::atomic<int>& isa_in_use() {
  static std::atomic<int> level{static_cast<int>(cpu_isa())};
  return level;
}

}  // namespace

Isa isa() {
  return static_cast<Isa>(isa_in_use().load(std::memory_order_relaxed));
}

Isa limit_isa(Isa level) {
  const Isa used = std::min(level, cpu_isa());
  isa_in_use().store(static_cast<int>(used), std::memory_order_relaxed);
  return used;
}

// ---- Dispatch ------------------------------------------------------------------------------------

namespace {

using Levels = MinMaxUint8Compressor::Levels;

// The kernels that have a version per instruction-set level: for AVX-512 and AVX2 those of
// kernels_x86.h, for the baseline this file's multiversioned loops (which also serve AVX2 where
// kernels_x86.h has no AVX2 version). One table per level; kernels() is the table of the level in use
// (isa()), the baseline's in a build without the x86 kernels.
struct LevelKernels {
  std::pair<float, float> (*min_max)(const float* x, size_t len);  // lane-wise (checked_min_max)
  // e := x + one e, and the lane-wise min and max of the new e.
  std::pair<float, float> (*add_min_max)(const float* x, float one, float* e, size_t len);
  void (*quantize)(const float* x, size_t len, const Levels& l, uint8_t* q);
  // Whether `decode` gives the division's bits for every byte under l (never at the baseline, whose
  // `decode` is the division).
  bool (*decode_exact)(const Levels& l);
  void (*decode)(const uint8_t* q, size_t len, const Levels& l, float* x);
  // minmax_uint8's residual pass; fast_decode: decode_exact held for l.
  void (*quantize_residual)(float* e, size_t len, const Levels& l, float a, bool fast_decode,
                            uint8_t* q);
  void (*fp16_encode)(const float* x, size_t n, uint8_t* y);
  void (*fp16_decode)(const uint8_t* y, size_t n, float* x);
  void (*bf16_encode)(const float* x, size_t n, uint8_t* y);
  double (*sum_abs)(const float* x, size_t len);      // sign's scale, to be certified
  double (*sum_squares)(const float* x, size_t len);  // QSGD's norm, to be certified
};

const LevelKernels& kernels();  // defined below the baseline loops it names

}  // namespace

namespace {

// The baseline's loops (simd.h's vectors), multiversioned.

// reference::chunk_min_max in 32 lanes, before the zeros' check (order-free except for zeros:
// kernels.h).
BAGUA_MULTIVERSION
std::pair<float, float> lane_min_max_generic(const float* x, size_t len) {
  F32x8 min[4], max[4];
#pragma GCC unroll 4  // every loop over the accumulators (or GCC keeps them in memory)
  for (int a = 0; a < 4; ++a)
    min[a] = max[a] = splat<F32x8>(x[0]);
  size_t j = 0;
  for (; j + 32 <= len; j += 32) {
#pragma GCC unroll 4  // the accumulators in registers (GCC keeps a rolled loop's array in memory)
    for (int a = 0; a < 4; ++a) {
      const F32x8 v = load<F32x8>(x + j + 8 * a);
      min[a] = v < min[a] ? v : min[a];
      max[a] = v > max[a] ? v : max[a];
    }
  }
#pragma GCC unroll 4  // every loop over the accumulators (or GCC keeps them in memory)
  for (int a = 1; a < 4; ++a) {
    min[0] = min[a] < min[0] ? min[a] : min[0];
    max[0] = max[a] > max[0] ? max[a] : max[0];
  }
  float lo = min[0][0], hi = max[0][0];
  for (size_t l = 1; l < kLanes; ++l) {
    lo = min[0][l] < lo ? min[0][l] : lo;
    hi = max[0][l] > hi ? max[0][l] : hi;
  }
  for (; j < len; ++j) {
    lo = x[j] < lo ? x[j] : lo;
    hi = x[j] > hi ? x[j] : hi;
  }
  return {lo, hi};
}

BAGUA_MULTIVERSION
void quantize_generic(const float* chunk, size_t len, const MinMaxUint8Compressor::Levels& l,
                      uint8_t* q) {
  size_t j = 0;
  for (; j + 16 <= len; j += 16)
    store_bytes16(q + j, quantize8(load<F32x8>(chunk + j), l),
                  quantize8(load<F32x8>(chunk + j + 8), l));
  for (; j < len; ++j)
    q[j] = quantize1(chunk[j], l);
}

BAGUA_MULTIVERSION
void divide_generic(const uint8_t* q, size_t len, const MinMaxUint8Compressor::Levels& l,
                    float* chunk) {
  size_t j = 0;
  for (; j + 8 <= len; j += 8) {
    const F32x8 level = bytes_to_f32(q + j);
    store(chunk + j, (level + l.lower_bound) / l.scale);
  }
  for (; j < len; ++j)
    chunk[j] = (static_cast<float>(q[j]) + l.lower_bound) / l.scale;
}

// fast_decode is false here (LevelKernels::decode_exact at the baseline): the division decodes.
BAGUA_MULTIVERSION
void quantize_residual_generic(float* chunk, size_t len, const MinMaxUint8Compressor::Levels& l,
                               float a, bool /*fast_decode*/, uint8_t* q) {
  size_t j = 0;
  for (; j + 16 <= len; j += 16) {
    store_bytes16(q + j, quantize8(load<F32x8>(chunk + j), l),
                  quantize8(load<F32x8>(chunk + j + 8), l));
    const F32x8 level_a = bytes_to_f32(q + j), level_b = bytes_to_f32(q + j + 8);
    store(chunk + j, load<F32x8>(chunk + j) + a * ((level_a + l.lower_bound) / l.scale));
    store(chunk + j + 8, load<F32x8>(chunk + j + 8) + a * ((level_b + l.lower_bound) / l.scale));
  }
  for (; j < len; ++j) {
    q[j] = quantize1(chunk[j], l);
    chunk[j] = chunk[j] + a * ((static_cast<float>(q[j]) + l.lower_bound) / l.scale);
  }
}

std::pair<float, float> add_min_max_generic(const float* x, float one, float* e, size_t len) {
  add_scaled(x, one, e, len, e);
  return lane_min_max_generic(e, len);
}

bool division_only(const MinMaxUint8Compressor::Levels&) {
  return false;
}

// A chunk's (min, max) from its lane-wise ones: the reference's where either is a zero (kernels.h).
std::pair<float, float> checked_min_max(std::pair<float, float> lanes, const float* x, size_t len) {
  if (lanes.first == 0.0f || lanes.second == 0.0f) return compress_reference::chunk_min_max(x, len);
  return lanes;
}

// Below this many elements a chunk is decoded by division: certifying the fast decode costs 256
// divisions (x86::decode_exact_*).
constexpr size_t kCertifiedDecodeMin = 1024;

// Whether the fast decode of the level in use is certified for l (x86::decode_exact_*).
bool fast_decode_exact(const MinMaxUint8Compressor::Levels& l, size_t len) {
  return len >= kCertifiedDecodeMin && kernels().decode_exact(l);
}

void dequantize(const uint8_t* q, size_t len, const MinMaxUint8Compressor::Levels& l, float* chunk) {
  (fast_decode_exact(l, len) ? kernels().decode : divide_generic)(q, len, l, chunk);
}

void quantize_residual(float* chunk, size_t len, const MinMaxUint8Compressor::Levels& l, float a,
                       uint8_t* q) {
  kernels().quantize_residual(chunk, len, l, a, fast_decode_exact(l, len), q);
}

// A record's header: min, max, then zeros.
void store_header(uint8_t* record, float min, float max) {
  store_f32(record, min);
  store_f32(record + 4, max);
  std::memset(record + 8, 0, MinMaxUint8Compressor::kHeaderBytes - 8);
}

void zero_padding(uint8_t* q, size_t len) {
  std::memset(q + len, 0, align_up(len, MinMaxUint8Compressor::kAlignBytes) - len);
}

}  // namespace

std::pair<float, float> chunk_min_max(const float* x, size_t len) {
  return checked_min_max(kernels().min_max(x, len), x, len);
}

// reference::minmax_uint8_encode: per chunk the min and max (one pass), then the bytes (a second).
void minmax_uint8_encode(const float* x, size_t n, size_t chunk_size, uint8_t* y) {
  const Chunking chunks(n, chunk_size);
  const size_t stride = minmax_record_bytes(chunks.chunk);
  for (size_t i = 0; i < chunks.count; ++i) {
    const float* chunk = x + chunks.begin(i);
    const size_t len = chunks.length(i);
    uint8_t* record = y + i * stride;
    const auto [min, max] = chunk_min_max(chunk, len);
    store_header(record, min, max);
    uint8_t* q = record + MinMaxUint8Compressor::kHeaderBytes;
    kernels().quantize(chunk, len, MinMaxUint8Compressor::levels(min, max), q);
    zero_padding(q, len);
  }
}

// reference::minmax_uint8_decode: per chunk by the certified fast decode, or by the division.
void minmax_uint8_decode(const uint8_t* y, size_t n, size_t chunk_size, float* x) {
  const Chunking chunks(n, chunk_size);
  const size_t stride = minmax_record_bytes(chunks.chunk);
  for (size_t i = 0; i < chunks.count; ++i) {
    const uint8_t* record = y + i * stride;
    const MinMaxUint8Compressor::Levels l =
        MinMaxUint8Compressor::levels(load_f32(record), load_f32(record + 4));
    dequantize(record + MinMaxUint8Compressor::kHeaderBytes, chunks.length(i), l, x + chunks.begin(i));
  }
}

float sign_scale(const float* x, size_t len) {
  bool known = false;
  const double sum = kernels().sum_abs(x, len);
  const float mean = certified_mean(sum, len, &known);
  return known ? mean : compress_reference::sign_scale(x, len);
}

BAGUA_MULTIVERSION
void sign_encode(const float* x, size_t n, size_t chunk_size, uint8_t* y) {
  const Chunking chunks(n, chunk_size);
  for (size_t i = 0; i < chunks.count; ++i)
    store_f32(y + 4 * i, sign_scale(x + chunks.begin(i), chunks.length(i)));
  uint8_t* bits = y + 4 * chunks.count;
  const size_t full_bytes = n / 8;
  size_t b = 0;
#if defined(BAGUA_X86_KERNELS)
  if (isa() == Isa::kAvx512) {
    x86::sign_bits_avx512(x, full_bytes, bits);
    b = full_bytes;
  } else if (isa() == Isa::kAvx2) {
    x86::sign_bits_avx2(x, full_bytes, bits);
    b = full_bytes;
  }
#endif
#if defined(__SSE2__)
  // Bit k of byte b is x[8b + k] >= 0 (false for NaN): a comparison, then the lanes' sign bits.
  const __m128 zero = _mm_setzero_ps();
  for (; b < full_bytes; ++b) {
    const int low = _mm_movemask_ps(_mm_cmpge_ps(_mm_loadu_ps(x + 8 * b), zero));
    const int high = _mm_movemask_ps(_mm_cmpge_ps(_mm_loadu_ps(x + 8 * b + 4), zero));
    bits[b] = static_cast<uint8_t>(low | (high << 4));
  }
#endif
  for (; b < full_bytes; ++b) {
    const float* e = x + 8 * b;
    uint8_t byte = 0;
    for (int k = 0; k < 8; ++k)
      byte |= static_cast<uint8_t>((e[k] >= 0.0f ? 1u : 0u) << k);
    bits[b] = byte;
  }
  if (n % 8) {
    uint8_t byte = 0;
    for (size_t e = 8 * full_bytes; e < n; ++e)
      byte |= static_cast<uint8_t>((x[e] >= 0.0f ? 1u : 0u) << (e % 8));
    bits[full_bytes] = byte;
  }
}

BAGUA_MULTIVERSION
void sign_decode(const uint8_t* y, size_t n, size_t chunk_size, float* x) {
  const Chunking chunks(n, chunk_size);
  const uint8_t* bits = y + 4 * chunks.count;
  const U32x8 kBit = {1u, 2u, 4u, 8u, 16u, 32u, 64u, 128u};
  for (size_t i = 0; i < chunks.count; ++i) {
    const uint32_t magnitude = std::bit_cast<uint32_t>(load_f32(y + 4 * i));
    const size_t begin = chunks.begin(i);
    const size_t end = begin + chunks.length(i);
    auto one = [&](size_t e) {
      const uint32_t negative = ((bits[e / 8] >> (e % 8)) & 1u) ^ 1u;
      x[e] = std::bit_cast<float>(magnitude ^ (negative << 31));
    };
    size_t e = begin;
    for (; e < end && e % 8 != 0; ++e)
      one(e);
    // Whole bytes: lane k takes bit k; a zero bit sets the sign.
    for (; e + 8 <= end; e += 8) {
      const U32x8 set = (splat<U32x8>(uint32_t{bits[e / 8]}) & kBit) == 0u;
      store(x + e, splat<U32x8>(magnitude) ^ (set & 0x80000000u));
    }
    for (; e < end; ++e)
      one(e);
  }
}

namespace {

// cast.cc's f32_to_f16_bits, lane by lane: every case computed, then selected.
BAGUA_MULTIVERSION
void fp16_encode_generic(const float* x, size_t n, uint8_t* y) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    // Magnitudes are below 2^31, so signed lane comparisons order them (AVX2 has no unsigned ones).
    const U32x8 bits = load<U32x8>(x + i);
    const U32x8 sign = (bits >> 16) & 0x8000u;
    const U32x8 magnitude = bits & 0x7FFFFFFFu;
    const I32x8 m = bits_as<I32x8>(magnitude);
    const U32x8 nan = 0x7E00u | ((magnitude >> 13) & 0x3FFu);
    // The normal case's formula reaches 0x7C00 exactly at 65520 (the tie rounds to even, up) and
    // grows past it above, infinity included: capped at 0x7C00 it is the reference's overflow case.
    const U32x8 odd = (magnitude >> 13) & 1u;
    U32x8 normal = (magnitude - (112u << 23) + 0xFFFu + odd) >> 13;
    normal = normal < 0x7C00u ? normal : 0x7C00u;
    F32x8 units = rint_even8(bits_as<F32x8>(magnitude) * 0x1p24f);
    units = m < 0x38800000 ? units : 0.0f;
    const U32x8 subnormal = bits_as<U32x8>(__builtin_convertvector(units, I32x8));
    const U32x8 h = m > 0x7F800000 ? nan : m >= 0x38800000 ? normal : subnormal;
    store_low16(y + 2 * i, sign | h);
  }
  for (; i < n; ++i) {
    const uint16_t h = f32_to_f16_bits(x[i]);
    std::memcpy(y + 2 * i, &h, 2);
  }
}

// cast.cc's f16_bits_to_f32, lane by lane.
BAGUA_MULTIVERSION
void fp16_decode_generic(const uint8_t* y, size_t n, float* x) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const U32x8 h = __builtin_convertvector(load<U16x8>(y + 2 * i), U32x8);
    const U32x8 sign = (h & 0x8000u) << 16;
    const U32x8 exponent = (h >> 10) & 0x1Fu;
    const U32x8 fraction = h & 0x3FFu;
    const F32x8 tiny = __builtin_convertvector(bits_as<I32x8>(fraction), F32x8) * 0x1p-24f;
    const U32x8 subnormal = sign | bits_as<U32x8>(tiny);
    const U32x8 inf_nan = sign | 0x7F800000u | (fraction << 13);
    const U32x8 normal = sign | ((exponent + 112u) << 23) | (fraction << 13);
    store(x + i, exponent == 0u ? subnormal : exponent == 0x1Fu ? inf_nan : normal);
  }
  for (; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, y + 2 * i, 2);
    x[i] = f16_bits_to_f32(h);
  }
}

// cast.cc's f32_to_bf16_bits, lane by lane.
BAGUA_MULTIVERSION
void bf16_encode_generic(const float* x, size_t n, uint8_t* y) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const U32x8 bits = load<U32x8>(x + i);
    const U32x8 quiet_nan = (bits >> 16) | 0x0040u;
    const U32x8 rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
    const U32x8 b = (bits & 0x7FFFFFFFu) > 0x7F800000u ? quiet_nan : rounded;
    store_low16(y + 2 * i, b);
  }
  for (; i < n; ++i) {
    const uint16_t b = f32_to_bf16_bits(x[i]);
    std::memcpy(y + 2 * i, &b, 2);
  }
}

// The table of each level (LevelKernels).
const LevelKernels& kernels() {
  static const LevelKernels kBaseline{
      .min_max = lane_min_max_generic,
      .add_min_max = add_min_max_generic,
      .quantize = quantize_generic,
      .decode_exact = division_only,
      .decode = divide_generic,
      .quantize_residual = quantize_residual_generic,
      .fp16_encode = fp16_encode_generic,
      .fp16_decode = fp16_decode_generic,
      .bf16_encode = bf16_encode_generic,
      .sum_abs = sum_abs,
      .sum_squares = sum_squares,
  };
#if defined(BAGUA_X86_KERNELS)
  static const LevelKernels kAvx2{
      .min_max = x86::min_max_avx2,
      .add_min_max = x86::add_min_max_avx2,
      .quantize = x86::quantize_avx2,
      .decode_exact = x86::decode_exact_avx2,
      .decode = x86::decode_avx2,
      .quantize_residual = x86::quantize_residual_avx2,
      .fp16_encode = x86::fp16_encode_avx2,
      .fp16_decode = x86::fp16_decode_avx2,
      .bf16_encode = x86::bf16_encode_avx2,
      .sum_abs = x86::sum_abs_avx2,
      .sum_squares = x86::sum_squares_avx2,
  };
  static const LevelKernels kAvx512{
      .min_max = x86::min_max_avx512,
      .add_min_max = x86::add_min_max_avx512,
      .quantize = x86::quantize_avx512,
      .decode_exact = x86::decode_exact_avx512,
      .decode = x86::decode_avx512,
      .quantize_residual = x86::quantize_residual_avx512,
      .fp16_encode = x86::fp16_encode_avx512,
      .fp16_decode = x86::fp16_decode_avx512,
      .bf16_encode = x86::bf16_encode_avx512,
      .sum_abs = x86::sum_abs_avx512,
      .sum_squares = x86::sum_squares_avx512,
  };
  switch (isa()) {
    case Isa::kAvx512:
      return kAvx512;
    case Isa::kAvx2:
      return kAvx2;
    case Isa::kBaseline:
      break;
  }
#endif
  return kBaseline;
}

}  // namespace

void fp16_encode(const float* x, size_t n, uint8_t* y) {
  kernels().fp16_encode(x, n, y);
}

void fp16_decode(const uint8_t* y, size_t n, float* x) {
  kernels().fp16_decode(y, n, x);
}

void bf16_encode(const float* x, size_t n, uint8_t* y) {
  kernels().bf16_encode(x, n, y);
}

BAGUA_MULTIVERSION
void bf16_decode(const uint8_t* y, size_t n, float* x) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    store(x + i, __builtin_convertvector(load<U16x8>(y + 2 * i), U32x8) << 16);
  for (; i < n; ++i) {
    uint16_t b;
    std::memcpy(&b, y + 2 * i, 2);
    x[i] = bf16_bits_to_f32(b);
  }
}

// For each 8-bit mask, the positions of its set bits, lowest first (the rest zero).
constexpr std::array<std::array<uint32_t, 8>, 256> kSetBits = [] {
  std::array<std::array<uint32_t, 8>, 256> table{};
  for (uint32_t mask = 0; mask < 256; ++mask) {
    size_t count = 0;
    for (uint32_t bit = 0; bit < 8; ++bit) {
      if (mask & (1u << bit)) table[mask][count++] = bit;
    }
  }
  return table;
}();

// reference::topk_encode's output (every key above the k-th largest key, the threshold, then as many
// equal to it as make k, in index order) from one pass over the input instead of three. A strided
// sample of the keys gives a `floor` that about twice k keys reach; one vectorised pass collects, in
// index order, every element whose key reaches the floor (the candidates); if fewer than k do, the
// floor was too high and the pass is redone from floor 0 (every element). The threshold, the k-th
// largest key among the candidates, is then the k-th largest of all keys, and the candidates hold
// every key at or above it, in index order: the kept elements and their order are the reference's.
//
// The candidates' keys are kept beside their indices (written by the AVX-512 and AVX2 passes, else
// read once), so that neither the threshold's search nor the final pass reads x at random but for the
// kept.
//
// With `feedback_x` (error feedback, AVX-512 only), x is the residual e and the elements are
// x + one e: the sample takes them so, and the first candidates' pass stores them into e.
namespace {

BAGUA_MULTIVERSION
void topk_select(const float* x, size_t n, size_t k, uint8_t* y, std::vector<uint32_t>& candidates,
                 const float* feedback_x, float one) {
  auto key = [x](size_t i) { return topk_key(x[i]); };
  // The sample: up to 1024 keys at a fixed stride; the floor: its key of rank 2 k / n of the sample,
  // plus 16 (the sample's own spread), or 0 when that rank falls past the sample.
  constexpr size_t kSample = 1024;
  const size_t samples = std::min(n, kSample);
  std::array<uint32_t, kSample> sample;
  for (size_t s = 0; s < samples; ++s) {
    const size_t i = s * n / samples;
    sample[s] = feedback_x ? topk_key(feedback_x[i] + one * x[i]) : key(i);
  }
  const size_t rank = static_cast<size_t>(2.0 * static_cast<double>(samples) * static_cast<double>(k) /
                                          static_cast<double>(n)) +
                      16;
  uint32_t floor = 0;
  if (rank < samples) {
    std::nth_element(sample.begin(), sample.begin() + static_cast<ptrdiff_t>(rank),
                     sample.begin() + static_cast<ptrdiff_t>(samples), std::greater<uint32_t>());
    floor = sample[rank];
  }

  // Candidates: indices (the first `count` entries of `candidates`), their keys from entry n on, the
  // threshold's bucket after both (grown below).
  const size_t keys_at = n + kLanes;
  if (candidates.size() < 2 * keys_at) candidates.resize(2 * keys_at);
  uint32_t* index = candidates.data();
  uint32_t* keys = index + keys_at;
  uint32_t top = floor;  // the largest candidate key (floor where the pass did not give it)
  bool keyed = false;    // whether the pass gave the keys and top
  size_t count = 0;
  for (;;) {
    count = 0;
    size_t i = 0;
#if defined(BAGUA_X86_KERNELS)
    if (feedback_x) {
      count = x86::topk_candidates_feedback_avx512(feedback_x, one, const_cast<float*>(x), n, floor,
                                                   index, keys, &top);
      feedback_x = nullptr;  // x now holds the elements
      i = n;
      keyed = true;
    } else if (isa() == Isa::kAvx512) {
      count = x86::topk_candidates_avx512(x, n, floor, index, keys, &top);
      i = n;
      keyed = true;
    } else if (isa() == Isa::kAvx2) {
      count = x86::topk_candidates_avx2(x, n, floor, index, keys, &top, kSetBits[0].data());
      i = n;
      keyed = true;
    }
#endif
#if defined(__SSE2__)
    // Keys are below 2^31, so a signed comparison orders them; a NaN's magnitude (above
    // 0x7F800000) reaches any floor its key does.
    const __m128i below = _mm_set1_epi32(static_cast<int32_t>(floor) - 1);
    const __m128i kMagnitude = _mm_set1_epi32(0x7FFFFFFF);
    for (; i + 8 <= n; i += 8) {
      const __m128i a =
          _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)), kMagnitude);
      const __m128i b =
          _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i + 4)), kMagnitude);
      const int mask = _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpgt_epi32(a, below))) |
                       (_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpgt_epi32(b, below))) << 4);
      // Branch-free (a block holds a candidate at random): store the indices of the mask's set
      // bits, packed to the front, and advance by their number.
      store(index + count,
            load<U32x8>(kSetBits[static_cast<size_t>(mask)].data()) + static_cast<uint32_t>(i));
      count += static_cast<size_t>(std::popcount(static_cast<unsigned>(mask)));
    }
#endif
    for (; i < n; ++i) {
      index[count] = static_cast<uint32_t>(i);
      count += key(i) >= floor;
    }
    if (count >= k) break;
    floor = 0;  // too few: every element is a candidate
  }
  // The threshold among the candidates' keys, by the reference's radix select on (key - floor): a
  // histogram of its top 11 bits picks the bucket of the k-th largest, nth_element among that bucket's
  // keys (copied after the candidates' keys) finds it.
  if (!keyed) {
    top = floor;
    for (size_t c = 0; c < count; ++c) {
      keys[c] = key(index[c]);
      top = keys[c] > top ? keys[c] : top;
    }
  }
  constexpr int kBucketBits = 11;
  const int shift = std::max(0, static_cast<int>(std::bit_width(top - floor)) - kBucketBits);
  std::array<uint32_t, size_t{1} << kBucketBits> histogram{};
  for (size_t c = 0; c < count; ++c)
    ++histogram[(keys[c] - floor) >> shift];
  size_t bucket = histogram.size() - 1;
  size_t above = 0;  // candidates in buckets above `bucket`
  while (above + histogram[bucket] < k)
    above += histogram[bucket--];
  if (candidates.size() < 2 * keys_at + histogram[bucket] + 1) {
    candidates.resize(2 * keys_at + histogram[bucket] + 1);
    index = candidates.data();
    keys = index + keys_at;
  }
  uint32_t* const in_bucket_keys = keys + keys_at;
  size_t in_bucket = 0;
  for (size_t c = 0; c < count; ++c) {
    in_bucket_keys[in_bucket] = keys[c];
    in_bucket += ((keys[c] - floor) >> shift) == bucket;
  }
  std::nth_element(in_bucket_keys, in_bucket_keys + (k - above - 1), in_bucket_keys + in_bucket,
                   std::greater<uint32_t>());
  const uint32_t threshold = in_bucket_keys[k - above - 1];
  for (size_t c = 0; c < in_bucket; ++c)
    above += in_bucket_keys[c] > threshold;
  TopkKept kept{threshold, k - above, k, y};
#if defined(BAGUA_X86_KERNELS)
  if (keyed) {  // the AVX-512 pass's candidates: kept sixteen at a time
    x86::topk_keep_avx512(index, keys, count, x, kept);
    count = 0;
  }
#endif
  for (size_t c = 0; c < count && kept.count < k; ++c)
    kept.offer(index[c], keys[c], x);
  BAGUA_CHECK_EQ(kept.count, k, "topk encode: elements kept");
}

}  // namespace

void topk_encode(const float* x, size_t n, size_t k, uint8_t* y, std::vector<uint32_t>& candidates) {
  topk_select(x, n, k, y, candidates, nullptr, 0.0f);
}

namespace {

// f32(sqrt(sum of squares)) of a chunk, the reference's value (kernels.h: certified, or redone).
float qsgd_norm(const float* x, size_t len) {
  return qsgd_certified_norm(kernels().sum_squares(x, len), x, len);
}

// Rng::uniform() of generators in states `state` (qsgd_code.h: the mix's last step skipped).
inline F32x4 uniform4(U64x4 state) {
  U64x4 z = (state ^ (state >> 30)) * kMix1;
  z = (z ^ (z >> 27)) * kMix2;
  return __builtin_convertvector(__builtin_convertvector(z >> 40, I32x4), F32x4) * 0x1p-24f;
}

// The codes of elements [begin, begin + len) of a chunk of prescale 1 (levels_per_unit its s / norm,
// finite), element e's
// draw being number e of the generator in state s0: reference::qsgd_encode's per-element arithmetic,
// eight lanes at a time.
[[gnu::always_inline]] inline void qsgd_codes_body(const float* x, size_t begin, size_t len,
                                                   float levels_per_unit, float s, int level_bits,
                                                   uint64_t s0, uint32_t* codes) {
  const U64x4 kLaneDraw = {1 * kGolden, 2 * kGolden, 3 * kGolden, 4 * kGolden};
  size_t j = 0;
  for (; j + 8 <= len; j += 8) {
    const size_t e = begin + j;
    const F32x8 v = load<F32x8>(x + e);
    F32x8 r = bits_as<F32x8>(bits_as<U32x8>(v) & 0x7FFFFFFFu) * levels_per_unit;
    r = r >= 0.0f ? r : 0.0f;  // NaN (a non-finite input)
    const F32x8 floor_r = __builtin_convertvector(__builtin_convertvector(r, I32x8), F32x8);
    const U64x4 first = splat<U64x4>(s0 + e * kGolden) + kLaneDraw;
    const F32x4 u_low = uniform4(first), u_high = uniform4(first + 4 * kGolden);
    const F32x8 u = __builtin_shufflevector(u_low, u_high, 0, 1, 2, 3, 4, 5, 6, 7);
    F32x8 level = floor_r + (u < r - floor_r ? 1.0f : 0.0f);
    level = level < s ? level : s;
    const U32x8 l = bits_as<U32x8>(__builtin_convertvector(level, I32x8));
    const U32x8 negative = bits_as<U32x8>((l != 0u) & (v < 0.0f)) & 1u;
    store(codes + j, l | (negative << level_bits));
  }
  for (; j < len; ++j)
    codes[j] =
        qsgd_code(x[begin + j], {1.0f, levels_per_unit}, s, level_bits, qsgd_draw(s0, begin + j));
}

// The body for the baseline and AVX2 (target_clones); AVX-512 has its own (kernels_x86.h), whose
// draws' 64-bit lane multiplies are one instruction.
BAGUA_MULTIVERSION void qsgd_codes_generic(const float* x, size_t begin, size_t len,
                                           float levels_per_unit, float s, int level_bits, uint64_t s0,
                                           uint32_t* codes) {
  qsgd_codes_body(x, begin, len, levels_per_unit, s, level_bits, s0, codes);
}

// The codes of elements [begin, begin + len) of a chunk of scale `scale`: eight or sixteen lanes at a
// time where its prescale is 1, else (a chunk whose s / norm overflows, qsgd_code.h) one at a time.
void qsgd_codes(const float* x, size_t begin, size_t len, QsgdScale scale, float s, int level_bits,
                uint64_t s0, uint32_t* codes) {
  if (scale.prescaled()) {
    for (size_t j = 0; j < len; ++j)
      codes[j] = qsgd_code(x[begin + j], scale, s, level_bits, qsgd_draw(s0, begin + j));
    return;
  }
#if defined(BAGUA_X86_KERNELS)
  if (isa() == Isa::kAvx512)
    return x86::qsgd_codes_avx512(x, begin, len, scale.levels_per_unit, s, level_bits, s0, codes);
#endif
  qsgd_codes_generic(x, begin, len, scale.levels_per_unit, s, level_bits, s0, codes);
}

}  // namespace

// reference::qsgd_encode, each element's draw computed from its index. Element e's code starts at
// stream bit e b, so a block of 8 elements from an index divisible by 8 fills exactly b whole bytes.
// At AVX-512 with b <= 8 and chunks that start at such indices, chunk by chunk: its norm, then its
// codes packed into the stream while the chunk is in cache (x86::qsgd_encode_avx512). Otherwise
// the norms first (one pass), then the codes tile by tile (eight or sixteen lanes at a time), packed
// into the stream: for b <= 8 a block of 8 codes into one 64-bit word stored as b bytes; wider codes
// through the reference's bit writer.
BAGUA_MULTIVERSION
void qsgd_encode(const float* x, size_t n, size_t chunk_size, uint32_t levels, uint64_t seed,
                 uint64_t step, uint8_t* y) {
  const Chunking chunks(n, chunk_size);
  const float s = static_cast<float>(levels);
  const int level_bits = std::bit_width(levels), code_bits = level_bits + 1;
  // s0 such that draw e mixes s0 + (e + 1) G: Rng::for_step(seed, step) is Rng(v), whose state is v.
  const uint64_t s0 = [&] {
    Rng mixer(seed);
    Rng stream(mixer.next() ^ step);
    return stream.next();
  }();
#if defined(BAGUA_X86_KERNELS)
  if (code_bits <= 8 && isa() == Isa::kAvx512 && (chunks.count == 1 || chunks.chunk % 8 == 0))
    return x86::qsgd_encode_avx512(x, n, chunk_size, levels, s0, y);
#endif
  for (size_t i = 0; i < chunks.count; ++i)
    store_f32(y + 4 * i, qsgd_norm(x + chunks.begin(i), chunks.length(i)));
  uint8_t* stream = y + 4 * chunks.count;
  uint8_t* const stream_end = stream + div_up(n * static_cast<size_t>(code_bits), 8);
  constexpr size_t kTile = 2048;  // codes per tile (8 KiB of scratch), a multiple of 8
  uint32_t codes[kTile];
  uint64_t pending = 0;  // the bit writer, for codes wider than 8 bits and the last partial block
  int pending_bits = 0;
  auto put = [&](uint32_t code) {
    pending |= static_cast<uint64_t>(code) << pending_bits;
    pending_bits += code_bits;
    while (pending_bits >= 8) {
      *stream++ = static_cast<uint8_t>(pending);
      pending >>= 8;
      pending_bits -= 8;
    }
  };
  for (size_t tile = 0; tile < n; tile += kTile) {
    const size_t tile_end = std::min(n, tile + kTile);
    for (size_t e = tile; e < tile_end;) {
      const size_t i = e / chunks.chunk;
      const size_t end = std::min(tile_end, chunks.begin(i) + chunks.length(i));
      qsgd_codes(x, e, end - e, qsgd_scale(s, load_f32(y + 4 * i)), s, level_bits, s0,
                 codes + (e - tile));
      e = end;
    }
    size_t e = tile;
#if defined(BAGUA_X86_KERNELS)
    if (code_bits <= 8 && isa() == Isa::kAvx512) {
      const size_t blocks = (tile_end - tile) / 8;
      x86::pack_codes_avx512(codes, 8 * blocks, code_bits, stream, stream_end);
      stream += blocks * static_cast<size_t>(code_bits);
      e += 8 * blocks;
    }
#endif
    if (code_bits <= 8) {
      // Every tile starts at a multiple of 8, where the bit writer is empty.
      for (; e + 8 <= tile_end; e += 8) {
        uint64_t word = 0;
        for (int l = 0; l < 8; ++l)
          word |= static_cast<uint64_t>(codes[e - tile + static_cast<size_t>(l)]) << (l * code_bits);
        if (stream + 8 <= stream_end)  // an 8-byte store (the next block overwrites the excess)
          std::memcpy(stream, &word, 8);
        else
          std::memcpy(stream, &word, static_cast<size_t>(code_bits));
        stream += code_bits;
      }
    }
    for (; e < tile_end; ++e)
      put(codes[e - tile]);
  }
  if (pending_bits > 0) *stream = static_cast<uint8_t>(pending);
}

// reference::qsgd_decode: where the AVX-512 encode packed the codes (above), chunk by chunk
// (x86::qsgd_decode_avx512); otherwise the codes unpacked (as the encoder packed them: one 64-bit word
// per block of 8 for b <= 8), then scaled eight lanes at a time.
BAGUA_MULTIVERSION
void qsgd_decode(const uint8_t* y, size_t n, size_t chunk_size, uint32_t levels, float* x) {
  const Chunking chunks(n, chunk_size);
  const float s = static_cast<float>(levels);
  const int level_bits = std::bit_width(levels), code_bits = level_bits + 1;
#if defined(BAGUA_X86_KERNELS)
  if (code_bits <= 8 && isa() == Isa::kAvx512 && (chunks.count == 1 || chunks.chunk % 8 == 0))
    return x86::qsgd_decode_avx512(y, n, chunk_size, levels, x);
#endif
  const uint32_t level_mask = (1u << level_bits) - 1u;
  const uint32_t code_mask = (1u << code_bits) - 1u;
  const uint8_t* stream = y + 4 * chunks.count;
  const uint8_t* const stream_end = stream + div_up(n * static_cast<size_t>(code_bits), 8);
  constexpr size_t kTile = 2048;
  uint32_t codes[kTile];
  uint64_t pending = 0;
  int pending_bits = 0;
  auto get = [&]() {
    while (pending_bits < code_bits) {
      pending |= static_cast<uint64_t>(*stream++) << pending_bits;
      pending_bits += 8;
    }
    const auto code = static_cast<uint32_t>(pending & code_mask);
    pending >>= code_bits;
    pending_bits -= code_bits;
    return code;
  };
  for (size_t tile = 0; tile < n; tile += kTile) {
    const size_t tile_end = std::min(n, tile + kTile);
    size_t e = tile;
    if (code_bits <= 8) {
      for (; e + 8 <= tile_end; e += 8) {
        uint64_t word = 0;
        if (stream + 8 <= stream_end) {  // an 8-byte load, the block's b bytes kept
          std::memcpy(&word, stream, 8);
          if (code_bits < 8) word &= (uint64_t{1} << (8 * code_bits)) - 1u;
        } else {
          std::memcpy(&word, stream, static_cast<size_t>(code_bits));
        }
        stream += code_bits;
        for (int l = 0; l < 8; ++l)
          codes[e - tile + static_cast<size_t>(l)] =
              static_cast<uint32_t>(word >> (l * code_bits)) & code_mask;
      }
    }
    for (; e < tile_end; ++e)
      codes[e - tile] = get();
    for (e = tile; e < tile_end;) {
      const size_t i = e / chunks.chunk;
      const float unit = load_f32(y + 4 * i) / s, cap = qsgd_cap(unit);
      const size_t end = std::min(tile_end, chunks.begin(i) + chunks.length(i));
      size_t j = e;
      for (; j + 8 <= end; j += 8) {
        const U32x8 code = load<U32x8>(codes + (j - tile));
        F32x8 magnitude = __builtin_convertvector(bits_as<I32x8>(code & level_mask), F32x8) * unit;
        magnitude = magnitude > cap ? cap : magnitude;  // qsgd_value's saturation (NaN stays)
        const U32x8 sign = bits_as<U32x8>((code >> level_bits) != 0u) & 0x80000000u;
        store(x + j, bits_as<U32x8>(magnitude) ^ sign);
      }
      for (; j < end; ++j)
        x[j] = qsgd_value(codes[j - tile], unit, cap, level_bits);
      e = end;
    }
  }
}

BAGUA_MULTIVERSION
void add_scaled(const float* x, float a, const float* e, size_t n, float* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    store(out + i, load<F32x8>(x + i) + a * load<F32x8>(e + i));
  for (; i < n; ++i)
    out[i] = x[i] + a * e[i];
}

// ---- Error feedback's fused steps ------------------------------------------------------------------

namespace {

// sign's second pass, the chunks' scales stored: per block of 8 elements of one chunk the byte of
// bits and the residual e + a (+-scale); elements of a byte shared by two chunks one at a time.
BAGUA_MULTIVERSION
void sign_bits_residual(float* e, const Chunking& chunks, float a, uint8_t* y) {
  uint8_t* bits = y + 4 * chunks.count;
  for (size_t i = 0; i < chunks.count; ++i) {
    const uint32_t magnitude = std::bit_cast<uint32_t>(load_f32(y + 4 * i));
    auto one = [&](size_t j) {  // element j: its bit, then its residual
      const bool bit = e[j] >= 0.0f;
      const float decoded = std::bit_cast<float>(magnitude ^ ((bit ? 0u : 1u) << 31));
      if (j % 8 == 0) bits[j / 8] = 0;
      bits[j / 8] = static_cast<uint8_t>(bits[j / 8] | ((bit ? 1u : 0u) << (j % 8)));
      e[j] = e[j] + a * decoded;
    };
    const size_t end = chunks.begin(i) + chunks.length(i);
    size_t j = chunks.begin(i);
    for (; j < end && j % 8 != 0; ++j)
      one(j);
    for (; j + 8 <= end; j += 8) {  // whole bytes of this chunk
      const F32x8 v = load<F32x8>(e + j);
      const I32x8 nonnegative = v >= 0.0f;
      bits[j / 8] = static_cast<uint8_t>(movemask8(nonnegative));
      const U32x8 sign = bits_as<U32x8>(~nonnegative) & 0x80000000u;
      const F32x8 decoded = bits_as<F32x8>(splat<U32x8>(magnitude) ^ sign);
      store(e + j, v + a * decoded);
    }
    for (; j < end; ++j)
      one(j);
  }
}

}  // namespace

// sign: the scales (one pass), then sign_bits_residual (a second).
void sign_encode_residual(float* e, size_t n, size_t chunk_size, float a, uint8_t* y) {
  const Chunking chunks(n, chunk_size);
  for (size_t i = 0; i < chunks.count; ++i)
    store_f32(y + 4 * i, sign_scale(e + chunks.begin(i), chunks.length(i)));
  sign_bits_residual(e, chunks, a, y);
}

// The same with e := x + one e in the scales' pass.
void sign_encode_feedback(const float* x, float one, float* e, size_t n, size_t chunk_size, float a,
                          uint8_t* y) {
  const Chunking chunks(n, chunk_size);
  for (size_t i = 0; i < chunks.count; ++i) {
    const size_t begin = chunks.begin(i), len = chunks.length(i);
    float scale;
#if defined(BAGUA_X86_KERNELS)
    if (isa() == Isa::kAvx512) {
      bool known = false;
      scale = certified_mean(x86::add_sum_abs_avx512(x + begin, one, e + begin, len), len, &known);
      if (!known) scale = compress_reference::sign_scale(e + begin, len);
      store_f32(y + 4 * i, scale);
      continue;
    }
#endif
    add_scaled(x + begin, one, e + begin, len, e + begin);
    scale = sign_scale(e + begin, len);
    store_f32(y + 4 * i, scale);
  }
  sign_bits_residual(e, chunks, a, y);
}

// minmax_uint8: per chunk the min and max (one pass), then the quantization, the decoded value
// (q + lower_bound) / scale of the stored byte q and the residual (a second pass).
void minmax_uint8_encode_residual(float* e, size_t n, size_t chunk_size, float a, uint8_t* y) {
  const Chunking chunks(n, chunk_size);
  const size_t stride = minmax_record_bytes(chunks.chunk);
  for (size_t i = 0; i < chunks.count; ++i) {
    float* chunk = e + chunks.begin(i);
    const size_t len = chunks.length(i);
    uint8_t* record = y + i * stride;
    const auto [min, max] = chunk_min_max(chunk, len);
    store_header(record, min, max);
    uint8_t* q = record + MinMaxUint8Compressor::kHeaderBytes;
    quantize_residual(chunk, len, MinMaxUint8Compressor::levels(min, max), a, q);
    zero_padding(q, len);
  }
}

// The same with the corrected gradient's sum in the first pass: per chunk e := x + one e and its min
// and max (one pass), then the second pass above.
void minmax_uint8_encode_feedback(const float* x, float one, float* e, size_t n, size_t chunk_size,
                                  float a, uint8_t* y) {
  const Chunking chunks(n, chunk_size);
  const size_t stride = minmax_record_bytes(chunks.chunk);
  for (size_t i = 0; i < chunks.count; ++i) {
    float* chunk = e + chunks.begin(i);
    const size_t len = chunks.length(i);
    uint8_t* record = y + i * stride;
    const auto [min, max] =
        checked_min_max(kernels().add_min_max(x + chunks.begin(i), one, chunk, len), chunk, len);
    store_header(record, min, max);
    uint8_t* q = record + MinMaxUint8Compressor::kHeaderBytes;
    quantize_residual(chunk, len, MinMaxUint8Compressor::levels(min, max), a, q);
    zero_padding(q, len);
  }
}

// topk: the encoding, then only the k kept elements change: e + a e. The others are e + a (+0) = e + (-0),
// which is e (corrected, a sum, is never a signalling NaN).
namespace {

void residual_of_kept(float* e, size_t k, float a, const uint8_t* y) {
  for (size_t j = 0; j < k; ++j) {
    int32_t index;
    std::memcpy(&index, y + 4 * j, 4);
    const float decoded = load_f32(y + 4 * k + 4 * j);
    e[index] = e[index] + a * decoded;
  }
}

}  // namespace

void topk_encode_residual(float* e, size_t n, size_t k, float a, uint8_t* y,
                          std::vector<uint32_t>& candidates) {
  topk_encode(e, n, k, y, candidates);
  residual_of_kept(e, k, a, y);
}

// The same from x: e := x + one e in the candidates' pass (AVX-512), or before it.
void topk_encode_feedback(const float* x, float one, float* e, size_t n, size_t k, float a, uint8_t* y,
                          std::vector<uint32_t>& candidates) {
#if defined(BAGUA_X86_KERNELS)
  if (isa() == Isa::kAvx512) {
    topk_select(e, n, k, y, candidates, x, one);
  } else
#endif
  {
    add_scaled(x, one, e, n, e);
    topk_encode(e, n, k, y, candidates);
  }
  residual_of_kept(e, k, a, y);
}

}  // namespace bagua::compress_kernels
