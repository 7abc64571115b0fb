// QSGD's (qsgd.h) per-element steps as the kernels compute them (kernels.cc, kernels_x86.cc): the
// draws of the generator as a counter, a chunk's certified norm, the code of one element and the value
// of one code, which the vector loops compute lane by lane and their scalar tails call. The reference
// (reference.cc) keeps its own copy: it is what the kernels are tested against.
//
// Terms (qsgd.h): s the levels, w = level_bits; a chunk's scale: its prescale (1, or 2^64 where
// s / norm overflows f32) and levels_per_unit = s / (norm prescale) (0 for a chunk whose norm is zero
// or not finite); r = (|x| prescale) levels_per_unit, the draw u uniform in [0, 1) on the grid of
// 2^-24; the level l = floor(r) + (u < r - floor(r) ? 1 : 0), at most s; the code l, with the sign
// (1 = negative, for l != 0) in bit w. The vector loops run chunks of prescale 1 only (multiplying by
// 1 is exact, so their r is |x| levels_per_unit); a chunk of prescale 2^64 is coded by qsgd_code.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "core/compress/common.h"

namespace bagua::compress_kernels {

// No product here is followed by an addition that a fused multiply-add could change: the files that
// include this one turn contraction off after their includes.
//
// SplitMix64 (common.h's Rng) is a counter: draw t (from 0) of a generator in state s0 mixes
// s0 + (t + 1) G. Its uniform() keeps the top 24 bits of the mix, and the mix's last step
// (z ^ (z >> 31)) leaves those unchanged, so the vector loops skip it.
constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;  // Rng::next's increment G
constexpr uint64_t kMix1 = 0xBF58476D1CE4E5B9ull;    // its multipliers
constexpr uint64_t kMix2 = 0x94D049BB133111EBull;

// The draw of element e of a stream whose generator starts in state s0: draw number e.
inline float qsgd_draw(uint64_t s0, size_t e) {
  compress_detail::Rng one(s0 + e * kGolden);
  return one.uniform();
}

// A chunk's norm f32(sqrt(sum of squares)), the reference's value, from `sum`, its sum of squares taken
// in another order (kernels.h: used where every sum within the error bound gives the same f32; else
// the chunk x[0, len) is summed as the reference sums it).
inline float qsgd_certified_norm(double sum, const float* x, size_t len) {
  if (std::isfinite(sum)) {
    const double delta = 4.0 * static_cast<double>(len + 2) * 0x1p-53;
    const auto lo = static_cast<float>(std::sqrt(sum * (1.0 - delta)));
    const auto hi = static_cast<float>(std::sqrt(sum * (1.0 + delta)));
    if (std::bit_cast<uint32_t>(lo) == std::bit_cast<uint32_t>(hi)) return lo;
  }
  double squares = 0;  // the reference's loop (each square exact: a fused multiply-add adds the same)
  for (size_t j = 0; j < len; ++j)
    squares += static_cast<double>(x[j]) * x[j];
  return static_cast<float>(std::sqrt(squares));
}

// The prescale of a chunk whose s / norm overflows (qsgd.h): norm >= 2^-149 (the least positive
// float) becomes at least 2^-85, so s / (norm 2^64) <= 65535 2^85 is finite; |x| <= norm < s / FLT_MAX
// <= 2^-112 becomes below 2^-48. Both products are exact.
constexpr float kQsgdTinyPrescale = 0x1p64f;

struct QsgdScale {
  float prescale;         // 1, or kQsgdTinyPrescale
  float levels_per_unit;  // s / (norm prescale), finite; 0 for a zero or non-finite norm
  bool prescaled() const { return prescale != 1.0f; }
};

inline QsgdScale qsgd_scale(float s, float norm) {
  if (!(norm > 0 && std::isfinite(norm))) return {1.0f, 0.0f};
  const float levels_per_unit = s / norm;
  if (std::isfinite(levels_per_unit)) return {1.0f, levels_per_unit};
  return {kQsgdTinyPrescale, s / (norm * kQsgdTinyPrescale)};
}

// The code of an element x with draw u (reference::qsgd_encode's loop body).
inline uint32_t qsgd_code(float x, QsgdScale scale, float s, int level_bits, float u) {
  float r = (std::fabs(x) * scale.prescale) * scale.levels_per_unit;
  if (!(r >= 0.0f)) r = 0.0f;                                         // NaN (a non-finite input)
  const auto floor_r = static_cast<float>(static_cast<uint32_t>(r));  // r >= 0: truncation is floor
  float level = floor_r + (u < r - floor_r ? 1.0f : 0.0f);
  level = level < s ? level : s;
  const auto l = static_cast<uint32_t>(level);
  const uint32_t negative = (l != 0 && x < 0.0f) ? 1u : 0u;
  return l | (negative << level_bits);
}

// The largest magnitude a code of a chunk with unit = norm / s decodes to (qsgd.h): FLT_MAX where
// unit is finite, so that l unit saturates rather than rounding to infinity (it can only where norm is
// within s ulps of FLT_MAX), infinity otherwise (a non-finite norm keeps its inf or NaN).
inline float qsgd_cap(float unit) {
  return unit <= std::numeric_limits<float>::max() ? std::numeric_limits<float>::max()
                                                   : std::numeric_limits<float>::infinity();
}

// The value of a code (code_bits bits, none above them) with unit = norm / s and cap = qsgd_cap(unit)
// (reference::qsgd_decode's loop body): +-level unit, its magnitude at most cap (NaN stays NaN).
inline float qsgd_value(uint32_t code, float unit, float cap, int level_bits) {
  float magnitude = static_cast<float>(code & ((1u << level_bits) - 1u)) * unit;
  magnitude = magnitude > cap ? cap : magnitude;
  return (code >> level_bits) ? -magnitude : magnitude;
}

}  // namespace bagua::compress_kernels
