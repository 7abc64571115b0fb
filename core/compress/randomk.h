// randomk: k elements at random indices, the same indices on every rank for the same step (random-k
// sparsification, Stich et al., "Sparsified SGD with Memory", NeurIPS 2018; Wangni et al., NeurIPS
// 2018).
//
// Terms. k = ceil(ratio * n) as for topk (core/compress/topk.h: sparse_k). The *step* is this
// instance's count of encodes so far (0, 1, 2, ...). The *indices* of a step are a uniformly random
// k-subset of [0, n) drawn by Floyd's algorithm (Bentley & Floyd, "Programming Pearls: A Sample of
// Brilliance", CACM 1987) from Rng::for_step(seed, step) (core/compress/common.h), listed in increasing
// order. The indices are not sent: the step is, and the decoder draws the same indices from (seed,
// step, n). As every rank creates its instance for a site at the same point and encodes once per step,
// all ranks pick the same indices at the same step; runs with the same seed repeat them exactly.
//
// Layout of the encoding (offsets in bytes, values little-endian):
//   [0, 8)          step (u64)
//   [8, 8 + 4k)     the values (f32) at the step's indices, in increasing index order
//   encoded_bytes(n) = 8 + 4k; 0 for n = 0.
//
// Decoding puts the values at their indices and zero elsewhere. With `unbiased`, the values are scaled
// by n / k, so that the decoded vector is an unbiased estimate of the input (E[x'] = x over the draw);
// without it (the default) they are sent as they are, the form used with error feedback.
#pragma once

#include <cstdint>
#include <vector>

#include "core/compress/compressor.h"

namespace bagua {

class RandomKCompressor final : public Compressor {
 public:
  // ratio in (0, 1]: the fraction of elements kept; seed: shared by all ranks.
  RandomKCompressor(double ratio, uint64_t seed, bool unbiased = false);

  std::string name() const override { return "randomk"; }
  Bytes encoded_bytes(size_t n) const override;
  void encode(const BufferView& in, const BufferView& out) override;
  void decode(const BufferView& in, const BufferView& out) override;
  Work encode_cost(size_t n) const override;
  Work decode_cost(size_t n) const override;

  size_t k(size_t n) const;
  // The increasing indices drawn for `step` on n elements (what encode and decode use).
  std::vector<uint64_t> indices(uint64_t step, size_t n) const;
  // Encodes so far (the step of the next encode).
  uint64_t step() const { return step_; }

 private:
  double ratio_;
  uint64_t seed_;
  bool unbiased_;
  uint64_t step_ = 0;
};

}  // namespace bagua
