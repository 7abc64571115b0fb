// sign: 1-bit compression with a per-chunk scale (scaled sign, as in signSGD with a magnitude —
// Bernstein et al., ICML 2018 — and 1-bit SGD, Seide et al., Interspeech 2014).
//
// Terms. The n input elements are cut into chunks of `chunk` elements (the last may be shorter); each
// chunk has a scale, the mean of |x| over its elements. An element is sent as one bit: 1 if x >= 0
// (so +0, -0 and +inf give 1), 0 otherwise (negative values and NaN). Decoding gives +scale or -scale.
//
// Layout of the encoding (offsets in bytes, values little-endian):
//   [0, 4 * chunks)                   scale of chunk i (f32) at byte 4i
//   [4 * chunks, 4 * chunks + ceil(n / 8))
//                                     the bits of all n elements, in element order, 8 per byte, least
//                                     significant bit first: element e is bit (e % 8) of byte
//                                     4 * chunks + e / 8. Bits past element n - 1 are zero.
//   encoded_bytes(n) = 4 * ceil(n / chunk) + ceil(n / 8); 0 for n = 0.
// Bits run across chunk boundaries (a chunk need not start on a byte).
//
// The host sums |x| in double and stores f32(sum / len); a device kernel may sum in another order, so
// its scales may differ from the host's in the last bits (the layout is the same).
#pragma once

#include "core/compress/compressor.h"

namespace bagua {

class SignCompressor final : public Compressor {
 public:
  // chunk_size: elements per scale; 0 = one scale for the whole buffer.
  explicit SignCompressor(size_t chunk_size = 0) : chunk_size_(chunk_size) {}

  std::string name() const override { return "sign"; }
  Bytes encoded_bytes(size_t n) const override;
  void encode(const BufferView& in, const BufferView& out) override;
  void decode(const BufferView& in, const BufferView& out) override;
  bool encode_residual(const BufferView& x, const BufferView& residual, const BufferView& out) override;
  Work encode_cost(size_t n) const override;
  Work decode_cost(size_t n) const override;

  size_t chunk_size() const { return chunk_size_; }

 private:
  size_t chunk_size_;
};

}  // namespace bagua
