#include "core/compress/randomk.h"

#include <algorithm>
#include <bit>

#include "core/compress/common.h"
#include "core/compress/topk.h"

namespace bagua {

using namespace compress_detail;

RandomKCompressor::RandomKCompressor(double ratio, uint64_t seed, bool unbiased)
    : ratio_(ratio), seed_(seed), unbiased_(unbiased) {
  if (!(ratio > 0.0 && ratio <= 1.0))
    throw ConfigError("compressor randomk: ratio must be in (0, 1], got " + std::to_string(ratio));
}

size_t RandomKCompressor::k(size_t n) const {
  return sparse_k(ratio_, n);
}

Bytes RandomKCompressor::encoded_bytes(size_t n) const {
  return Bytes(n == 0 ? 0 : static_cast<int64_t>(8 + 4 * k(n)));
}

std::vector<uint64_t> RandomKCompressor::indices(uint64_t step, size_t n) const {
  const size_t k = this->k(n);
  // Floyd: for j = n-k .. n-1, draw t in [0, j]; take t, or j if t is taken already. Every k-subset
  // comes out with the same probability. `taken` is a bitmap of n bits.
  std::vector<uint64_t> taken(div_up(n, 64), 0);
  Rng rng = Rng::for_step(seed_, step);
  for (size_t j = n - k; j < n; ++j) {
    const uint64_t t = rng.below(j + 1);
    const uint64_t pick = (taken[t / 64] >> (t % 64)) & 1u ? j : t;
    taken[pick / 64] |= uint64_t{1} << (pick % 64);
  }
  std::vector<uint64_t> out;
  out.reserve(k);
  for (size_t w = 0; w < taken.size(); ++w) {
    for (uint64_t bits = taken[w]; bits; bits &= bits - 1)
      out.push_back(64 * w + static_cast<uint64_t>(std::countr_zero(bits)));
  }
  return out;
}

void RandomKCompressor::encode(const BufferView& in, const BufferView& out) {
  const uint64_t step = step_++;  // meta encodes count too, so that a site's steps stay aligned
  if (!check_encode(*this, in, out)) return;
  if (on_device(in, out)) no_device_kernel(*this);
  const float* x = in.as<float>().data();
  uint8_t* y = out.as<uint8_t>().data();
  store_u64(y, step);
  const std::vector<uint64_t> idx = indices(step, in.count());
  for (size_t j = 0; j < idx.size(); ++j)
    store_f32(y + 8 + 4 * j, x[idx[j]]);
}

void RandomKCompressor::decode(const BufferView& in, const BufferView& out) {
  if (!check_decode(*this, in, out)) return;
  if (on_device(in, out)) no_device_kernel(*this);
  const size_t n = out.count();
  const uint8_t* y = in.as<uint8_t>().data();
  float* x = out.as<float>().data();
  const std::vector<uint64_t> idx = indices(load_u64(y), n);
  const float factor =
      unbiased_ ? static_cast<float>(static_cast<double>(n) / static_cast<double>(idx.size())) : 1.0f;
  std::fill_n(x, n, 0.0f);
  for (size_t j = 0; j < idx.size(); ++j)
    x[idx[j]] = load_f32(y + 8 + 4 * j) * factor;
}

// Drawing the indices touches the n-bit bitmap twice (n/4 bytes) and k random draws; gathering reads k
// scattered floats (4k bytes) and writes the encoding. About 4 integer operations per kept element.
Work RandomKCompressor::encode_cost(size_t n) const {
  const auto k = static_cast<int64_t>(this->k(n));
  return Work{
      4.0 * static_cast<double>(k), Bytes(static_cast<int64_t>(n / 4) + 4 * k) + encoded_bytes(n), {}};
}

// The same draw, a zero fill of the 4n-byte output, the encoding read and k values scattered.
Work RandomKCompressor::decode_cost(size_t n) const {
  const auto k = static_cast<int64_t>(this->k(n));
  return Work{5.0 * static_cast<double>(k),
              Bytes(static_cast<int64_t>(n / 4 + 4 * n) + 4 * k) + encoded_bytes(n),
              {}};
}

}  // namespace bagua
