#include "core/compress/topk.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>

#include "core/compress/common.h"
#include "core/compress/kernels.h"

namespace bagua {

using namespace compress_detail;

size_t sparse_k(double ratio, size_t n) {
  if (n == 0) return 0;
  const double product = ratio * static_cast<double>(n);
  const auto k = static_cast<size_t>(std::ceil(product * (1.0 - 1e-12)));
  return std::clamp<size_t>(k, 1, n);
}

namespace {

void check_index_range(const Compressor& c, size_t n) {
  if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    throw ConfigError("compressor " + c.name() + ": " + std::to_string(n) +
                      " elements do not fit its int32 indices (at most 2^31 - 1)");
}

}  // namespace

TopKCompressor::TopKCompressor(double ratio) : ratio_(ratio) {
  if (!(ratio > 0.0 && ratio <= 1.0))
    throw ConfigError("compressor topk: ratio must be in (0, 1], got " + std::to_string(ratio));
}

Bytes TopKCompressor::encoded_bytes(size_t n) const {
  return Bytes(static_cast<int64_t>(8 * k(n)));
}

void TopKCompressor::encode(const BufferView& in, const BufferView& out) {
  if (!check_encode(*this, in, out)) return;
  if (on_device(in, out)) no_device_kernel(*this);
  const size_t n = in.count();
  check_index_range(*this, n);
  const size_t k = this->k(n);

  // The kept elements: every magnitude above the k-th largest (the threshold), then, in index order, as
  // many equal to the threshold as make k. The threshold is found by a radix select on the magnitudes'
  // bit patterns (non-negative floats order like their bits as integers; a NaN's counts as infinity's):
  // a histogram of the top 11 bits picks the bucket holding the k-th largest, and a selection among
  // that bucket's keys finds it exactly (compress_kernels::topk_encode).
  compress_kernels::topk_encode(in.as<float>().data(), n, k, out.as<uint8_t>().data(), candidates_);
}

void TopKCompressor::decode(const BufferView& in, const BufferView& out) {
  if (!check_decode(*this, in, out)) return;
  if (on_device(in, out)) no_device_kernel(*this);
  const size_t n = out.count();
  const size_t k = this->k(n);
  const uint8_t* y = in.as<uint8_t>().data();
  float* x = out.as<float>().data();
  std::fill_n(x, n, 0.0f);
  for (size_t j = 0; j < k; ++j) {
    int32_t index;
    std::memcpy(&index, y + 4 * j, 4);
    BAGUA_CHECK(
        index >= 0 && static_cast<size_t>(index) < n,
        "topk decode: index " + std::to_string(index) + " outside [0, " + std::to_string(n) + ")");
    x[index] = load_f32(y + 4 * k + 4 * j);
  }
}

bool TopKCompressor::encode_residual(const BufferView& x, const BufferView& residual,
                                     const BufferView& out) {
  if (!check_encode(*this, x, out)) return true;
  const size_t n = x.count();
  check_index_range(*this, n);
  // corrected = x + 1 e while the candidates are selected, then the kept elements' residual.
  compress_kernels::topk_encode_feedback(x.as<float>().data(), 1.0f, residual.as<float>().data(), n,
                                         k(n), -1.0f, out.as<uint8_t>().data(), candidates_);
  return true;
}

// A radix select, on the host as on a GPU: three passes over the input (histogram, bucket, keep),
// 12n bytes read, the encoding written; an abs and two comparisons per element — 3 flops.
Work TopKCompressor::encode_cost(size_t n) const {
  return Work{3.0 * static_cast<double>(n), Bytes(static_cast<int64_t>(12 * n)) + encoded_bytes(n), {}};
}

// Zero the 4n-byte output, read the encoding and scatter the k values (4k bytes written).
Work TopKCompressor::decode_cost(size_t n) const {
  return Work{0, Bytes(static_cast<int64_t>(4 * n + 4 * k(n))) + encoded_bytes(n), {}};
}

}  // namespace bagua
