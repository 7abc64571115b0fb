// The AVX2 and AVX-512 kernels of kernels_x86.h. Each loop is the reference's (reference.cc) per
// element, eight or sixteen lanes at a time, every lane operation the IEEE operation the reference
// does (kernels.h, simd.h); where an instruction does more or less than the reference's expression,
// its comment says why the bytes are the same.
#include "core/compress/kernels_x86.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__ELF__)

// GCC 12's AVX-512 intrinsics start some results from _mm512_undefined_*(), a self-initialised
// variable, which its uninitialised-use warnings flag at every inlined call (a false positive).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <bit>
#include <cmath>
#include <cstring>

#include "core/compress/cast.h"
#include "core/compress/common.h"
#include "core/compress/qsgd_code.h"

// No a * b + c may be contracted into a fused multiply-add: both levels have FMA instructions, and the
// reference rounds the product. The fused operations below are written as such.
#pragma GCC optimize("fp-contract=off")

#define BAGUA_AVX2 __attribute__((target("avx2,fma,f16c")))
#define BAGUA_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c,bmi2")))

namespace bagua::compress_kernels::x86 {

namespace {

// ---- min and max -------------------------------------------------------------------------------
// vminps(a, b) is a < b ? a : b, and vmaxps(a, b) is a > b ? a : b (Intel SDM, MINPS/MAXPS: "the
// second operand is returned" for equal zeros and for a NaN), so min(v, lo) is the reference's
// `v < lo ? v : lo`.

BAGUA_AVX2 inline std::pair<float, float> finish_min_max(__m256 lo, __m256 hi, const float* x, size_t j,
                                                         size_t len) {
  float lo_lanes[8], hi_lanes[8];
  _mm256_storeu_ps(lo_lanes, lo);
  _mm256_storeu_ps(hi_lanes, hi);
  float a = lo_lanes[0], b = hi_lanes[0];
  for (int l = 1; l < 8; ++l) {
    a = lo_lanes[l] < a ? lo_lanes[l] : a;
    b = hi_lanes[l] > b ? hi_lanes[l] : b;
  }
  for (; j < len; ++j) {
    a = x[j] < a ? x[j] : a;
    b = x[j] > b ? x[j] : b;
  }
  return {a, b};
}

BAGUA_AVX512 inline std::pair<float, float> finish_min_max512(__m512 lo, __m512 hi, const float* x,
                                                              size_t j, size_t len) {
  const __m256 lo8 = _mm256_min_ps(_mm512_castps512_ps256(lo),
                                   _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(lo), 1)));
  const __m256 hi8 = _mm256_max_ps(_mm512_castps512_ps256(hi),
                                   _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(hi), 1)));
  float lo_lanes[8], hi_lanes[8];
  _mm256_storeu_ps(lo_lanes, lo8);
  _mm256_storeu_ps(hi_lanes, hi8);
  float a = lo_lanes[0], b = hi_lanes[0];
  for (int l = 1; l < 8; ++l) {
    a = lo_lanes[l] < a ? lo_lanes[l] : a;
    b = hi_lanes[l] > b ? hi_lanes[l] : b;
  }
  for (; j < len; ++j) {
    a = x[j] < a ? x[j] : a;
    b = x[j] > b ? x[j] : b;
  }
  return {a, b};
}

// ---- quantize ----------------------------------------------------------------------------------
// The reference's q = sat[0,255](min(rint(x scale), upper_bound) - lower_bound), truncated:
//   - rint_even is vroundps to nearest even (imm 8: nearest, no exception), but for the sign of a zero
//     (rint_even(-0.3) is +0, vroundps gives -0); the level's zero is then either replaced by the
//     bound or has lower_bound subtracted, and z - lower_bound is -lower_bound for both zeros unless
//     lower_bound is a zero, where both give a zero that truncates to byte 0: the same byte.
//   - min(level, upper_bound) is vminps (NaN level -> upper_bound, as the reference's select).
//   - 255 < v ? 255 : v is vminps(255, v) (a NaN v stays NaN); the conversion truncates, and the
//     saturating packs (signed to 16 bits, then unsigned to 8) make a negative v, and a NaN (whose
//     conversion is INT32_MIN), 0 — the reference's v > 0 ? v : 0.
constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

BAGUA_AVX2 inline __m256i quantize8(__m256 x, __m256 scale, __m256 upper, __m256 lower, __m256 c255) {
  const __m256 level = _mm256_min_ps(_mm256_round_ps(_mm256_mul_ps(x, scale), kNearest), upper);
  return _mm256_cvttps_epi32(_mm256_min_ps(c255, _mm256_sub_ps(level, lower)));
}

BAGUA_AVX512 inline __m512i quantize16(__m512 x, __m512 scale, __m512 upper, __m512 lower,
                                       __m512 c255) {
  const __m512 level = _mm512_min_ps(_mm512_roundscale_ps(_mm512_mul_ps(x, scale), kNearest), upper);
  return _mm512_cvttps_epi32(_mm512_min_ps(c255, _mm512_sub_ps(level, lower)));
}

// 32 int32 lanes (a, b, c, d) as 32 bytes in order: the packs work within 128-bit lanes, leaving
// dword j of the result holding group j % 4 of lane j / 4; the permutation puts them back in order.
BAGUA_AVX2 inline __m256i pack32(__m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i bytes = _mm256_packus_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
  return _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

BAGUA_AVX512 inline __m512i pack64(__m512i a, __m512i b, __m512i c, __m512i d) {
  const __m512i bytes = _mm512_packus_epi16(_mm512_packs_epi32(a, b), _mm512_packs_epi32(c, d));
  return _mm512_permutexvar_epi32(
      _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), bytes);
}

// One element as the reference quantizes it (the tails).
inline uint8_t quantize1(float x, const Levels& l) {
  float level = compress_detail::rint_even(x * l.scale);
  level = level < l.upper_bound ? level : l.upper_bound;
  float v = level - l.lower_bound;
  v = v > 0.0f ? v : 0.0f;
  v = v < 255.0f ? v : 255.0f;
  return static_cast<uint8_t>(static_cast<int32_t>(v));
}

// ---- decode ------------------------------------------------------------------------------------
// t = q + lower_bound (the reference's sum), y0 = t r, y = y0 + r (t - y0 scale), both steps fused.
BAGUA_AVX2 inline __m256 decode8(__m256i q32, __m256 lower, __m256 scale, __m256 r) {
  const __m256 t = _mm256_add_ps(_mm256_cvtepi32_ps(q32), lower);
  const __m256 y0 = _mm256_mul_ps(t, r);
  return _mm256_fmadd_ps(_mm256_fnmadd_ps(y0, scale, t), r, y0);
}

BAGUA_AVX512 inline __m512 decode16(__m512i q32, __m512 lower, __m512 scale, __m512 r) {
  const __m512 t = _mm512_add_ps(_mm512_cvtepi32_ps(q32), lower);
  const __m512 y0 = _mm512_mul_ps(t, r);
  return _mm512_fmadd_ps(_mm512_fnmadd_ps(y0, scale, t), r, y0);
}

// The division, as the reference does it.
BAGUA_AVX2 inline __m256 divide8(__m256i q32, __m256 lower, __m256 scale) {
  return _mm256_div_ps(_mm256_add_ps(_mm256_cvtepi32_ps(q32), lower), scale);
}
BAGUA_AVX512 inline __m512 divide16(__m512i q32, __m512 lower, __m512 scale) {
  return _mm512_div_ps(_mm512_add_ps(_mm512_cvtepi32_ps(q32), lower), scale);
}

inline float divide1(uint8_t q, const Levels& l) {
  return (static_cast<float>(q) + l.lower_bound) / l.scale;
}

// Whether `decoded` (256 floats, byte q's value at q) is bit for bit the reference's.
bool same_as_division(const float* decoded, const Levels& l) {
  for (int q = 0; q < 256; ++q) {
    if (std::bit_cast<uint32_t>(decoded[q]) !=
        std::bit_cast<uint32_t>(divide1(static_cast<uint8_t>(q), l)))
      return false;
  }
  return true;
}

// ---- fp16 --------------------------------------------------------------------------------------
// vcvtps2ph rounds to nearest even (imm 0) through the whole range, subnormal halves and overflow to
// infinity included, and turns a NaN into sign | 0x7C00 | 0x200 | its top 10 fraction bits (Intel
// SDM, VCVTPS2PH: a signalling NaN is quietened, the fraction truncated): f32_to_f16_bits' quiet NaN.
// vcvtph2ps is exact, but quietens a signalling NaN (it sets bit 22), which the reference keeps as it
// was: those lanes (exponent 0x1F, fraction bit 9 clear; infinity too, whose bit 22 is clear anyway)
// have bit 22 cleared.
constexpr int kHalfNearest = _MM_FROUND_TO_NEAREST_INT;

// ---- QSGD's norms --------------------------------------------------------------------------------
// The sum of x^2 in double over 64 lanes; each square is exact (24-bit significands), so the fused
// multiply-add rounds as the product-then-add does.
BAGUA_AVX512 inline double sum_squares(const float* x, size_t len) {
  __m512d acc[4] = {_mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd()};
  size_t j = 0;
  for (; j + 32 <= len; j += 32) {
#pragma GCC unroll 4  // the accumulators in registers (GCC keeps a rolled loop's array in memory)
    for (int a = 0; a < 4; ++a) {
      const __m512d d = _mm512_cvtps_pd(_mm256_loadu_ps(x + j + 8 * a));
      acc[a] = _mm512_fmadd_pd(d, d, acc[a]);
    }
  }
  double sum = 0;
  for (; j < len; ++j)
    sum += static_cast<double>(x[j]) * x[j];
  const __m512d total = _mm512_add_pd(_mm512_add_pd(acc[0], acc[1]), _mm512_add_pd(acc[2], acc[3]));
  return sum + _mm512_reduce_add_pd(total);
}

}  // namespace

BAGUA_AVX2 std::pair<float, float> min_max_avx2(const float* x, size_t len) {
  __m256 lo[4], hi[4];
#pragma GCC unroll 4  // every loop over the accumulators (or GCC keeps them in memory)
  for (int a = 0; a < 4; ++a)
    lo[a] = hi[a] = _mm256_set1_ps(x[0]);
  size_t j = 0;
  for (; j + 32 <= len; j += 32) {
#pragma GCC unroll 4  // the accumulators in registers (GCC keeps a rolled loop's array in memory)
    for (int a = 0; a < 4; ++a) {
      const __m256 v = _mm256_loadu_ps(x + j + 8 * a);
      lo[a] = _mm256_min_ps(v, lo[a]);
      hi[a] = _mm256_max_ps(v, hi[a]);
    }
  }
#pragma GCC unroll 4  // every loop over the accumulators (or GCC keeps them in memory)
  for (int a = 1; a < 4; ++a) {
    lo[0] = _mm256_min_ps(lo[a], lo[0]);
    hi[0] = _mm256_max_ps(hi[a], hi[0]);
  }
  return finish_min_max(lo[0], hi[0], x, j, len);
}

BAGUA_AVX512 std::pair<float, float> min_max_avx512(const float* x, size_t len) {
  __m512 lo[4], hi[4];
#pragma GCC unroll 4  // every loop over the accumulators (or GCC keeps them in memory)
  for (int a = 0; a < 4; ++a)
    lo[a] = hi[a] = _mm512_set1_ps(x[0]);
  size_t j = 0;
  for (; j + 64 <= len; j += 64) {
#pragma GCC unroll 4  // the accumulators in registers (GCC keeps a rolled loop's array in memory)
    for (int a = 0; a < 4; ++a) {
      const __m512 v = _mm512_loadu_ps(x + j + 16 * a);
      lo[a] = _mm512_min_ps(v, lo[a]);
      hi[a] = _mm512_max_ps(v, hi[a]);
    }
  }
#pragma GCC unroll 4  // every loop over the accumulators (or GCC keeps them in memory)
  for (int a = 1; a < 4; ++a) {
    lo[0] = _mm512_min_ps(lo[a], lo[0]);
    hi[0] = _mm512_max_ps(hi[a], hi[0]);
  }
  return finish_min_max512(lo[0], hi[0], x, j, len);
}

BAGUA_AVX2 std::pair<float, float> add_min_max_avx2(const float* x, float one, float* e, size_t len) {
  e[0] = x[0] + one * e[0];
  const __m256 a = _mm256_set1_ps(one);
  __m256 lo[2], hi[2];
  lo[0] = lo[1] = hi[0] = hi[1] = _mm256_set1_ps(e[0]);
  size_t j = 1;
  for (; j + 16 <= len; j += 16) {
#pragma GCC unroll 2  // the accumulators in registers (GCC keeps a rolled loop's array in memory)
    for (int b = 0; b < 2; ++b) {
      float* p = e + j + 8 * b;
      const __m256 v =
          _mm256_add_ps(_mm256_loadu_ps(x + j + 8 * b), _mm256_mul_ps(a, _mm256_loadu_ps(p)));
      _mm256_storeu_ps(p, v);
      lo[b] = _mm256_min_ps(v, lo[b]);
      hi[b] = _mm256_max_ps(v, hi[b]);
    }
  }
  const size_t done = j;
  for (; j < len; ++j)
    e[j] = x[j] + one * e[j];
  return finish_min_max(_mm256_min_ps(lo[1], lo[0]), _mm256_max_ps(hi[1], hi[0]), e, done, len);
}

BAGUA_AVX512 std::pair<float, float> add_min_max_avx512(const float* x, float one, float* e,
                                                        size_t len) {
  e[0] = x[0] + one * e[0];
  const __m512 a = _mm512_set1_ps(one);
  __m512 lo[2], hi[2];
  lo[0] = lo[1] = hi[0] = hi[1] = _mm512_set1_ps(e[0]);
  size_t j = 1;
  for (; j + 32 <= len; j += 32) {
#pragma GCC unroll 2  // the accumulators in registers (GCC keeps a rolled loop's array in memory)
    for (int b = 0; b < 2; ++b) {
      float* p = e + j + 16 * b;
      const __m512 v =
          _mm512_add_ps(_mm512_loadu_ps(x + j + 16 * b), _mm512_mul_ps(a, _mm512_loadu_ps(p)));
      _mm512_storeu_ps(p, v);
      lo[b] = _mm512_min_ps(v, lo[b]);
      hi[b] = _mm512_max_ps(v, hi[b]);
    }
  }
  const size_t done = j;
  for (; j < len; ++j)
    e[j] = x[j] + one * e[j];
  return finish_min_max512(_mm512_min_ps(lo[1], lo[0]), _mm512_max_ps(hi[1], hi[0]), e, done, len);
}

BAGUA_AVX2 void quantize_avx2(const float* x, size_t len, const Levels& l, uint8_t* q) {
  const __m256 scale = _mm256_set1_ps(l.scale), upper = _mm256_set1_ps(l.upper_bound),
               lower = _mm256_set1_ps(l.lower_bound), c255 = _mm256_set1_ps(255.0f);
  size_t j = 0;
  for (; j + 32 <= len; j += 32) {
    const __m256i a = quantize8(_mm256_loadu_ps(x + j), scale, upper, lower, c255);
    const __m256i b = quantize8(_mm256_loadu_ps(x + j + 8), scale, upper, lower, c255);
    const __m256i c = quantize8(_mm256_loadu_ps(x + j + 16), scale, upper, lower, c255);
    const __m256i d = quantize8(_mm256_loadu_ps(x + j + 24), scale, upper, lower, c255);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + j), pack32(a, b, c, d));
  }
  for (; j < len; ++j)
    q[j] = quantize1(x[j], l);
}

// The codes of a chunk whose levels are small integers, in three operations an element where
// quantize16 takes six (the encode's quantize pass is bound by them, not by memory: about half of
// minmax_uint8's encode at 1 MiB): k = rint(x scale) as an int32 straight from vcvtps2dq under
// nearest-even (embedded rounding), the code k - lower_bound in integers, saturated by the packs.
// Returns false, the codes then to be written again by the exact loop, where the shortcut does not
// hold. It holds (the same bytes as quantize16) when |upper_bound| <= 2^22 and every k >= -2^22:
//   - x scale is then within 2^22 + 1/2 of 0, so rint is exact and the conversion is rint_even;
//   - x <= max (the chunk's max; a NaN x converts to INT32_MIN and is caught by the check on k), and
//     multiplying by scale (>= 0) and rounding are monotone, so k <= rint(max scale) = upper_bound: the
//     reference's min(level, upper_bound) is k;
//   - lower_bound = upper_bound - 255 exactly (an integer below 2^23), so level - lower_bound is exact
//     in float and at most 255: the reference's saturation does only what the packs do (a negative
//     code is 0), and its truncation nothing.
// An infinite max makes |upper_bound| infinite or NaN (fails the first test), an infinite min a k of
// INT32_MIN (the conversion's out-of-range value; fails the second).
static BAGUA_AVX512 bool quantize_small_levels_avx512(const float* x, size_t len, const Levels& l,
                                                      uint8_t* q) {
  constexpr float kBound = 4194304.0f;  // 2^22
  if (!(std::fabs(l.upper_bound) <= kBound)) return false;
  const __m512 scale = _mm512_set1_ps(l.scale);
  const __m512i lower = _mm512_set1_epi32(static_cast<int32_t>(l.lower_bound));
  __m512i least = _mm512_set1_epi32(0);
  const auto code = [&](const float* at) BAGUA_AVX512 {
    const __m512i k = _mm512_cvt_roundps_epi32(_mm512_mul_ps(_mm512_loadu_ps(at), scale), kNearest);
    least = _mm512_min_epi32(least, k);
    return _mm512_sub_epi32(k, lower);
  };
  size_t j = 0;
  for (; j + 64 <= len; j += 64) {
    const __m512i a = code(x + j), b = code(x + j + 16), c = code(x + j + 32), d = code(x + j + 48);
    _mm512_storeu_si512(q + j, pack64(a, b, c, d));
  }
  if (_mm512_reduce_min_epi32(least) < -static_cast<int32_t>(kBound)) return false;
  for (; j < len; ++j)
    q[j] = quantize1(x[j], l);
  return true;
}

BAGUA_AVX512 void quantize_avx512(const float* x, size_t len, const Levels& l, uint8_t* q) {
  if (quantize_small_levels_avx512(x, len, l, q)) return;
  const __m512 scale = _mm512_set1_ps(l.scale), upper = _mm512_set1_ps(l.upper_bound),
               lower = _mm512_set1_ps(l.lower_bound), c255 = _mm512_set1_ps(255.0f);
  size_t j = 0;
  for (; j + 64 <= len; j += 64) {
    const __m512i a = quantize16(_mm512_loadu_ps(x + j), scale, upper, lower, c255);
    const __m512i b = quantize16(_mm512_loadu_ps(x + j + 16), scale, upper, lower, c255);
    const __m512i c = quantize16(_mm512_loadu_ps(x + j + 32), scale, upper, lower, c255);
    const __m512i d = quantize16(_mm512_loadu_ps(x + j + 48), scale, upper, lower, c255);
    _mm512_storeu_si512(q + j, pack64(a, b, c, d));
  }
  for (; j < len; ++j)
    q[j] = quantize1(x[j], l);
}

BAGUA_AVX2 bool decode_exact_avx2(const Levels& l) {
  alignas(32) uint8_t bytes[256];
  alignas(32) float decoded[256];
  for (int q = 0; q < 256; ++q)
    bytes[q] = static_cast<uint8_t>(q);
  decode_avx2(bytes, 256, l, decoded);
  return same_as_division(decoded, l);
}

BAGUA_AVX512 bool decode_exact_avx512(const Levels& l) {
  alignas(64) uint8_t bytes[256];
  alignas(64) float decoded[256];
  for (int q = 0; q < 256; ++q)
    bytes[q] = static_cast<uint8_t>(q);
  decode_avx512(bytes, 256, l, decoded);
  return same_as_division(decoded, l);
}

BAGUA_AVX2 void decode_avx2(const uint8_t* q, size_t len, const Levels& l, float* x) {
  const __m256 lower = _mm256_set1_ps(l.lower_bound), scale = _mm256_set1_ps(l.scale),
               r = _mm256_set1_ps(1.0f / l.scale);
  size_t j = 0;
  for (; j + 8 <= len; j += 8) {
    const __m256i q32 = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + j)));
    _mm256_storeu_ps(x + j, decode8(q32, lower, scale, r));
  }
  if (j < len) {  // the tail through the same lanes (a lane's result depends on its byte alone)
    alignas(32) uint8_t tail_q[8] = {};
    alignas(32) float tail_x[8];
    std::memcpy(tail_q, q + j, len - j);
    const __m256i q32 = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(tail_q)));
    _mm256_storeu_ps(tail_x, decode8(q32, lower, scale, r));
    std::memcpy(x + j, tail_x, 4 * (len - j));
  }
}

BAGUA_AVX512 void decode_avx512(const uint8_t* q, size_t len, const Levels& l, float* x) {
  const __m512 lower = _mm512_set1_ps(l.lower_bound), scale = _mm512_set1_ps(l.scale),
               r = _mm512_set1_ps(1.0f / l.scale);
  size_t j = 0;
  for (; j + 16 <= len; j += 16) {
    const __m512i q32 = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + j)));
    _mm512_storeu_ps(x + j, decode16(q32, lower, scale, r));
  }
  if (j < len) {  // the tail under a mask, through the same lanes
    const __mmask16 m = static_cast<__mmask16>((1u << (len - j)) - 1u);
    const __m512i q32 = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, q + j));
    _mm512_mask_storeu_ps(x + j, m, decode16(q32, lower, scale, r));
  }
}

BAGUA_AVX2 void quantize_residual_avx2(float* e, size_t len, const Levels& l, float a, bool fast_decode,
                                       uint8_t* q) {
  const __m256 scale = _mm256_set1_ps(l.scale), upper = _mm256_set1_ps(l.upper_bound),
               lower = _mm256_set1_ps(l.lower_bound), c255 = _mm256_set1_ps(255.0f),
               r = _mm256_set1_ps(1.0f / l.scale), va = _mm256_set1_ps(a);
  size_t j = 0;
  for (; j + 32 <= len; j += 32) {
    __m256 v[4];
    __m256i b[4];
#pragma GCC unroll 4  // v and b in registers (GCC keeps a rolled loop's array in memory)
    for (int k = 0; k < 4; ++k) {
      v[k] = _mm256_loadu_ps(e + j + 8 * k);
      b[k] = quantize8(v[k], scale, upper, lower, c255);
    }
    const __m256i bytes = pack32(b[0], b[1], b[2], b[3]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + j), bytes);
    // The decoded value of the stored byte: b[k] saturated to [0, 255] as the pack saturated it.
#pragma GCC unroll 4  // v and b in registers (GCC keeps a rolled loop's array in memory)
    for (int k = 0; k < 4; ++k) {
      const __m256i stored =
          _mm256_min_epi32(_mm256_max_epi32(b[k], _mm256_setzero_si256()), _mm256_set1_epi32(255));
      const __m256 d = fast_decode ? decode8(stored, lower, scale, r) : divide8(stored, lower, scale);
      _mm256_storeu_ps(e + j + 8 * k, _mm256_add_ps(v[k], _mm256_mul_ps(va, d)));
    }
  }
  for (; j < len; ++j) {
    q[j] = quantize1(e[j], l);
    e[j] = e[j] + a * divide1(q[j], l);
  }
}

BAGUA_AVX512 void quantize_residual_avx512(float* e, size_t len, const Levels& l, float a,
                                           bool fast_decode, uint8_t* q) {
  const __m512 scale = _mm512_set1_ps(l.scale), upper = _mm512_set1_ps(l.upper_bound),
               lower = _mm512_set1_ps(l.lower_bound), c255 = _mm512_set1_ps(255.0f),
               r = _mm512_set1_ps(1.0f / l.scale), va = _mm512_set1_ps(a);
  size_t j = 0;
  for (; j + 64 <= len; j += 64) {
    __m512 v[4];
    __m512i b[4];
#pragma GCC unroll 4  // v and b in registers (GCC keeps a rolled loop's array in memory)
    for (int k = 0; k < 4; ++k) {
      v[k] = _mm512_loadu_ps(e + j + 16 * k);
      b[k] = quantize16(v[k], scale, upper, lower, c255);
    }
    _mm512_storeu_si512(q + j, pack64(b[0], b[1], b[2], b[3]));
#pragma GCC unroll 4  // v and b in registers (GCC keeps a rolled loop's array in memory)
    for (int k = 0; k < 4; ++k) {
      const __m512i stored =
          _mm512_min_epi32(_mm512_max_epi32(b[k], _mm512_setzero_si512()), _mm512_set1_epi32(255));
      const __m512 d = fast_decode ? decode16(stored, lower, scale, r) : divide16(stored, lower, scale);
      _mm512_storeu_ps(e + j + 16 * k, _mm512_add_ps(v[k], _mm512_mul_ps(va, d)));
    }
  }
  for (; j < len; ++j) {
    q[j] = quantize1(e[j], l);
    e[j] = e[j] + a * divide1(q[j], l);
  }
}

BAGUA_AVX2 void fp16_encode_avx2(const float* x, size_t n, uint8_t* y) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i a = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), kHalfNearest);
    const __m128i b = _mm256_cvtps_ph(_mm256_loadu_ps(x + i + 8), kHalfNearest);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + 2 * i), _mm256_set_m128i(b, a));
  }
  for (; i < n; ++i) {
    const uint16_t h = f32_to_f16_bits(x[i]);
    std::memcpy(y + 2 * i, &h, 2);
  }
}

BAGUA_AVX512 void fp16_encode_avx512(const float* x, size_t n, uint8_t* y) {
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i a = _mm512_cvtps_ph(_mm512_loadu_ps(x + i), kHalfNearest);
    const __m256i b = _mm512_cvtps_ph(_mm512_loadu_ps(x + i + 16), kHalfNearest);
    _mm512_storeu_si512(y + 2 * i, _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1));
  }
  for (; i < n; ++i) {
    const uint16_t h = f32_to_f16_bits(x[i]);
    std::memcpy(y + 2 * i, &h, 2);
  }
}

// Elements i .. n - 1 one at a time (the vector loops' tails).
inline void bf16_tail(const float* x, size_t i, size_t n, uint8_t* y) {
  for (; i < n; ++i) {
    const uint16_t b = f32_to_bf16_bits(x[i]);
    std::memcpy(y + 2 * i, &b, 2);
  }
}

BAGUA_AVX2 void bf16_encode_avx2(const float* x, size_t n, uint8_t* y) {
  // As bf16_encode_avx512, eight lanes a vector; two vectors' 16-bit results packed (unsigned
  // saturation keeps them, all below 2^16) and put back in order (the pack works per 128-bit lane).
  const __m256i round = _mm256_set1_epi32(0x7FFF), one = _mm256_set1_epi32(1),
                quiet = _mm256_set1_epi32(0x0040), magnitude = _mm256_set1_epi32(0x7FFFFFFF),
                infinity = _mm256_set1_epi32(0x7F800000);
  const auto halves = [&](const float* at) BAGUA_AVX2 {
    const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at));
    const __m256i high = _mm256_srli_epi32(bits, 16);
    const __m256i rounded = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_add_epi32(bits, round), _mm256_and_si256(high, one)), 16);
    // |bits| > infinity's as signed integers (both non-negative): a NaN.
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(bits, magnitude), infinity);
    return _mm256_blendv_epi8(rounded, _mm256_or_si256(high, quiet), nan);
  };
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i packed = _mm256_packus_epi32(halves(x + i), halves(x + i + 8));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + 2 * i),
                        _mm256_permute4x64_epi64(packed, 0xD8));  // lanes 0, 2, 1, 3
  }
  bf16_tail(x, i, n, y);
}

BAGUA_AVX512 void bf16_encode_avx512(const float* x, size_t n, uint8_t* y) {
  // f32_to_bf16_bits: a NaN (|bits| above infinity's, an unsigned compare) keeps its top half with the
  // quiet bit set; any other value is rounded to nearest even on its low 16 bits.
  const __m512i round = _mm512_set1_epi32(0x7FFF), one = _mm512_set1_epi32(1),
                quiet = _mm512_set1_epi32(0x0040), magnitude = _mm512_set1_epi32(0x7FFFFFFF),
                infinity = _mm512_set1_epi32(0x7F800000);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i bits = _mm512_loadu_si512(x + i);
    const __m512i high = _mm512_srli_epi32(bits, 16);
    const __m512i rounded = _mm512_srli_epi32(
        _mm512_add_epi32(_mm512_add_epi32(bits, round), _mm512_and_si512(high, one)), 16);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(bits, magnitude), infinity);
    const __m512i b = _mm512_mask_blend_epi32(nan, rounded, _mm512_or_si512(high, quiet));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + 2 * i), _mm512_cvtepi32_epi16(b));
  }
  bf16_tail(x, i, n, y);
}

BAGUA_AVX2 void fp16_decode_avx2(const uint8_t* y, size_t n, float* x) {
  const __m256i exponent_mask = _mm256_set1_epi32(0x7E00), signalling = _mm256_set1_epi32(0x7C00),
                quiet_bit = _mm256_set1_epi32(0x00400000);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(y + 2 * i));
    const __m256i h32 = _mm256_cvtepu16_epi32(h);
    const __m256i fix = _mm256_and_si256(
        _mm256_cmpeq_epi32(_mm256_and_si256(h32, exponent_mask), signalling), quiet_bit);
    const __m256i f = _mm256_castps_si256(_mm256_cvtph_ps(h));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(x + i), _mm256_andnot_si256(fix, f));
  }
  for (; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, y + 2 * i, 2);
    x[i] = f16_bits_to_f32(h);
  }
}

BAGUA_AVX512 void fp16_decode_avx512(const uint8_t* y, size_t n, float* x) {
  const __m256i exponent_mask = _mm256_set1_epi16(0x7E00), signalling = _mm256_set1_epi16(0x7C00);
  const __m512i quiet_bit = _mm512_set1_epi32(0x00400000);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y + 2 * i));
    const __mmask16 fix = _mm256_cmpeq_epi16_mask(_mm256_and_si256(h, exponent_mask), signalling);
    const __m512i f = _mm512_castps_si512(_mm512_cvtph_ps(h));
    _mm512_storeu_si512(x + i, _mm512_mask_andnot_epi32(f, fix, quiet_bit, f));
  }
  for (; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, y + 2 * i, 2);
    x[i] = f16_bits_to_f32(h);
  }
}

BAGUA_AVX512 double sum_squares_avx512(const float* x, size_t len) {
  return sum_squares(x, len);
}

namespace {

// Keys are below 2^31, so a signed comparison orders them; a NaN's magnitude (above 0x7F800000)
// reaches any floor its key does. The block's candidates' indices and keys (the magnitude, at most
// 0x7F800000) are packed to the front of one 16-lane store each (vpcompressd), and the count advances
// by their number.
template <bool kFeedback>
BAGUA_AVX512 inline size_t topk_candidates(const float* x, float one, float* e, size_t n,
                                           uint32_t floor, uint32_t* index, uint32_t* keys,
                                           uint32_t* top) {
  const __m512i below = _mm512_set1_epi32(static_cast<int32_t>(floor) - 1);
  const __m512i magnitude = _mm512_set1_epi32(0x7FFFFFFF);
  const __m512i infinity = _mm512_set1_epi32(0x7F800000);
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512 a = _mm512_set1_ps(one);
  __m512i highest = _mm512_set1_epi32(static_cast<int32_t>(floor));
  size_t count = 0, i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 v;
    if constexpr (kFeedback) {
      v = _mm512_add_ps(_mm512_loadu_ps(x + i), _mm512_mul_ps(a, _mm512_loadu_ps(e + i)));
      _mm512_storeu_ps(e + i, v);
    } else {
      v = _mm512_loadu_ps(x + i);
    }
    const __m512i bits = _mm512_and_si512(_mm512_castps_si512(v), magnitude);
    const __mmask16 mask = _mm512_cmpgt_epi32_mask(bits, below);
    const __m512i key = _mm512_min_epu32(bits, infinity);
    highest = _mm512_mask_max_epu32(highest, mask, highest, key);
    const __m512i indices = _mm512_add_epi32(iota, _mm512_set1_epi32(static_cast<int32_t>(i)));
    _mm512_storeu_si512(index + count, _mm512_maskz_compress_epi32(mask, indices));
    _mm512_storeu_si512(keys + count, _mm512_maskz_compress_epi32(mask, key));
    count += static_cast<size_t>(std::popcount(static_cast<unsigned>(mask)));
  }
  uint32_t most = _mm512_reduce_max_epu32(highest);
  for (; i < n; ++i) {
    float v;
    if constexpr (kFeedback) {
      v = x[i] + one * e[i];
      e[i] = v;
    } else {
      v = x[i];
    }
    count = topk_candidate(v, i, floor, index, keys, count, &most);
  }
  *top = most;
  return count;
}

}  // namespace

BAGUA_AVX512 size_t topk_candidates_avx512(const float* x, size_t n, uint32_t floor, uint32_t* index,
                                           uint32_t* keys, uint32_t* top) {
  return topk_candidates<false>(x, 0.0f, nullptr, n, floor, index, keys, top);
}

BAGUA_AVX2 size_t topk_candidates_avx2(const float* x, size_t n, uint32_t floor, uint32_t* index,
                                       uint32_t* keys, uint32_t* top, const uint32_t* set_bits) {
  // As topk_candidates: keys below 2^31 compare signed; the step's candidates' positions (the mask's
  // row of set_bits) gather its indices and keys to the front of one 8-lane store each.
  const __m256i below = _mm256_set1_epi32(static_cast<int32_t>(floor) - 1);
  const __m256i magnitude = _mm256_set1_epi32(0x7FFFFFFF);
  const __m256i infinity = _mm256_set1_epi32(0x7F800000);
  __m256i highest = _mm256_set1_epi32(static_cast<int32_t>(floor));
  size_t count = 0, i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i bits =
        _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)), magnitude);
    const __m256i candidate = _mm256_cmpgt_epi32(bits, below);
    const auto mask = static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(candidate)));
    const __m256i key = _mm256_min_epu32(bits, infinity);
    highest = _mm256_max_epu32(highest, _mm256_and_si256(key, candidate));
    const __m256i positions =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(set_bits + 8 * static_cast<size_t>(mask)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(index + count),
                        _mm256_add_epi32(positions, _mm256_set1_epi32(static_cast<int32_t>(i))));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(keys + count),
                        _mm256_permutevar8x32_epi32(key, positions));
    count += static_cast<size_t>(std::popcount(mask));
  }
  alignas(32) uint32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), highest);
  uint32_t most = floor;
  for (const uint32_t l : lanes)
    most = l > most ? l : most;
  for (; i < n; ++i)
    count = topk_candidate(x[i], i, floor, index, keys, count, &most);
  *top = most;
  return count;
}

BAGUA_AVX512 size_t topk_candidates_feedback_avx512(const float* x, float one, float* e, size_t n,
                                                    uint32_t floor, uint32_t* index, uint32_t* keys,
                                                    uint32_t* top) {
  return topk_candidates<true>(x, one, e, n, floor, index, keys, top);
}

BAGUA_AVX512 void topk_keep_avx512(const uint32_t* index, const uint32_t* keys, size_t count,
                                   const float* x, TopkKept& kept) {
  const __m512i t = _mm512_set1_epi32(static_cast<int32_t>(kept.threshold));
  uint8_t* const values = kept.y + 4 * kept.k;
  size_t c = 0;
  // Sixteen candidates at a time while none of them is a tie still to keep: the kept lanes' indices
  // and gathered values packed to the front (masked stores: nothing past the kept is written).
  for (; c + 16 <= count && kept.count < kept.k; c += 16) {
    const __m512i m = _mm512_loadu_si512(keys + c);
    if (kept.ties_left > 0 && _mm512_cmpeq_epi32_mask(m, t) != 0) {
      for (size_t d = c; d < c + 16 && kept.count < kept.k; ++d)
        kept.offer(index[d], keys[d], x);
      continue;
    }
    const __mmask16 keep = _mm512_cmpgt_epu32_mask(m, t);
    const __m512i i = _mm512_loadu_si512(index + c);
    const __m512 v = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), keep, i, x, 4);
    const auto n = static_cast<unsigned>(std::popcount(static_cast<unsigned>(keep)));
    const auto front = static_cast<__mmask16>((1u << n) - 1u);
    _mm512_mask_storeu_epi32(kept.y + 4 * kept.count, front, _mm512_maskz_compress_epi32(keep, i));
    _mm512_mask_storeu_ps(values + 4 * kept.count, front, _mm512_maskz_compress_ps(keep, v));
    kept.count += n;
  }
  for (; c < count && kept.count < kept.k; ++c)
    kept.offer(index[c], keys[c], x);
}

// The baseline's sum_abs and sum_squares at AVX2 (kernels.cc certifies whatever order they sum in):
// vcvtps2pd widens four floats a vector straight from memory, where GCC's lowering of the
// multiversioned loop's F32x4 -> F64x4 conversion took two halves, an insert and stack spills (70 %
// of sign's encode at 1 MiB on the AVX2 level).
// Eight chains of four doubles (the adds' latency does not bound the loop), each step `add(acc, d)`
// with d four floats widened, then the tail element by element by `one`.
template <class Add, class One>
BAGUA_AVX2 inline double widened_sum_avx2(const float* x, size_t len, Add add, One one) {
  __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  const auto at = [x](size_t j) BAGUA_AVX2 { return _mm256_cvtps_pd(_mm_loadu_ps(x + j)); };
  size_t j = 0;
  for (; j + 32 <= len; j += 32) {
    a0 = add(a0, at(j));
    a1 = add(a1, at(j + 4));
    a2 = add(a2, at(j + 8));
    a3 = add(a3, at(j + 12));
    a4 = add(a4, at(j + 16));
    a5 = add(a5, at(j + 20));
    a6 = add(a6, at(j + 24));
    a7 = add(a7, at(j + 28));
  }
  double sum = 0;
  for (; j < len; ++j)
    sum += one(x[j]);
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(_mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3)),
                                       _mm256_add_pd(_mm256_add_pd(a4, a5), _mm256_add_pd(a6, a7))));
  return sum + ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3]));
}

BAGUA_AVX2 double sum_abs_avx2(const float* x, size_t len) {
  const __m256d magnitude = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFFll));
  return widened_sum_avx2(
      x, len,
      [magnitude](__m256d acc, __m256d d)
          BAGUA_AVX2 { return _mm256_add_pd(acc, _mm256_and_pd(d, magnitude)); },
      [](float v) { return static_cast<double>(std::fabs(v)); });
}

BAGUA_AVX2 double sum_squares_avx2(const float* x, size_t len) {
  // Each square is exact in double (24-bit significands), so the fused multiply-add adds the same.
  // ([&]: a lambda without captures has a conversion to a function pointer, which lacks the target.)
  return widened_sum_avx2(
      x, len, [&](__m256d acc, __m256d d) BAGUA_AVX2 { return _mm256_fmadd_pd(d, d, acc); },
      [](float v) { return static_cast<double>(v) * v; });
}

BAGUA_AVX512 double sum_abs_avx512(const float* x, size_t len) {
  const __m512i abs_mask = _mm512_set1_epi64(0x7FFFFFFFFFFFFFFFll);
  __m512d acc[4] = {_mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd()};
  size_t j = 0;
  for (; j + 32 <= len; j += 32) {
#pragma GCC unroll 4  // the accumulators in registers (GCC keeps a rolled loop's array in memory)
    for (int a = 0; a < 4; ++a) {
      const __m512d d = _mm512_cvtps_pd(_mm256_loadu_ps(x + j + 8 * a));
      acc[a] = _mm512_add_pd(acc[a],
                             _mm512_castsi512_pd(_mm512_and_si512(_mm512_castpd_si512(d), abs_mask)));
    }
  }
  double sum = 0;
  for (; j < len; ++j)
    sum += std::fabs(x[j]);
  const __m512d total = _mm512_add_pd(_mm512_add_pd(acc[0], acc[1]), _mm512_add_pd(acc[2], acc[3]));
  return sum + _mm512_reduce_add_pd(total);
}

BAGUA_AVX512 double add_sum_abs_avx512(const float* x, float one, float* e, size_t len) {
  const __m512i abs_mask = _mm512_set1_epi64(0x7FFFFFFFFFFFFFFFll);
  const __m512 a = _mm512_set1_ps(one);
  __m512d acc[4] = {_mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd()};
  size_t j = 0;
  for (; j + 32 <= len; j += 32) {
#pragma GCC unroll 2  // the accumulators in registers (GCC keeps a rolled loop's array in memory)
    for (int b = 0; b < 2; ++b) {
      float* p = e + j + 16 * b;
      const __m512 v =
          _mm512_add_ps(_mm512_loadu_ps(x + j + 16 * b), _mm512_mul_ps(a, _mm512_loadu_ps(p)));
      _mm512_storeu_ps(p, v);
      const __m512d low = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
      const __m512d high =
          _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
      acc[2 * b] = _mm512_add_pd(
          acc[2 * b], _mm512_castsi512_pd(_mm512_and_si512(_mm512_castpd_si512(low), abs_mask)));
      acc[2 * b + 1] = _mm512_add_pd(
          acc[2 * b + 1], _mm512_castsi512_pd(_mm512_and_si512(_mm512_castpd_si512(high), abs_mask)));
    }
  }
  double sum = 0;
  for (; j < len; ++j) {
    e[j] = x[j] + one * e[j];
    sum += std::fabs(e[j]);
  }
  const __m512d total = _mm512_add_pd(_mm512_add_pd(acc[0], acc[1]), _mm512_add_pd(acc[2], acc[3]));
  return sum + _mm512_reduce_add_pd(total);
}

BAGUA_AVX2 void sign_bits_avx2(const float* x, size_t bytes, uint8_t* bits) {
  // x >= 0 (false for NaN: ordered, non-signalling) per lane, the lanes' sign bits by vmovmskps.
  const __m256 zero = _mm256_setzero_ps();
  size_t b = 0;
  for (; b + 4 <= bytes; b += 4) {
    uint32_t word = 0;
#pragma GCC unroll 4  // four whole bytes a word
    for (int k = 0; k < 4; ++k) {
      const __m256 ge = _mm256_cmp_ps(_mm256_loadu_ps(x + 8 * (b + k)), zero, _CMP_GE_OQ);
      word |= static_cast<uint32_t>(_mm256_movemask_ps(ge)) << (8 * k);
    }
    std::memcpy(bits + b, &word, 4);  // little-endian: elements 8b .. 8b + 7 in byte b
  }
  for (; b < bytes; ++b)
    bits[b] = static_cast<uint8_t>(
        _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + 8 * b), zero, _CMP_GE_OQ)));
}

BAGUA_AVX512 void sign_bits_avx512(const float* x, size_t bytes, uint8_t* bits) {
  const __m512 zero = _mm512_setzero_ps();
  size_t b = 0;
  for (; b + 2 <= bytes; b += 2) {
    const auto mask =
        static_cast<uint16_t>(_mm512_cmp_ps_mask(_mm512_loadu_ps(x + 8 * b), zero, _CMP_GE_OQ));
    std::memcpy(bits + b, &mask, 2);  // little-endian: elements 8b .. 8b + 7 in byte b
  }
  if (b < bytes)
    bits[b] = static_cast<uint8_t>(
        _mm256_cmp_ps_mask(_mm256_loadu_ps(x + 8 * b), _mm256_setzero_ps(), _CMP_GE_OQ));
}

namespace {

// ---- QSGD ----------------------------------------------------------------------------------------
// Terms of qsgd_code.h. Sixteen elements e .. e + 15 at a time; their draws are the mixes of states
// s0 + (e + k + 1) G, eight lanes of 64 bits per mix (vpmullq). The reference's per-element arithmetic
// in other instructions, each giving the same value:
//   - r = max(|x| levels_per_unit, 0): vmaxps returns its second operand (0) where r is NaN, as the
//     reference's `if (!(r >= 0)) r = 0`; r is never negative.
//   - floor(r) by truncation to int32 (vcvttps2dq), and r - floor(r) by vreduceps (r - trunc(r), exact
//     as the subtraction is). r <= s (1 + 2^-22) < 2^17 wherever levels_per_unit is finite (|x| is at
//     most the chunk's norm), so the level floor(r) + 1 and min(level, s) are the same integers in
//     int32 as in the reference's floats. levels_per_unit is always finite here: the lanes run chunks
//     of prescale 1 only, and a chunk whose s / norm overflows (prescale 2^64, qsgd_code.h) is coded
//     by qsgd_code one element at a time.
//   - u < r - floor(r) as 2^24 u < 2^24 (r - floor(r)): 2^24 u is the draw's top 24 bits converted
//     exactly, and scaling by 2^24 is exact.
//   - the top 24 bits of a mix are the top 24 of its high 32 bits: the two mixes' high halves are
//     gathered into sixteen 32-bit lanes in element order (one permute) and shifted by 8.

// The mix of eight states as Rng::next computes it, before its last step (which keeps the top bits).
BAGUA_AVX512 inline __m512i mix8(__m512i state) {
  const __m512i z = _mm512_mullo_epi64(_mm512_xor_si512(state, _mm512_srli_epi64(state, 30)),
                                       _mm512_set1_epi64(static_cast<long long>(kMix1)));
  return _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 27)),
                            _mm512_set1_epi64(static_cast<long long>(kMix2)));
}

// The loop's constants (those of one chunk set by start), and the codes of sixteen elements.
struct QsgdLanes {
  __m512i first;  // the states of the next block's elements e .. e + 7: s0 + (e + k + 1) G
  __m512 unit;    // levels_per_unit
  __m512i lane_draws, eight_draws, sixteen_draws;
  __m512 zero, two24;
  __m512i magnitude, one, s, sign_bit;

  BAGUA_AVX512 QsgdLanes(float s_float, int level_bits) {
    lane_draws =
        _mm512_setr_epi64(static_cast<long long>(1 * kGolden), static_cast<long long>(2 * kGolden),
                          static_cast<long long>(3 * kGolden), static_cast<long long>(4 * kGolden),
                          static_cast<long long>(5 * kGolden), static_cast<long long>(6 * kGolden),
                          static_cast<long long>(7 * kGolden), static_cast<long long>(8 * kGolden));
    eight_draws = _mm512_set1_epi64(static_cast<long long>(8 * kGolden));
    sixteen_draws = _mm512_set1_epi64(static_cast<long long>(16 * kGolden));
    zero = _mm512_setzero_ps();
    two24 = _mm512_set1_ps(0x1p24f);
    magnitude = _mm512_set1_epi32(0x7FFFFFFF);
    one = _mm512_set1_epi32(1);
    s = _mm512_set1_epi32(static_cast<int32_t>(s_float));
    sign_bit = _mm512_set1_epi32(1 << level_bits);
  }

  // The next block is element 0 of a run whose generator is in state s0.
  BAGUA_AVX512 void start(float levels_per_unit, uint64_t s0) {
    unit = _mm512_set1_ps(levels_per_unit);
    first = _mm512_add_epi64(_mm512_set1_epi64(static_cast<long long>(s0)), lane_draws);
  }

  // The codes of the sixteen elements v of the next block; advances to the block after it.
  BAGUA_AVX512 __m512i codes16(__m512 v) {
    const __m512i low = mix8(first), high = mix8(_mm512_add_epi64(first, eight_draws));
    first = _mm512_add_epi64(first, sixteen_draws);
    const __m512i high_halves = _mm512_permutex2var_epi32(
        low, _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31), high);
    const __m512 u24 = _mm512_cvtepi32_ps(_mm512_srli_epi32(high_halves, 8));  // 2^24 u
    const __m512 r = _mm512_max_ps(
        _mm512_mul_ps(_mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v), magnitude)), unit),
        zero);
    const __m512i floor_r = _mm512_cvttps_epi32(r);
    const __m512 fraction = _mm512_reduce_ps(r, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __mmask16 up = _mm512_cmp_ps_mask(u24, _mm512_mul_ps(fraction, two24), _CMP_LT_OQ);
    const __m512i l = _mm512_min_epi32(_mm512_mask_add_epi32(floor_r, up, floor_r, one), s);
    const __mmask16 negative = _mm512_test_epi32_mask(l, l) & _mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ);
    return _mm512_mask_or_epi32(l, negative, l, sign_bit);
  }
};

// Stores the low `bytes` bytes of `word` at p (8 where the stream has room: the next block
// overwrites the excess).
inline uint8_t* put_block(uint8_t* p, uint64_t word, size_t bytes, const uint8_t* stream_end) {
  if (p + 8 <= stream_end) {
    std::memcpy(p, &word, 8);
  } else {
    for (size_t b = 0; b < bytes; ++b)
      p[b] = static_cast<uint8_t>(word >> (8 * b));
  }
  return p + bytes;
}

// Sixteen codes of code_bits <= 8 bits packed as the stream holds them, 2 code_bits bytes at p. With
// kCodeBits = 4, each pair (codes 2k, 2k + 1, one 64-bit lane) becomes the byte c_2k | c_2k+1 << 4
// (the lane's low 8 bits after q | q >> 28) and the eight lanes' low bytes are stored (vpmovqb); with
// kCodeBits = 8 the codes' low bytes are stored (vpmovdb). Otherwise (kCodeBits = 0, any code_bits)
// the low bytes of codes 0-7 and 8-15 are two words whose low code_bits bits of each byte (low_bits)
// are gathered by bit extracts (BMI2 pext), and stored as two 8-byte words, code_bits bytes apart
// (the next block overwrites the excess; only where the stream has room for it, `room`).
template <int kCodeBits>
BAGUA_AVX512 inline uint8_t* store16(__m512i codes, size_t code_bits, uint64_t low_bits, bool room,
                                     uint8_t* p, const uint8_t* stream_end) {
  if constexpr (kCodeBits == 4) {
    _mm512_mask_cvtepi64_storeu_epi8(p, 0xFF, _mm512_or_si512(codes, _mm512_srli_epi64(codes, 28)));
    return p + 8;
  } else if constexpr (kCodeBits == 8) {
    _mm512_mask_cvtepi32_storeu_epi8(p, 0xFFFF, codes);
    return p + 16;
  } else {
    const __m128i narrow = _mm512_cvtepi32_epi8(codes);
    const uint64_t low = _pext_u64(static_cast<uint64_t>(_mm_cvtsi128_si64(narrow)), low_bits);
    const uint64_t high = _pext_u64(static_cast<uint64_t>(_mm_extract_epi64(narrow, 1)), low_bits);
    if (room) {
      std::memcpy(p, &low, 8);
      std::memcpy(p + code_bits, &high, 8);
      return p + 2 * code_bits;
    }
    p = put_block(p, low, code_bits, stream_end);
    return put_block(p, high, code_bits, stream_end);
  }
}

// A chunk's codes x[0, len) packed from `stream`, which is where its first code starts (a byte
// boundary), `lanes` started on it; returns where the next chunk's codes start. len is a multiple of 8
// unless the chunk is the stream's last, whose partial byte is zero-padded. kCodeBits: as store16.
// A chunk of prescale 2^64 (qsgd_code.h) has every code from qsgd_code, packed as the last elements.
template <int kCodeBits>
BAGUA_AVX512 inline uint8_t* encode_chunk(QsgdLanes& lanes, const float* x, size_t len, QsgdScale scale,
                                          float s, int level_bits, uint64_t s0, uint8_t* stream,
                                          const uint8_t* stream_end) {
  const int code_bits = level_bits + 1;
  const auto bytes = static_cast<size_t>(code_bits);
  const uint64_t low_bits = 0x0101010101010101ull * ((1u << code_bits) - 1u);
  size_t j = 0;
  if (!scale.prescaled()) {
    for (; j + 16 <= len; j += 16)
      stream = store16<kCodeBits>(lanes.codes16(_mm512_loadu_ps(x + j)), bytes, low_bits,
                                  stream + 16 <= stream_end, stream, stream_end);
  }
  // The last elements (fewer than 16, or all of a prescaled chunk): whole blocks of 8 through a
  // 64-bit word, then the stream's last codes through a bit writer.
  uint64_t pending = 0;
  int pending_bits = 0;
  for (size_t block = j; j < len; ++j) {
    const uint32_t code = qsgd_code(x[j], scale, s, level_bits, qsgd_draw(s0, j));
    pending |= static_cast<uint64_t>(code) << pending_bits;
    pending_bits += code_bits;
    if (j + 1 == block + 8) {  // a whole block: 8 codes, `bytes` bytes
      stream = put_block(stream, pending, bytes, stream_end);
      pending = 0;
      pending_bits = 0;
      block = j + 1;
    }
  }
  for (int b = 0; b < pending_bits; b += 8)
    *stream++ = static_cast<uint8_t>(pending >> b);
  return stream;
}

}  // namespace

BAGUA_AVX512 void qsgd_codes_avx512(const float* x, size_t begin, size_t len, float levels_per_unit,
                                    float s, int level_bits, uint64_t s0, uint32_t* codes) {
  QsgdLanes lanes(s, level_bits);
  lanes.start(levels_per_unit, s0 + begin * kGolden);
  size_t j = 0;
  for (; j + 16 <= len; j += 16)
    _mm512_storeu_si512(codes + j, lanes.codes16(_mm512_loadu_ps(x + begin + j)));
  for (; j < len; ++j)
    codes[j] =
        qsgd_code(x[begin + j], {1.0f, levels_per_unit}, s, level_bits, qsgd_draw(s0, begin + j));
}

namespace {

BAGUA_AVX512 inline float chunk_norm(const float* x, const compress_detail::Chunking& chunks,
                                     size_t i) {
  const float* chunk = x + chunks.begin(i);
  return qsgd_certified_norm(sum_squares(chunk, chunks.length(i)), chunk, chunks.length(i));
}

// qsgd_encode_avx512 with kCodeBits as store16 takes it.
template <int kCodeBits>
BAGUA_AVX512 void encode_chunks(const float* x, size_t n, size_t chunk_size, uint32_t levels,
                                uint64_t s0, uint8_t* y) {
  const compress_detail::Chunking chunks(n, chunk_size);
  const float s = static_cast<float>(levels);
  const int level_bits = std::bit_width(levels), code_bits = level_bits + 1;
  uint8_t* stream = y + 4 * chunks.count;
  const uint8_t* const stream_end =
      stream + compress_detail::div_up(n * static_cast<size_t>(code_bits), 8);
  QsgdLanes lanes(s, level_bits);
  float norm = chunks.count > 0 ? chunk_norm(x, chunks, 0) : 0.0f;
  for (size_t i = 0; i < chunks.count; ++i) {
    compress_detail::store_f32(y + 4 * i, norm);
    const QsgdScale scale = qsgd_scale(s, norm);
    // The next chunk's norm first: its sum, square roots and division then overlap this chunk's
    // codes instead of delaying the next chunk's.
    if (i + 1 < chunks.count) norm = chunk_norm(x, chunks, i + 1);
    const uint64_t chunk_s0 = s0 + chunks.begin(i) * kGolden;  // element j's draw: number j from here
    lanes.start(scale.levels_per_unit, chunk_s0);
    stream = encode_chunk<kCodeBits>(lanes, x + chunks.begin(i), chunks.length(i), scale, s, level_bits,
                                     chunk_s0, stream, stream_end);
  }
}

}  // namespace

BAGUA_AVX512 void qsgd_encode_avx512(const float* x, size_t n, size_t chunk_size, uint32_t levels,
                                     uint64_t s0, uint8_t* y) {
  switch (std::bit_width(levels) + 1) {
    case 4:
      return encode_chunks<4>(x, n, chunk_size, levels, s0, y);
    case 8:
      return encode_chunks<8>(x, n, chunk_size, levels, s0, y);
    default:
      return encode_chunks<0>(x, n, chunk_size, levels, s0, y);
  }
}

namespace {

// The sixteen codes of code_bits <= 8 bits stored from p (a byte boundary) in 32-bit lanes, store16's
// packings undone: with kCodeBits = 4, the 8 bytes widened to 16-bit lanes, each lane's high nibble
// moved to its high byte, and the 16 bytes widened (vpmovzxbd); with kCodeBits = 8 the 16 bytes
// widened; otherwise two words of 8 code_bits bits, at p and p + code_bits, each code deposited into a
// byte of its own (BMI2 pdep), then widened. The words are read as 8-byte loads where the stream has
// room (`room`), else code_bits bytes.
template <int kCodeBits>
BAGUA_AVX512 inline __m512i load16(const uint8_t* p, size_t code_bits, uint64_t low_bits, bool room) {
  if constexpr (kCodeBits == 4) {
    const __m128i words = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    const __m128i nibbles =
        _mm_or_si128(_mm_and_si128(words, _mm_set1_epi16(0x000F)),
                     _mm_and_si128(_mm_slli_epi16(words, 4), _mm_set1_epi16(0x0F00)));
    return _mm512_cvtepu8_epi32(nibbles);
  } else if constexpr (kCodeBits == 8) {
    return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  } else {
    uint64_t low = 0, high = 0;
    std::memcpy(&low, p, room ? 8 : code_bits);
    std::memcpy(&high, p + code_bits, room ? 8 : code_bits);
    return _mm512_cvtepu8_epi32(_mm_set_epi64x(static_cast<long long>(_pdep_u64(high, low_bits)),
                                               static_cast<long long>(_pdep_u64(low, low_bits))));
  }
}

// qsgd_decode_avx512 with kCodeBits as load16 takes it. A code's value is level unit with the sign
// flipped where its sign bit is set (-m is m with its sign bit flipped).
template <int kCodeBits>
BAGUA_AVX512 void decode_chunks(const uint8_t* y, size_t n, size_t chunk_size, uint32_t levels,
                                float* x) {
  const compress_detail::Chunking chunks(n, chunk_size);
  const float s = static_cast<float>(levels);
  const int level_bits = std::bit_width(levels), code_bits = level_bits + 1;
  const auto bytes = static_cast<size_t>(code_bits);
  const uint64_t low_bits = 0x0101010101010101ull * ((1u << code_bits) - 1u);
  const __m512i level_mask = _mm512_set1_epi32((1 << level_bits) - 1),
                sign_bit = _mm512_set1_epi32(1 << level_bits);
  const __m512 flip = _mm512_set1_ps(-0.0f);
  const uint8_t* const stream = y + 4 * chunks.count;
  const uint8_t* const stream_end = stream + compress_detail::div_up(n * bytes, 8);
  for (size_t i = 0; i < chunks.count; ++i) {
    const float unit = compress_detail::load_f32(y + 4 * i) / s, cap = qsgd_cap(unit);
    const __m512 units = _mm512_set1_ps(unit), caps = _mm512_set1_ps(cap);
    const size_t begin = chunks.begin(i), len = chunks.length(i);
    float* chunk = x + begin;
    const uint8_t* p = stream + begin / 8 * bytes;
    size_t j = 0;
    for (; j + 16 <= len; j += 16, p += 2 * bytes) {
      const __m512i codes = load16<kCodeBits>(p, bytes, low_bits, p + bytes + 8 <= stream_end);
      // qsgd_value's saturation: min(cap, m) is m where m is NaN (vminps returns its second operand).
      const __m512 magnitude = _mm512_min_ps(
          caps, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_and_si512(codes, level_mask)), units));
      _mm512_storeu_ps(chunk + j, _mm512_mask_xor_ps(magnitude, _mm512_test_epi32_mask(codes, sign_bit),
                                                     magnitude, flip));
    }
    // The last elements (fewer than 16), one at a time: the code at stream bit (begin + j) b.
    for (; j < len; ++j) {
      const size_t bit = (begin + j) * bytes;
      uint32_t window = stream[bit / 8];
      if (bit % 8 + bytes > 8) window |= static_cast<uint32_t>(stream[bit / 8 + 1]) << 8;
      const uint32_t code = (window >> (bit % 8)) & ((1u << code_bits) - 1u);
      chunk[j] = qsgd_value(code, unit, cap, level_bits);
    }
  }
}

}  // namespace

BAGUA_AVX512 void qsgd_decode_avx512(const uint8_t* y, size_t n, size_t chunk_size, uint32_t levels,
                                     float* x) {
  switch (std::bit_width(levels) + 1) {
    case 4:
      return decode_chunks<4>(y, n, chunk_size, levels, x);
    case 8:
      return decode_chunks<8>(y, n, chunk_size, levels, x);
    default:
      return decode_chunks<0>(y, n, chunk_size, levels, x);
  }
}

BAGUA_AVX512 void pack_codes_avx512(const uint32_t* codes, size_t count, int code_bits, uint8_t* stream,
                                    const uint8_t* stream_end) {
  const uint64_t low_bits = 0x0101010101010101ull * ((1u << code_bits) - 1u);
  const auto bytes = static_cast<size_t>(code_bits);
  for (size_t c = 0; c + 16 <= count; c += 16) {
    const __m128i narrow = _mm512_cvtepi32_epi8(_mm512_loadu_si512(codes + c));
    for (int half = 0; half < 2; ++half) {
      const auto word =
          static_cast<uint64_t>(half ? _mm_extract_epi64(narrow, 1) : _mm_cvtsi128_si64(narrow));
      const uint64_t packed = _pext_u64(word, low_bits);
      if (stream + 8 <= stream_end)  // an 8-byte store (the next block overwrites the excess)
        std::memcpy(stream, &packed, 8);
      else
        std::memcpy(stream, &packed, bytes);
      stream += bytes;
    }
  }
  if (count % 16) {  // the last block of 8
    uint64_t word = 0;
    for (int l = 0; l < 8; ++l)
      word |= static_cast<uint64_t>(codes[count - 8 + static_cast<size_t>(l)]) << (l * code_bits);
    std::memcpy(stream, &word, stream + 8 <= stream_end ? 8 : bytes);
  }
}

}  // namespace bagua::compress_kernels::x86

#endif
