#include "core/compress/qsgd.h"

#include <bit>
#include <cmath>

#include "core/compress/common.h"
#include "core/compress/kernels.h"

namespace bagua {

using namespace compress_detail;

QsgdCompressor::QsgdCompressor(int64_t levels, size_t chunk_size, uint64_t seed)
    : chunk_size_(chunk_size), seed_(seed) {
  if (levels < 1 || levels > kMaxLevels)
    throw ConfigError("compressor qsgd: levels must be in [1, " + std::to_string(kMaxLevels) +
                      "], got " + std::to_string(levels));
  levels_ = static_cast<uint32_t>(levels);
  level_bits_ = std::bit_width(levels_);
  code_bits_ = level_bits_ + 1;
}

Bytes QsgdCompressor::encoded_bytes(size_t n) const {
  const Chunking chunks(n, chunk_size_);
  return Bytes(static_cast<int64_t>(4 * chunks.count + div_up(n * static_cast<size_t>(code_bits_), 8)));
}

void QsgdCompressor::encode(const BufferView& in, const BufferView& out) {
  const uint64_t step = step_++;  // meta encodes count too, so that a site's steps stay aligned
  if (!check_encode(*this, in, out)) return;
  if (on_device(in, out)) no_device_kernel(*this);
  compress_kernels::qsgd_encode(in.as<float>().data(), in.count(), chunk_size_, levels_, seed_, step,
                                out.as<uint8_t>().data());
}

void QsgdCompressor::decode(const BufferView& in, const BufferView& out) {
  if (!check_decode(*this, in, out)) return;
  if (on_device(in, out)) no_device_kernel(*this);
  compress_kernels::qsgd_decode(in.as<uint8_t>().data(), out.count(), chunk_size_, levels_,
                                out.as<float>().data());
}

// Two passes over the input (the norms, then the codes): 8n bytes read, the encoding written. Flops per
// element: multiply-add for the norm, then multiply, floor, subtract, a random draw and compare, min —
// counted as 8.
Work QsgdCompressor::encode_cost(size_t n) const {
  return Work{8.0 * static_cast<double>(n), Bytes(static_cast<int64_t>(8 * n)) + encoded_bytes(n), {}};
}

// One pass: the encoding read, 4n bytes written; unpack, multiply and sign — 2 flops.
Work QsgdCompressor::decode_cost(size_t n) const {
  return Work{2.0 * static_cast<double>(n), Bytes(static_cast<int64_t>(4 * n)) + encoded_bytes(n), {}};
}

}  // namespace bagua
