// libFuzzer target: every compressor of core/compress (identity, minmax_uint8, sign, topk, randomk,
// fp16, bf16, qsgd at any number of levels), bare or wrapped in error feedback, on arbitrary float
// arrays and arbitrary configurations, through encode then decode. Checked on every input:
//   - the configuration: the factory (compressor_factory) builds it, or throws a ConfigError of one
//     line (a zero or negative chunk size, a ratio outside (0, 1], levels outside [1, 65535]);
//   - sizes: the encoding has exactly encoded_bytes(n) bytes (Compressor's contract; the compressors
//     check it) and nothing is written past either buffer (AddressSanitizer);
//   - the encoding and the decoding are the scalar reference's (core/compress/reference.h, or the
//     layout in the compressor's header where it has no reference function), bit for bit, and so is
//     the decoding of arbitrary bytes; with error feedback the residual is corrected - D(c)
//     (error_feedback.h);
//   - the bounds each compressor's header guarantees (check_bounds below);
//   - at every instruction-set level the build has (compress_kernels::Isa, up to the CPU's), the
//     vectorised kernels give the reference's bytes and floats bit for bit: encode, decode (of the
//     encoding and of arbitrary bytes), add_scaled and the fused error-feedback steps, on aligned and
//     misaligned pointers;
//   - no undefined behaviour (the fuzz preset builds with UndefinedBehaviorSanitizer, float casts
//     that overflow included).
// Under clang (the fuzz preset) the build has only the baseline level (kernels_x86.h is GCC-only);
// tests/fuzz/compress_replay_test.cc runs this very function on the seeds and on random inputs in the
// default (GCC) build, whose levels are baseline, AVX2 and, where the CPU has it, AVX-512.
//
// An input (all integers little-endian):
//   byte 0        the compressor: kNames[byte % 8]
//   byte 1        bit 0: error feedback; bit 1: randomk's `unbiased`; bits 2-3: encodes less one (1 to
//                 4 steps: error feedback's residual, QSGD's and random-k's step counter move);
//                 bits 4-5: the shape of the values (Shape)
//   byte 2        the shape's exponent
//   byte 3        bit 0: the Compressor's buffers one float (one byte) off their alignment
//   bytes 4-7     p: chunk_size (minmax_uint8, sign, qsgd) = p % 1024 where p's top bit is clear,
//                 p & 0x7FFFFFFF where it is set, -1 for 0xFFFFFFFF; ratio (topk, randomk) = p / 2^31
//   bytes 8-11    qsgd's levels, the low 17 bits (0 and above 65535 are rejected)
//   bytes 12-15   seed (qsgd, randomk)
//   bytes 16-     the values, 4 bytes each (at most kMaxElements), reshaped by Shape
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/compress/cast.h"
#include "core/compress/common.h"
#include "core/compress/compressor.h"
#include "core/compress/error_feedback.h"
#include "core/compress/kernels.h"
#include "core/compress/minmax_uint8.h"
#include "core/compress/qsgd.h"
#include "core/compress/randomk.h"
#include "core/compress/reference.h"
#include "core/compress/topk.h"

namespace {

using namespace bagua;
using namespace bagua::compress_detail;
namespace fast = bagua::compress_kernels;
namespace ref = bagua::compress_reference;

enum class Kind { kIdentity, kMinMax, kSign, kTopK, kRandomK, kFp16, kBf16, kQsgd };
const char* const kNames[] = {"identity", "minmax_uint8", "sign", "topk",
                              "randomk",  "fp16",         "bf16", "qsgd"};

constexpr size_t kHeader = 16;
// 16384 elements: every code path (chunks of any length, the vector loops and their tails, QSGD's
// chunk-by-chunk encoder) at a fuzzing speed; larger arrays repeat the same loops.
constexpr size_t kMaxElements = 16384;

// How the value bytes become floats:
//   kRaw     the bits as they are: every float, NaNs (quiet, signalling, any payload), infinities,
//            subnormals, zeros of either sign
//   kTiny    the significand and sign of the bits at 2^-(exponent % 150): tiny norms (QSGD's chunks
//            whose s / norm overflows) and subnormals
//   kGrid    the low byte as a signed integer times 2^(exponent % 64 - 32) (0x80 as -0): many equal
//            values and zeros, chunks whose min or max is a zero
//   kFinite  the bits with a NaN's or infinity's exponent lowered: finite values of every exponent
enum class Shape { kRaw, kTiny, kGrid, kFinite };

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "compress fuzz: %s\n", what.c_str());
  std::abort();
}

uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

uint32_t bits(float f) {
  return std::bit_cast<uint32_t>(f);
}

std::vector<float> values(const uint8_t* p, size_t n, Shape shape, int exponent) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t b = load_u32(p + 4 * i);
    switch (shape) {
      case Shape::kRaw:
        x[i] = std::bit_cast<float>(b);
        break;
      case Shape::kTiny: {
        const float significand = std::bit_cast<float>((b & 0x807FFFFFu) | 0x3F800000u);  // +-[1, 2)
        x[i] = std::ldexp(significand, -(exponent % 150));
        break;
      }
      case Shape::kGrid:
        x[i] = (b & 0xFF) == 0x80
                   ? -0.0f
                   : std::ldexp(static_cast<float>(static_cast<int8_t>(b & 0xFF)), exponent % 64 - 32);
        break;
      case Shape::kFinite:
        x[i] = std::bit_cast<float>((b & 0x7F800000u) == 0x7F800000u ? b & 0xBFFFFFFFu : b);
        break;
    }
  }
  return x;
}

// The configuration an input names, as parameters of the compressor's schema.
struct Config {
  Kind kind;
  bool error_feedback;
  bool unbiased;
  int steps;
  bool misaligned;
  int64_t chunk_size;
  double ratio;
  int64_t levels;
  int64_t seed;

  Params params() const {
    Params p;
    p.set("chunk_size", chunk_size);
    p.set("ratio", ratio);
    p.set("levels", levels);
    p.set("seed", seed);
    p.set("unbiased", unbiased);
    return p;
  }
  std::string describe(size_t n) const {
    return std::string(kNames[static_cast<int>(kind)]) + (error_feedback ? " (error feedback)" : "") +
           " n=" + std::to_string(n) + " chunk_size=" + std::to_string(chunk_size) +
           " ratio=" + std::to_string(ratio) + " levels=" + std::to_string(levels) +
           " seed=" + std::to_string(seed);
  }
  size_t chunk() const { return static_cast<size_t>(chunk_size); }
  uint32_t s() const { return static_cast<uint32_t>(levels); }
  uint64_t rng_seed() const { return static_cast<uint64_t>(seed); }
};

Config parse_config(const uint8_t* h) {
  Config c{};
  c.kind = static_cast<Kind>(h[0] % 8);
  c.error_feedback = h[1] & 1;
  c.unbiased = h[1] & 2;
  c.steps = 1 + ((h[1] >> 2) & 3);
  c.misaligned = h[3] & 1;
  const uint32_t p = load_u32(h + 4);
  c.chunk_size = p == 0xFFFFFFFFu    ? -1
                 : (p & 0x80000000u) ? int64_t{p & 0x7FFFFFFFu}
                                     : int64_t{p % 1024};
  c.ratio = static_cast<double>(p) * 0x1p-31;
  c.levels = load_u32(h + 8) & 0x1FFFF;
  c.seed = load_u32(h + 12);
  return c;
}

// The first byte where a and b differ, or -1.
long first_difference(const void* a, const void* b, size_t bytes) {
  const auto* pa = static_cast<const uint8_t*>(a);
  const auto* pb = static_cast<const uint8_t*>(b);
  for (size_t i = 0; i < bytes; ++i)
    if (pa[i] != pb[i]) return static_cast<long>(i);
  return -1;
}

void expect_same_bytes(const void* a, const void* b, size_t bytes, const std::string& what) {
  const long at = first_difference(a, b, bytes);
  if (at >= 0)
    fail(what + ": first differing byte " + std::to_string(at) + ": " +
         std::to_string(static_cast<const uint8_t*>(a)[at]) + " vs " +
         std::to_string(static_cast<const uint8_t*>(b)[at]));
}

void expect_same_floats(const float* a, const float* b, size_t n, const std::string& what) {
  for (size_t i = 0; i < n; ++i)
    if (bits(a[i]) != bits(b[i]))
      fail(what + ": element " + std::to_string(i) + ": bits " + std::to_string(bits(a[i])) + " vs " +
           std::to_string(bits(b[i])));
}

// a + (-1) d against the reference's, where both a and d may be NaN: there IEEE 754 (6.2.3) leaves
// the result's sign and payload to either operand (and GCC may swap a commutative +), so only NaN-ness
// is required; elsewhere the bits.
void expect_same_residual(const float* got, const float* corrected, const float* decoded, size_t n,
                          const std::string& what) {
  std::vector<float> expected(n);
  ref::add_scaled(corrected, -1.0f, decoded, n, expected.data());
  for (size_t i = 0; i < n; ++i) {
    const bool both_nan = std::isnan(corrected[i]) && std::isnan(decoded[i]);
    if (both_nan ? !std::isnan(got[i]) : bits(got[i]) != bits(expected[i]))
      fail(what + ": residual element " + std::to_string(i) + ": bits " + std::to_string(bits(got[i])) +
           " vs " + std::to_string(bits(expected[i])));
  }
}

// ---- The reference: reference.h's functions, or the layout of the compressor's header ----------

std::vector<uint64_t> randomk_indices(const Config& c, uint64_t step, size_t n) {
  return RandomKCompressor(c.ratio, c.rng_seed(), c.unbiased).indices(step, n);
}

void reference_encode(const Config& c, const std::vector<float>& x, uint64_t step, uint8_t* y) {
  const size_t n = x.size();
  if (n == 0) return;
  switch (c.kind) {
    case Kind::kIdentity:
      std::memcpy(y, x.data(), 4 * n);
      break;
    case Kind::kMinMax:
      ref::minmax_uint8_encode(x.data(), n, c.chunk(), y);
      break;
    case Kind::kSign:
      ref::sign_encode(x.data(), n, c.chunk(), y);
      break;
    case Kind::kTopK: {
      std::vector<uint32_t> scratch;
      ref::topk_encode(x.data(), n, sparse_k(c.ratio, n), y, scratch);
      break;
    }
    case Kind::kRandomK: {  // randomk.h: the step, then the values at the step's indices
      store_u64(y, step);
      const std::vector<uint64_t> idx = randomk_indices(c, step, n);
      for (size_t j = 0; j < idx.size(); ++j)
        store_f32(y + 8 + 4 * j, x[idx[j]]);
      break;
    }
    case Kind::kFp16:
      ref::fp16_encode(x.data(), n, y);
      break;
    case Kind::kBf16:
      ref::bf16_encode(x.data(), n, y);
      break;
    case Kind::kQsgd:
      ref::qsgd_encode(x.data(), n, c.chunk(), c.s(), c.rng_seed(), step, y);
      break;
  }
}

void reference_decode(const Config& c, const uint8_t* y, size_t n, float* x) {
  if (n == 0) return;
  switch (c.kind) {
    case Kind::kIdentity:
      std::memcpy(x, y, 4 * n);
      break;
    case Kind::kMinMax:
      ref::minmax_uint8_decode(y, n, c.chunk(), x);
      break;
    case Kind::kSign:
      ref::sign_decode(y, n, c.chunk(), x);
      break;
    case Kind::kTopK: {  // topk.h: k indices, then k values; zero elsewhere
      const size_t k = sparse_k(c.ratio, n);
      std::fill_n(x, n, 0.0f);
      for (size_t j = 0; j < k; ++j)
        x[load_u32(y + 4 * j)] = load_f32(y + 4 * k + 4 * j);
      break;
    }
    case Kind::kRandomK: {  // randomk.h: the values at the step's indices (times n / k if unbiased)
      const std::vector<uint64_t> idx = randomk_indices(c, load_u64(y), n);
      const float factor =
          c.unbiased ? static_cast<float>(static_cast<double>(n) / static_cast<double>(idx.size()))
                     : 1.0f;
      std::fill_n(x, n, 0.0f);
      for (size_t j = 0; j < idx.size(); ++j)
        x[idx[j]] = load_f32(y + 8 + 4 * j) * factor;
      break;
    }
    case Kind::kFp16:
      ref::fp16_decode(y, n, x);
      break;
    case Kind::kBf16:
      ref::bf16_decode(y, n, x);
      break;
    case Kind::kQsgd:
      ref::qsgd_decode(y, n, c.chunk(), c.s(), x);
      break;
  }
}

// Whether any byte string of the right length is an encoding (top-k's indices must lie in [0, n):
// its decoder checks them, an InternalError, as for any corrupted message).
bool decodes_any_bytes(Kind kind) {
  return kind != Kind::kTopK;
}

// ---- The bounds each compressor's header guarantees --------------------------------------------

// |x| with a NaN counted as the largest magnitude (topk.h's order).
uint32_t magnitude_key(float v) {
  const uint32_t b = bits(v) & 0x7FFFFFFFu;
  return b > 0x7F800000u ? 0x7F800000u : b;
}

void check_bounds(const Config& c, const std::vector<float>& x, const uint8_t* y, const float* d,
                  const std::string& what) {
  const size_t n = x.size();
  auto bad = [&](size_t i, const std::string& why) {
    fail(what + ": element " + std::to_string(i) + " (input bits " + std::to_string(bits(x[i])) +
         ", decoded bits " + std::to_string(bits(d[i])) + "): " + why);
  };
  switch (c.kind) {
    case Kind::kIdentity:
      expect_same_floats(d, x.data(), n, what + ": identity");
      break;
    case Kind::kFp16:
    case Kind::kBf16: {
      // Round to nearest of a 16-bit format (cast.h): within half an ulp, 2^-11 (fp16) or 2^-8
      // (bf16) relative, or half the smallest subnormal (2^-25, 2^-134); infinity only from at
      // least 65520 (fp16) or (2 - 2^-8) 2^127 (bf16); the sign kept; NaN stays NaN.
      const bool half = c.kind == Kind::kFp16;
      const float relative = half ? 0x1p-11f : 0x1p-8f;
      const float absolute = half ? 0x1p-25f : 0x1p-134f;
      const float overflow = half ? 65520.0f : 0x1.ffp127f;
      for (size_t i = 0; i < n; ++i) {
        if (std::isnan(x[i]) != std::isnan(d[i])) bad(i, "NaN-ness changed");
        if (std::isnan(x[i])) continue;
        if (std::signbit(x[i]) != std::signbit(d[i])) bad(i, "sign changed");
        if (std::isinf(d[i])) {
          if (std::fabs(x[i]) < overflow) bad(i, "became infinite below the overflow threshold");
          continue;
        }
        if (std::fabs(d[i] - x[i]) > std::max(std::fabs(x[i]) * relative, absolute))
          bad(i, "more than half an ulp away");
      }
      break;
    }
    case Kind::kMinMax: {
      // minmax_uint8.h: the header holds the chunk's min and max. Where every value is finite, the
      // scale finite and positive and both bounds below 2^22 in magnitude (so that the levels, their
      // differences and q + lower_bound are exact integers, and x scale is rounded by at most a
      // quarter), an element's level L = rint(x scale) is within 0.5 + |x scale| 2^-24 of x scale and
      // at least lower_bound - 1 (upper_bound - L is at most (max - min) scale + 1.5 < 257, the
      // rounded scale making (max - min) scale at most 255 (1 + 2^-23)); a level below lower_bound
      // saturates to it, one step more. So every element decodes within 1.5 / scale + |x| 2^-24 of
      // x, plus the division's rounding |x'| 2^-24: the bound below, with a margin of 2.
      const Chunking chunks(n, c.chunk());
      const size_t stride = MinMaxUint8Compressor::kHeaderBytes +
                            align_up(chunks.chunk, MinMaxUint8Compressor::kAlignBytes);
      for (size_t k = 0; k < chunks.count; ++k) {
        const uint8_t* record = y + k * stride;
        const float min = load_f32(record), max = load_f32(record + 4);
        const size_t begin = chunks.begin(k), len = chunks.length(k);
        bool finite = true;
        for (size_t i = begin; i < begin + len; ++i)
          finite = finite && std::isfinite(x[i]);
        if (!finite) continue;
        const auto [lo, hi] = std::minmax_element(x.begin() + static_cast<long>(begin),
                                                  x.begin() + static_cast<long>(begin + len));
        if (!(min == *lo && max == *hi)) bad(begin, "the header is not the chunk's min and max");
        const MinMaxUint8Compressor::Levels l = MinMaxUint8Compressor::levels(min, max);
        if (!(std::isfinite(l.scale) && l.scale > 0.0f && std::fabs(l.upper_bound) < 0x1p22f &&
              std::fabs(l.lower_bound) < 0x1p22f))
          continue;
        for (size_t i = begin; i < begin + len; ++i) {
          const double error = std::fabs(static_cast<double>(d[i]) - x[i]);
          const double bound =
              1.5 / l.scale + (std::fabs(static_cast<double>(x[i])) + std::fabs(d[i])) * 0x1p-23;
          if (!(error <= bound)) bad(i, "more than 1.5 steps away");
        }
      }
      break;
    }
    case Kind::kSign: {
      // sign.h: +scale where x >= 0, else -scale (NaN too); the scale, the mean of |x|, is at most the
      // largest |x| of a chunk of finite values.
      const Chunking chunks(n, c.chunk());
      for (size_t k = 0; k < chunks.count; ++k) {
        const float scale = load_f32(y + 4 * k);
        const size_t begin = chunks.begin(k), len = chunks.length(k);
        float largest = 0.0f;
        bool finite = true;
        for (size_t i = begin; i < begin + len; ++i) {
          finite = finite && std::isfinite(x[i]);
          largest = std::max(largest, std::fabs(x[i]));
        }
        if (finite && !(scale >= 0.0f && scale <= largest)) bad(begin, "scale outside [0, max |x|]");
        for (size_t i = begin; i < begin + len; ++i)
          if (bits(d[i]) != bits(x[i] >= 0.0f ? scale : -scale)) bad(i, "not +-scale by the sign");
      }
      break;
    }
    case Kind::kTopK: {
      // topk.h: k = sparse_k(ratio, n) strictly increasing indices below n, their values as they
      // were; every kept magnitude at least every dropped one (NaN the largest), the lower index
      // winning a tie; zero elsewhere.
      const size_t k = sparse_k(c.ratio, n);
      std::vector<bool> kept(n, false);
      uint32_t least = 0xFFFFFFFFu;
      size_t last_least = 0;
      for (size_t j = 0; j < k; ++j) {
        const uint32_t index = load_u32(y + 4 * j);
        if (index >= n || (j > 0 && index <= load_u32(y + 4 * (j - 1))))
          fail(what + ": index " + std::to_string(index) + " at " + std::to_string(j) +
               " out of range or order");
        kept[index] = true;
        if (bits(load_f32(y + 4 * k + 4 * j)) != bits(x[index])) bad(index, "kept value changed");
        if (bits(d[index]) != bits(x[index])) bad(index, "decoded value is not the kept one");
        const uint32_t key = magnitude_key(x[index]);
        if (key <= least) {
          least = key;
          last_least = index;
        }
      }
      for (size_t i = 0; i < n; ++i) {
        if (kept[i]) continue;
        if (bits(d[i]) != 0) bad(i, "dropped element not decoded as +0");
        const uint32_t key = magnitude_key(x[i]);
        if (key > least || (key == least && i < last_least)) bad(i, "dropped above a kept one");
      }
      break;
    }
    case Kind::kRandomK: {
      // randomk.h: k = sparse_k(ratio, n) values at distinct indices, zero elsewhere.
      size_t nonzero = 0;
      for (size_t i = 0; i < n; ++i)
        nonzero += bits(d[i]) != 0;
      if (nonzero > sparse_k(c.ratio, n)) fail(what + ": more than k elements decoded");
      break;
    }
    case Kind::kQsgd: {
      // qsgd.h: a non-finite element, or every element of a chunk whose norm is zero or not finite,
      // is level 0, which decodes as +-0 f32(norm / s) (so NaN in a chunk whose norm is not finite:
      // one infinite or NaN element makes its whole chunk decode as NaN); otherwise x' = +-l f32(norm / s) (its magnitude saturated at FLT_MAX) with l in [0, s] and x's sign, within one
      // level step f32(norm / s) of x (stochastic rounding to a neighbouring level) plus the float
      // roundings (2^-20 relative, and l 2^-149 where norm / s is subnormal). A chunk's norm is at
      // least each of its |x| when every one is finite.
      const Chunking chunks(n, c.chunk());
      const float s = static_cast<float>(c.s());
      for (size_t k = 0; k < chunks.count; ++k) {
        const float norm = load_f32(y + 4 * k);
        const size_t begin = chunks.begin(k), len = chunks.length(k);
        bool finite = true;
        for (size_t i = begin; i < begin + len; ++i)
          finite = finite && std::isfinite(x[i]);
        const float step = norm / s;
        for (size_t i = begin; i < begin + len; ++i) {
          if (finite && !(norm >= std::fabs(x[i]))) bad(i, "the chunk's norm below |x|");
          if (!std::isfinite(x[i]) || !(norm > 0.0f) || !std::isfinite(norm)) {
            // Level 0, decoded as +-0 f32(norm / s): NaN where that is not finite.
            if (std::isfinite(step) ? bits(d[i]) != 0 && bits(d[i]) != 0x80000000u : !std::isnan(d[i]))
              bad(i, "level 0 should decode as +-0 (NaN for a non-finite norm)");
            continue;
          }
          if (d[i] != 0.0f && std::signbit(d[i]) != std::signbit(x[i])) bad(i, "sign changed");
          const double error = std::fabs(static_cast<double>(d[i]) - x[i]);
          const double bound = step * (1.0 + 0x1p-20) + std::fabs(static_cast<double>(x[i])) * 0x1p-20 +
                               (s + 1.0) * 0x1p-149;
          if (!(error <= bound)) bad(i, "more than one level step away");
        }
      }
      break;
    }
  }
}

// ---- Every level's kernels against the reference ------------------------------------------------

// A copy of v one element past the start of its storage (never 8-byte aligned, hence never a vector's
// alignment).
template <class T>
struct Shifted {
  std::vector<T> storage;
  explicit Shifted(const std::vector<T>& v, size_t extra = 0) : storage(v.size() + 1 + extra) {
    std::copy(v.begin(), v.end(), storage.begin() + 1);
  }
  T* data() { return storage.data() + 1; }
};

// The fast kernel and the reference encode x alike, aligned and misaligned.
template <class Fast>
void expect_kernel_encoding(const Config& c, const std::vector<float>& x, uint64_t step, size_t bytes,
                            Fast fast_encode, const std::string& what) {
  std::vector<uint8_t> expected(bytes + 1, 0xAB), got(bytes + 1, 0xAB);
  reference_encode(c, x, step, expected.data());
  fast_encode(x.data(), got.data());
  expect_same_bytes(got.data(), expected.data(), bytes + 1, what + " encode");
  Shifted<float> in(x);
  std::vector<uint8_t> shifted(bytes + 2, 0xAB);
  fast_encode(in.data(), shifted.data() + 1);
  expect_same_bytes(shifted.data() + 1, expected.data(), bytes + 1, what + " encode (misaligned)");
}

template <class Fast>
void expect_kernel_decoding(const Config& c, const std::vector<uint8_t>& y, size_t n, Fast fast_decode,
                            const std::string& what) {
  std::vector<float> expected(n + 1, -7.0f), got(n + 1, -7.0f);
  reference_decode(c, y.data(), n, expected.data());
  fast_decode(y.data(), got.data());
  expect_same_floats(got.data(), expected.data(), n + 1, what + " decode");
  Shifted<uint8_t> in(y);
  Shifted<float> out(std::vector<float>(n + 1, -7.0f));
  fast_decode(in.data(), out.data());
  expect_same_floats(out.data(), expected.data(), n + 1, what + " decode (misaligned)");
}

// Error feedback's fused steps (kernels.h) against the reference's add_scaled, encode, decode,
// add_scaled: from corrected (encode_residual) and from x and e (encode_feedback).
template <class Residual, class Feedback>
void expect_kernel_feedback(const Config& c, const std::vector<float>& x, const std::vector<float>& e,
                            size_t bytes, Residual fused_residual, Feedback fused_feedback,
                            const std::string& what) {
  const size_t n = x.size();
  std::vector<float> corrected(n), decoded(n);
  ref::add_scaled(x.data(), 1.0f, e.data(), n, corrected.data());
  std::vector<uint8_t> expected(bytes + 1, 0xAB), got(bytes + 1, 0xAB);
  reference_encode(c, corrected, 0, expected.data());
  reference_decode(c, expected.data(), n, decoded.data());
  std::vector<float> residual = corrected;
  fused_residual(residual.data(), got.data());
  expect_same_bytes(got.data(), expected.data(), bytes + 1, what + " encode_residual");
  expect_same_residual(residual.data(), corrected.data(), decoded.data(), n, what + " encode_residual");
  std::fill(got.begin(), got.end(), 0xAB);
  residual = e;
  fused_feedback(x.data(), residual.data(), got.data());
  expect_same_bytes(got.data(), expected.data(), bytes + 1, what + " encode_feedback");
  expect_same_residual(residual.data(), corrected.data(), decoded.data(), n, what + " encode_feedback");
}

// At one level (the one in use): the kernels of c's compressor on x (encoded at `step`), on the
// arbitrary bytes `noise` (encoded_bytes(n) of them) and, for the compressors with fused forms, error
// feedback's step from x and the residual e.
void check_kernels(const Config& c, const std::vector<float>& x, const std::vector<float>& e,
                   uint64_t step, const std::vector<uint8_t>& noise, const std::string& what) {
  const size_t n = x.size(), chunk = c.chunk(), bytes = noise.size();
  const uint32_t s = c.s();
  const uint64_t seed = c.rng_seed();
  const size_t k = sparse_k(c.ratio, n);
  std::vector<float> sum(n), expected_sum(n);
  ref::add_scaled(x.data(), 1.0f, e.data(), n, expected_sum.data());
  fast::add_scaled(x.data(), 1.0f, e.data(), n, sum.data());
  expect_same_floats(sum.data(), expected_sum.data(), n, what + " add_scaled");
  switch (c.kind) {
    case Kind::kMinMax:
      expect_kernel_encoding(
          c, x, step, bytes,
          [&](const float* in, uint8_t* out) { fast::minmax_uint8_encode(in, n, chunk, out); }, what);
      expect_kernel_decoding(
          c, noise, n,
          [&](const uint8_t* in, float* out) { fast::minmax_uint8_decode(in, n, chunk, out); },
          what + " (arbitrary bytes)");
      expect_kernel_feedback(
          c, x, e, bytes,
          [&](float* r, uint8_t* out) { fast::minmax_uint8_encode_residual(r, n, chunk, -1.0f, out); },
          [&](const float* in, float* r, uint8_t* out) {
            fast::minmax_uint8_encode_feedback(in, 1.0f, r, n, chunk, -1.0f, out);
          },
          what);
      break;
    case Kind::kSign:
      expect_kernel_encoding(
          c, x, step, bytes,
          [&](const float* in, uint8_t* out) { fast::sign_encode(in, n, chunk, out); }, what);
      expect_kernel_decoding(
          c, noise, n, [&](const uint8_t* in, float* out) { fast::sign_decode(in, n, chunk, out); },
          what + " (arbitrary bytes)");
      expect_kernel_feedback(
          c, x, e, bytes,
          [&](float* r, uint8_t* out) { fast::sign_encode_residual(r, n, chunk, -1.0f, out); },
          [&](const float* in, float* r, uint8_t* out) {
            fast::sign_encode_feedback(in, 1.0f, r, n, chunk, -1.0f, out);
          },
          what);
      break;
    case Kind::kTopK: {
      std::vector<uint32_t> scratch;
      expect_kernel_encoding(
          c, x, step, bytes,
          [&](const float* in, uint8_t* out) { fast::topk_encode(in, n, k, out, scratch); }, what);
      expect_kernel_feedback(
          c, x, e, bytes,
          [&](float* r, uint8_t* out) { fast::topk_encode_residual(r, n, k, -1.0f, out, scratch); },
          [&](const float* in, float* r, uint8_t* out) {
            fast::topk_encode_feedback(in, 1.0f, r, n, k, -1.0f, out, scratch);
          },
          what);
      break;
    }
    case Kind::kFp16:
      expect_kernel_encoding(
          c, x, step, bytes, [&](const float* in, uint8_t* out) { fast::fp16_encode(in, n, out); },
          what);
      expect_kernel_decoding(
          c, noise, n, [&](const uint8_t* in, float* out) { fast::fp16_decode(in, n, out); },
          what + " (arbitrary bytes)");
      break;
    case Kind::kBf16:
      expect_kernel_encoding(
          c, x, step, bytes, [&](const float* in, uint8_t* out) { fast::bf16_encode(in, n, out); },
          what);
      expect_kernel_decoding(
          c, noise, n, [&](const uint8_t* in, float* out) { fast::bf16_decode(in, n, out); },
          what + " (arbitrary bytes)");
      break;
    case Kind::kQsgd: {
      expect_kernel_encoding(
          c, x, step, bytes,
          [&](const float* in, uint8_t* out) { fast::qsgd_encode(in, n, chunk, s, seed, step, out); },
          what);
      expect_kernel_decoding(
          c, noise, n, [&](const uint8_t* in, float* out) { fast::qsgd_decode(in, n, chunk, s, out); },
          what + " (arbitrary bytes)");
      std::vector<uint8_t> encoded(bytes);
      reference_encode(c, x, step, encoded.data());
      expect_kernel_decoding(
          c, encoded, n,
          [&](const uint8_t* in, float* out) { fast::qsgd_decode(in, n, chunk, s, out); }, what);
      break;
    }
    case Kind::kIdentity:
    case Kind::kRandomK:
      break;  // no kernels of their own (copies and gathers)
  }
  if (c.kind == Kind::kMinMax || c.kind == Kind::kSign || c.kind == Kind::kFp16 ||
      c.kind == Kind::kBf16) {
    std::vector<uint8_t> encoded(bytes);
    reference_encode(c, x, step, encoded.data());
    std::vector<float> decoded(n + 1, -7.0f);
    reference_decode(c, encoded.data(), n, decoded.data());
    auto fast_decode = [&](const uint8_t* in, float* out) {
      switch (c.kind) {
        case Kind::kMinMax:
          return fast::minmax_uint8_decode(in, n, chunk, out);
        case Kind::kSign:
          return fast::sign_decode(in, n, chunk, out);
        case Kind::kFp16:
          return fast::fp16_decode(in, n, out);
        default:
          return fast::bf16_decode(in, n, out);
      }
    };
    expect_kernel_decoding(c, encoded, n, fast_decode, what);
  }
}

// Runs body once per instruction-set level the build and the CPU have, that level's kernels in use,
// then restores the highest.
template <class Body>
void at_every_level(Body body) {
  for (const fast::Isa level : {fast::Isa::kBaseline, fast::Isa::kAvx2, fast::Isa::kAvx512}) {
    if (level > fast::cpu_isa()) continue;
    if (fast::limit_isa(level) != level) fail("cannot select level " + fast::to_string(level));
    body(level);
  }
  fast::limit_isa(fast::cpu_isa());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < kHeader) return 0;
  static const CompressorRegistry registry = [] {
    CompressorRegistry r("compressor");
    register_compressors(r);
    return r;
  }();
  const Config c = parse_config(data);
  const size_t n = std::min((size - kHeader) / 4, kMaxElements);
  const std::vector<float> input =
      values(data + kHeader, n, static_cast<Shape>((data[1] >> 4) & 3), data[2]);
  const std::string what = c.describe(n);

  std::unique_ptr<Compressor> compressor;
  try {
    compressor =
        compressor_factory(registry, kNames[static_cast<int>(c.kind)], c.params(), c.error_feedback)();
  } catch (const ConfigError& err) {
    const std::string m = err.what();
    if (m.empty() || m.find('\n') != std::string::npos || m.size() > 300)
      fail("config error not one line of readable length: " + m.substr(0, 300));
    return 0;
  }
  const size_t bytes = static_cast<size_t>(compressor->encoded_bytes(n).count());
  // Arbitrary bytes of an encoding's length, from the input's value bytes.
  std::vector<uint8_t> noise(bytes);
  for (size_t i = 0; i < bytes; ++i)
    noise[i] = static_cast<uint8_t>(data[kHeader + i % (size - kHeader)] ^ (i * 0x9Du));

  const size_t shift = c.misaligned ? 1 : 0;
  std::vector<float> residual(n, 0.0f);  // error feedback's e before this step (zero at first)
  for (int t = 0; t < c.steps; ++t) {
    const std::vector<float> e_before = residual;
    const auto step = static_cast<uint64_t>(t);
    const std::string at = what + " step " + std::to_string(t);
    // This step's input: no element NaN where the residual is (so that x + e is defined bit for bit:
    // expect_same_residual).
    std::vector<float> x = input;
    for (size_t i = 0; i < n; ++i)
      if (std::isnan(x[i]) && std::isnan(residual[i])) x[i] = 0.5f;
    std::vector<float> corrected(n);
    ref::add_scaled(x.data(), 1.0f, residual.data(), n, corrected.data());
    if (!c.error_feedback) corrected = x;

    std::vector<float> x_storage(n + 1);
    std::copy(x.begin(), x.end(), x_storage.begin() + static_cast<long>(shift));
    // One guard element after each output (and one before, when misaligned).
    std::vector<uint8_t> encoding(bytes + 2, 0xAB);
    std::vector<float> decoded(n + 2, -7.0f);
    const auto x_view = BufferView::of(std::span<float>(x_storage.data() + shift, n));
    const auto y_view = BufferView::of(std::span<uint8_t>(encoding.data() + shift, bytes));
    const auto d_view = BufferView::of(std::span<float>(decoded.data() + shift, n));
    compressor->encode(x_view, y_view);
    compressor->decode(y_view, d_view);
    if (shift) {
      if (encoding.front() != 0xAB || bits(decoded.front()) != bits(-7.0f))
        fail(at + ": wrote before its output");
      encoding.erase(encoding.begin());
      decoded.erase(decoded.begin());
    }
    if (encoding[bytes] != 0xAB || bits(decoded[n]) != bits(-7.0f))
      fail(at + ": wrote past its output");

    std::vector<uint8_t> expected(bytes);
    reference_encode(c, corrected, step, expected.data());
    expect_same_bytes(encoding.data(), expected.data(), bytes, at + ": the encoding");
    std::vector<float> expected_decoded(n);
    reference_decode(c, encoding.data(), n, expected_decoded.data());
    expect_same_floats(decoded.data(), expected_decoded.data(), n, at + ": the decoding");
    check_bounds(c, corrected, encoding.data(), decoded.data(), at);
    if (c.error_feedback) {
      const auto& ef = dynamic_cast<const ErrorFeedbackCompressor&>(*compressor);
      const std::span<float> e = ef.residual().as<float>();
      expect_same_residual(e.data(), corrected.data(), decoded.data(), n, at);
      residual.assign(e.begin(), e.end());
    }
    if (decodes_any_bytes(c.kind) && n > 0) {
      std::vector<float> got(n), want(n);
      compressor->decode(BufferView::of(std::span<uint8_t>(noise)),
                         BufferView::of(std::span<float>(got)));
      reference_decode(c, noise.data(), n, want.data());
      expect_same_floats(got.data(), want.data(), n, at + ": the decoding of arbitrary bytes");
    }
    if (n > 0)
      at_every_level([&](fast::Isa level) {
        check_kernels(c, x, e_before, step, noise, at + " isa " + fast::to_string(level));
      });
  }
  return 0;
}
