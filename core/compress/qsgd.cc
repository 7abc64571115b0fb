#include "core/compress/qsgd.h"

#include <bit>
#include <cmath>

#include "core/compress/common.h"

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
  const Chunking chunks(in.count(), chunk_size_);
  const float* x = in.as<float>().data();
  uint8_t* y = out.as<uint8_t>().data();
  const float s = static_cast<float>(levels_);
  const int level_bits = level_bits_,
            code_bits = code_bits_;  // locals: the byte stores may alias members
  Rng rng = Rng::for_step(seed_, step);

  // The bit stream: codes are or-ed into `pending` above its `pending_bits` bits, whole bytes flushed.
  uint8_t* stream = y + 4 * chunks.count;
  uint64_t pending = 0;
  int pending_bits = 0;
  for (size_t i = 0; i < chunks.count; ++i) {
    const float* chunk = x + chunks.begin(i);
    const size_t len = chunks.length(i);
    double squares = 0;
    for (size_t j = 0; j < len; ++j)
      squares += static_cast<double>(chunk[j]) * chunk[j];
    const auto norm = static_cast<float>(std::sqrt(squares));
    store_f32(y + 4 * i, norm);
    const float levels_per_unit = norm > 0 && std::isfinite(norm) ? s / norm : 0.0f;

    for (size_t j = 0; j < len; ++j) {
      float r = std::fabs(chunk[j]) * levels_per_unit;
      if (!(r >= 0.0f)) r = 0.0f;                                         // NaN (a non-finite input)
      const auto floor_r = static_cast<float>(static_cast<uint32_t>(r));  // r >= 0: truncation is floor
      const float u = rng.uniform();
      float level = floor_r + (u < r - floor_r ? 1.0f : 0.0f);
      level = level < s ? level : s;
      const auto l = static_cast<uint32_t>(level);
      const uint32_t negative = (l != 0 && chunk[j] < 0.0f) ? 1u : 0u;
      pending |= static_cast<uint64_t>(l | (negative << level_bits)) << pending_bits;
      pending_bits += code_bits;
      while (pending_bits >= 8) {
        *stream++ = static_cast<uint8_t>(pending);
        pending >>= 8;
        pending_bits -= 8;
      }
    }
  }
  if (pending_bits > 0) *stream = static_cast<uint8_t>(pending);
}

void QsgdCompressor::decode(const BufferView& in, const BufferView& out) {
  if (!check_decode(*this, in, out)) return;
  if (on_device(in, out)) no_device_kernel(*this);
  const Chunking chunks(out.count(), chunk_size_);
  const uint8_t* y = in.as<uint8_t>().data();
  float* x = out.as<float>().data();
  const float s = static_cast<float>(levels_);
  const int level_bits = level_bits_, code_bits = code_bits_;
  const uint32_t level_mask = (1u << level_bits) - 1u;
  const uint8_t* stream = y + 4 * chunks.count;
  uint64_t pending = 0;
  int pending_bits = 0;
  for (size_t i = 0; i < chunks.count; ++i) {
    const float unit = load_f32(y + 4 * i) / s;
    float* chunk = x + chunks.begin(i);
    const size_t len = chunks.length(i);
    for (size_t j = 0; j < len; ++j) {
      while (pending_bits < code_bits) {
        pending |= static_cast<uint64_t>(*stream++) << pending_bits;
        pending_bits += 8;
      }
      const auto code = static_cast<uint32_t>(pending & ((uint64_t{1} << code_bits) - 1u));
      pending >>= code_bits;
      pending_bits -= code_bits;
      const float magnitude = static_cast<float>(code & level_mask) * unit;
      chunk[j] = (code >> level_bits) ? -magnitude : magnitude;
    }
  }
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
