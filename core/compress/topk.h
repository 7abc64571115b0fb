// topk: the k largest magnitudes of the input, with their indices; the rest decode as zero
// (sparsification as in Aji & Heafield, "Sparse Communication for Distributed Gradient Descent",
// EMNLP 2017, and Stich et al., "Sparsified SGD with Memory", NeurIPS 2018).
//
// Terms. k = ceil(ratio * n) (at least 1 for n > 0, at most n; the product is taken with a relative
// tolerance of 1e-12, so that a ratio * n a rounding error above an integer does not add an element).
// The kept elements are the k with the largest |x|, NaN counting as the largest; among equal
// magnitudes the lower index wins, so the choice is deterministic.
//
// Layout of the encoding (offsets in bytes, values little-endian):
//   [0, 4k)     the kept indices (i32), strictly increasing
//   [4k, 8k)    the kept values (f32), in the same order
//   encoded_bytes(n) = 8k; 0 for n = 0.
// n must fit in an i32 index (n <= 2^31 - 1).
#pragma once

#include <cstdint>
#include <vector>

#include "core/compress/compressor.h"

namespace bagua {

// k = ceil(ratio * n) clamped to [1, n] for n > 0 (see above); shared by topk and randomk.
size_t sparse_k(double ratio, size_t n);

class TopKCompressor final : public Compressor {
 public:
  // ratio in (0, 1]: the fraction of elements kept.
  explicit TopKCompressor(double ratio);

  std::string name() const override { return "topk"; }
  Bytes encoded_bytes(size_t n) const override;
  void encode(const BufferView& in, const BufferView& out) override;
  void decode(const BufferView& in, const BufferView& out) override;
  bool encode_residual(const BufferView& x, const BufferView& residual, const BufferView& out) override;
  Work encode_cost(size_t n) const override;
  Work decode_cost(size_t n) const override;

  size_t k(size_t n) const { return sparse_k(ratio_, n); }

 private:
  double ratio_;
  std::vector<uint32_t> candidates_;  // scratch, kept between calls to avoid reallocation
};

}  // namespace bagua
