#include "core/compress/sign.h"

#include <bit>
#include <cmath>

#include "core/compress/common.h"

namespace bagua {

using namespace compress_detail;

Bytes SignCompressor::encoded_bytes(size_t n) const {
  const Chunking chunks(n, chunk_size_);
  return Bytes(static_cast<int64_t>(4 * chunks.count + div_up(n, 8)));
}

void SignCompressor::encode(const BufferView& in, const BufferView& out) {
  if (!check_encode(*this, in, out)) return;
  const Chunking chunks(in.count(), chunk_size_);
  if (on_device(in, out)) {
    device_kernels(*this, in, out).sign_encode(in, out, chunks.chunk);
    return;
  }
  const float* x = in.as<float>().data();
  uint8_t* y = out.as<uint8_t>().data();
  for (size_t i = 0; i < chunks.count; ++i) {
    const float* chunk = x + chunks.begin(i);
    const size_t len = chunks.length(i);
    double sum = 0;
    for (size_t j = 0; j < len; ++j)
      sum += std::fabs(chunk[j]);
    store_f32(y + 4 * i, static_cast<float>(sum / static_cast<double>(len)));
  }
  uint8_t* bits = y + 4 * chunks.count;
  const size_t n = chunks.n;
  const size_t full_bytes = n / 8;
  for (size_t b = 0; b < full_bytes; ++b) {
    const float* e = x + 8 * b;
    uint8_t byte = 0;
    for (int k = 0; k < 8; ++k)
      byte |= static_cast<uint8_t>((e[k] >= 0.0f ? 1u : 0u) << k);
    bits[b] = byte;
  }
  if (n % 8) {
    uint8_t byte = 0;
    for (size_t e = 8 * full_bytes; e < n; ++e)
      byte |= static_cast<uint8_t>((x[e] >= 0.0f ? 1u : 0u) << (e % 8));
    bits[full_bytes] = byte;
  }
}

void SignCompressor::decode(const BufferView& in, const BufferView& out) {
  if (!check_decode(*this, in, out)) return;
  const Chunking chunks(out.count(), chunk_size_);
  if (on_device(in, out)) {
    device_kernels(*this, in, out).sign_decode(in, out, chunks.chunk);
    return;
  }
  const uint8_t* y = in.as<uint8_t>().data();
  float* x = out.as<float>().data();
  const uint8_t* bits = y + 4 * chunks.count;
  for (size_t i = 0; i < chunks.count; ++i) {
    const float scale = load_f32(y + 4 * i);
    const size_t begin = chunks.begin(i);
    const size_t end = begin + chunks.length(i);
    // Branch-free (the bits are random): flip the sign bit of the scale where the element's bit is 0.
    const uint32_t magnitude = std::bit_cast<uint32_t>(scale);
    for (size_t e = begin; e < end; ++e) {
      const uint32_t negative = ((bits[e / 8] >> (e % 8)) & 1u) ^ 1u;
      x[e] = std::bit_cast<float>(magnitude ^ (negative << 31));
    }
  }
}

// Two passes over the input (the chunk means, then the bits): 8n bytes read, the encoding written.
// Flops per element: abs and add for the mean, a comparison for the bit — 3.
Work SignCompressor::encode_cost(size_t n) const {
  return Work{3.0 * static_cast<double>(n), Bytes(static_cast<int64_t>(8 * n)) + encoded_bytes(n), {}};
}

// One pass: the encoding read, 4n bytes written; a select per element.
Work SignCompressor::decode_cost(size_t n) const {
  return Work{1.0 * static_cast<double>(n), Bytes(static_cast<int64_t>(4 * n)) + encoded_bytes(n), {}};
}

}  // namespace bagua
