#include "core/compress/minmax_uint8.h"

#include "core/compress/common.h"
#include "core/compress/kernels.h"

namespace bagua {

using namespace compress_detail;

namespace {

size_t record_bytes(size_t len) {
  return MinMaxUint8Compressor::kHeaderBytes + align_up(len, MinMaxUint8Compressor::kAlignBytes);
}

}  // namespace

Bytes MinMaxUint8Compressor::encoded_bytes(size_t n) const {
  const Chunking chunks(n, chunk_size_);
  if (chunks.count == 0) return Bytes(0);
  const size_t last = chunks.count - 1;
  return Bytes(
      static_cast<int64_t>(last * record_bytes(chunks.chunk) + record_bytes(chunks.length(last))));
}

MinMaxUint8Compressor::Levels MinMaxUint8Compressor::levels(float min, float max) {
  Levels l;
  const float range = max - min + kEps;                              // float, as in the kernel
  l.scale = static_cast<float>(255.0 / static_cast<double>(range));  // double division, then float
  l.upper_bound = rint_even(max * l.scale);
  l.lower_bound = static_cast<float>(static_cast<double>(l.upper_bound) - 255.0);
  return l;
}

void MinMaxUint8Compressor::encode(const BufferView& in, const BufferView& out) {
  if (!check_encode(*this, in, out)) return;
  const Chunking chunks(in.count(), chunk_size_);
  if (on_device(in, out)) {
    device_kernels(*this, in, out).minmax_u8_encode(in, out, chunks.chunk);
    return;
  }
  compress_kernels::minmax_uint8_encode(in.as<float>().data(), in.count(), chunk_size_,
                                        out.as<uint8_t>().data());
}

void MinMaxUint8Compressor::decode(const BufferView& in, const BufferView& out) {
  if (!check_decode(*this, in, out)) return;
  const Chunking chunks(out.count(), chunk_size_);
  if (on_device(in, out)) {
    device_kernels(*this, in, out).minmax_u8_decode(in, out, chunks.chunk);
    return;
  }
  compress_kernels::minmax_uint8_decode(in.as<uint8_t>().data(), out.count(), chunk_size_,
                                        out.as<float>().data());
}

bool MinMaxUint8Compressor::encode_residual(const BufferView& x, const BufferView& residual,
                                            const BufferView& out) {
  if (!check_encode(*this, x, out)) return true;
  // corrected = x + 1 e and each chunk's min and max in one pass, then the bytes and the residual.
  compress_kernels::minmax_uint8_encode_feedback(x.as<float>().data(), 1.0f,
                                                 residual.as<float>().data(), x.count(), chunk_size_,
                                                 -1.0f, out.as<uint8_t>().data());
  return true;
}

// Bagua's encode makes three passes over the input (cub::DeviceReduce::Min, cub::DeviceReduce::Max,
// then the quantizing kernel): 12n bytes read, the encoding written. Flops per element: a comparison in
// each reduction, then multiply, round, min and subtract — 6.
Work MinMaxUint8Compressor::encode_cost(size_t n) const {
  return Work{6.0 * static_cast<double>(n), Bytes(static_cast<int64_t>(12 * n)) + encoded_bytes(n), {}};
}

// One pass: the encoding read, 4n bytes written; an add and a divide per element.
Work MinMaxUint8Compressor::decode_cost(size_t n) const {
  return Work{2.0 * static_cast<double>(n), Bytes(static_cast<int64_t>(4 * n)) + encoded_bytes(n), {}};
}

}  // namespace bagua
