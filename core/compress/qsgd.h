// qsgd: stochastic quantization to s levels of the chunk's L2 norm (Alistarh et al., "QSGD:
// Communication-Efficient SGD via Gradient Quantization and Encoding", NeurIPS 2017).
//
// Terms. The n input elements are cut into chunks of `chunk` elements (QSGD's buckets; the last may be
// shorter). Each chunk has a *norm*, its L2 norm. An element x of a chunk becomes a *level* l in
// [0, s] and a sign: with r = |x| / norm * s, l = floor(r) + 1 with probability r - floor(r), else
// floor(r) — stochastic rounding, so E[l] = r and E[x'] = x. Decoding gives x' = +-l * (norm / s).
// The *code* of an element packs the level in its low w bits, w = bit_width(s), and the sign (1 =
// negative) in bit w: b = w + 1 bits per element (s = 7: 4 bits; s = 127: one byte).
//
// The uniform draws come from Rng::for_step(seed, step) (core/compress/common.h), step = this
// instance's count of encodes so far, one draw per element in element order: the encoding is a
// deterministic function of (input, seed, step).
//
// Layout of the encoding (offsets in bytes, values little-endian):
//   [0, 4 * chunks)           norm of chunk i (f32) at byte 4i
//   [4 * chunks, 4 * chunks + ceil(n * b / 8))
//                             the codes, a little-endian bit stream: code of element e occupies stream
//                             bits [e * b, e * b + b), its least significant bit first; stream bit t is
//                             bit (t % 8) of byte 4 * chunks + t / 8. Bits past the last code are zero.
//   encoded_bytes(n) = 4 * ceil(n / chunk) + ceil(n * b / 8); 0 for n = 0.
// Non-finite inputs, or a chunk whose norm is zero or not finite, encode as level 0.
//
// Arithmetic (f32, as reference.cc computes it): levels_per_unit = s / norm, r = |x| levels_per_unit.
// QSGD defines Q_s(v)_i = ||v|| sgn(v_i) xi_i with xi_i = l / s or (l + 1) / s, l = floor(|v_i| /
// ||v|| s) (Alistarh et al., section 3.1; Q_s(0) = 0): r = |v_i| / ||v|| s lies in [0, s] for every
// v != 0 however small, and Q_s(c v) = c Q_s(v) for c > 0. Where s / norm overflows f32 (norm below
// s / FLT_MAX, about s 2^-128, so never above 2^-112), x and norm are both scaled by 2^64 first:
// r = (|x| 2^64) (s / (norm 2^64)). Both scalings are exact (|x| <= norm < 2^-112, the f32 norm being
// at least each |x| of its chunk as every rounding is monotone; norm >= 2^-149) and the quotient is
// finite, so r is the value the first form gives with an unbounded exponent range: such a chunk is
// quantized like its copy scaled by 2^64, neither dropped (all levels 0 would make E[x'] = 0, not x)
// nor clamped (levels_per_unit = FLT_MAX would bias r down). Every other chunk's r is the first
// form's, bit for bit. Decoding is x' = +-l f32(norm / s) for every norm, its magnitude saturated at
// FLT_MAX where norm / s is finite (l f32(norm / s) rounds past FLT_MAX only for a norm within s ulps
// of FLT_MAX, and |x| <= norm, so FLT_MAX is still within one level step of x); where norm / s is subnormal
// (norm < s 2^-126) it is a multiple of 2^-149, so x' is within l 2^-150 (and its own rounding) of
// +-l norm / s.
#pragma once

#include <cstdint>

#include "core/compress/compressor.h"

namespace bagua {

class QsgdCompressor final : public Compressor {
 public:
  static constexpr int64_t kMaxLevels = 65535;  // keeps a code within 17 bits

  // levels: s >= 1; chunk_size: elements per norm (0 = the whole buffer); seed: of the rounding draws.
  QsgdCompressor(int64_t levels, size_t chunk_size, uint64_t seed);

  std::string name() const override { return "qsgd"; }
  Bytes encoded_bytes(size_t n) const override;
  void encode(const BufferView& in, const BufferView& out) override;
  void decode(const BufferView& in, const BufferView& out) override;
  Work encode_cost(size_t n) const override;
  Work decode_cost(size_t n) const override;

  int bits_per_element() const { return code_bits_; }

 private:
  uint32_t levels_;
  size_t chunk_size_;
  uint64_t seed_;
  int level_bits_;  // w
  int code_bits_;   // b = w + 1
  uint64_t step_ = 0;
};

}  // namespace bagua
