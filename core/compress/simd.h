// Portable vectors for the compressors' host kernels (core/compress/kernels.cc): GCC's vector
// extensions, eight 32-bit lanes (one AVX2 register, two SSE2 registers), and the multiversioning
// attribute that compiles a kernel once per instruction set and picks one at load time.
//
// Every lane operation is the IEEE operation the scalar reference (core/compress/reference.cc) does on
// one element, so a kernel's output is bit-identical to the reference's: +, -, *, / are correctly
// rounded per lane; comparisons give all-ones / zero masks; `c ? a : b` on vectors is a lane select
// (no branch, so trapping-math does not stop it); conversions are __builtin_convertvector, which
// converts lane by lane as a static_cast would. No clone enables FMA (neither "avx2" nor the x86-64
// baseline has it), so no a * b + c is ever contracted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// The vector helpers of the kernels are inline and never cross an ABI boundary: GCC's note that passing
// a 32-byte vector without AVX changes the calling convention does not apply to them.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace bagua::simd {

constexpr size_t kLanes = 8;

typedef float F32x8 __attribute__((vector_size(32)));
typedef double F64x4 __attribute__((vector_size(32)));
typedef int32_t I32x8 __attribute__((vector_size(32)));
typedef uint32_t U32x8 __attribute__((vector_size(32)));
typedef uint64_t U64x4 __attribute__((vector_size(32)));
typedef uint16_t U16x8 __attribute__((vector_size(16)));
typedef uint8_t U8x8 __attribute__((vector_size(8)));

// Unaligned loads and stores (memcpy compiles to one vector move).
template <class V, class T>
inline V load(const T* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class V, class T>
inline void store(T* p, const V& v) {
  std::memcpy(p, &v, sizeof v);
}

// Every lane t (as a copy, not by arithmetic: 0 + t would quiet a signalling NaN and turn -0 into +0).
template <class V, class T>
inline V splat(T t) {
  V v;
  for (size_t l = 0; l < sizeof(V) / sizeof(T); ++l)
    v[l] = t;
  return v;
}

template <class V, class B>
inline V bits_as(const B& b) {
  static_assert(sizeof(V) == sizeof(B));
  V v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

// Narrowing stores. GCC lowers __builtin_convertvector to narrower lanes one lane at a time, so these
// use SSE2's saturating packs (present on every x86-64; VEX-encoded in the AVX2 clone), exact here
// because the values already fit.

// 16 lanes of int32 (a then b), each saturated to [0, 255], as 16 bytes.
inline void store_bytes16(uint8_t* p, I32x8 a, I32x8 b) {
#if defined(__SSE2__)
  __m128i a_half[2], b_half[2];
  std::memcpy(a_half, &a, sizeof a);
  std::memcpy(b_half, &b, sizeof b);
  const __m128i words_a = _mm_packs_epi32(a_half[0], a_half[1]);
  const __m128i words_b = _mm_packs_epi32(b_half[0], b_half[1]);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm_packus_epi16(words_a, words_b));
#else
  a = a > 0 ? a : 0;
  a = a < 255 ? a : 255;
  b = b > 0 ? b : 0;
  b = b < 255 ? b : 255;
  store(p, __builtin_convertvector(a, U8x8));
  store(p + 8, __builtin_convertvector(b, U8x8));
#endif
}

// 8 lanes of uint32, each truncated to its low 16 bits, as 8 little-endian uint16.
inline void store_low16(uint8_t* p, U32x8 v) {
#if defined(__SSE2__)
  // Sign-extend the low 16 bits, so that the signed saturating pack keeps them unchanged.
  const I32x8 extended = bits_as<I32x8>(v << 16) >> 16;
  __m128i half[2];
  std::memcpy(half, &extended, sizeof extended);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm_packs_epi32(half[0], half[1]));
#else
  store(p, __builtin_convertvector(v, U16x8));
#endif
}

// The top bit of each lane of a mask (lane l -> bit l), as SSE2's movemask gives it.
inline int movemask8(I32x8 mask) {
#if defined(__SSE2__)
  __m128i half[2];
  std::memcpy(half, &mask, sizeof mask);
  return _mm_movemask_ps(_mm_castsi128_ps(half[0])) | (_mm_movemask_ps(_mm_castsi128_ps(half[1])) << 4);
#else
  int bits = 0;
  for (size_t l = 0; l < kLanes; ++l)
    bits |= (mask[l] < 0 ? 1 : 0) << l;
  return bits;
#endif
}

// 8 bytes as float lanes (through int32 lanes, which GCC widens in one instruction).
inline F32x8 bytes_to_f32(const uint8_t* p) {
  return __builtin_convertvector(__builtin_convertvector(load<U8x8>(p), I32x8), F32x8);
}

}  // namespace bagua::simd

// A kernel compiled for AVX2 and for the x86-64 baseline (SSE2), the better one chosen at load time by
// the CPU's features (GCC's target_clones, an ifunc): one binary runs on any x86-64. Elsewhere, one
// version for the build's target, as under ThreadSanitizer: GCC instruments the ifunc's resolver too,
// which the dynamic loader calls before TSan's runtime is initialised (the program crashes at load).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__ELF__) && \
    !defined(__SANITIZE_THREAD__)
#define BAGUA_MULTIVERSION __attribute__((target_clones("avx2", "default")))
#else
#define BAGUA_MULTIVERSION
#endif
