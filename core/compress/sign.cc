#include "core/compress/sign.h"

#include "core/compress/common.h"
#include "core/compress/kernels.h"

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
  compress_kernels::sign_encode(in.as<float>().data(), in.count(), chunk_size_,
                                out.as<uint8_t>().data());
}

void SignCompressor::decode(const BufferView& in, const BufferView& out) {
  if (!check_decode(*this, in, out)) return;
  const Chunking chunks(out.count(), chunk_size_);
  if (on_device(in, out)) {
    device_kernels(*this, in, out).sign_decode(in, out, chunks.chunk);
    return;
  }
  compress_kernels::sign_decode(in.as<uint8_t>().data(), out.count(), chunk_size_,
                                out.as<float>().data());
}

bool SignCompressor::encode_residual(const BufferView& x, const BufferView& residual,
                                     const BufferView& out) {
  if (!check_encode(*this, x, out)) return true;
  // corrected = x + 1 e with the chunks' scales, then the bits and the residual.
  compress_kernels::sign_encode_feedback(x.as<float>().data(), 1.0f, residual.as<float>().data(),
                                         x.count(), chunk_size_, -1.0f, out.as<uint8_t>().data());
  return true;
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
