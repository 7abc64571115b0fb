#include "core/compress/minmax_uint8.h"

#include <cstring>
#include <utility>

#include "core/compress/common.h"

namespace bagua {

using namespace compress_detail;

namespace {

size_t record_bytes(size_t len) {
  return MinMaxUint8Compressor::kHeaderBytes + align_up(len, MinMaxUint8Compressor::kAlignBytes);
}

// The chunk's min and max, as cub's Min and Max reductions (b < a ? b : a) give them for finite
// inputs. Eight independent lanes, so that the loop is not one long dependency chain.
std::pair<float, float> chunk_min_max(const float* x, size_t len) {
  constexpr size_t kLanes = 8;
  float min[kLanes], max[kLanes];
  for (size_t l = 0; l < kLanes; ++l)
    min[l] = max[l] = x[0];
  size_t j = 0;
  for (; j + kLanes <= len; j += kLanes) {
    for (size_t l = 0; l < kLanes; ++l) {
      min[l] = x[j + l] < min[l] ? x[j + l] : min[l];
      max[l] = x[j + l] > max[l] ? x[j + l] : max[l];
    }
  }
  for (; j < len; ++j) {
    min[0] = x[j] < min[0] ? x[j] : min[0];
    max[0] = x[j] > max[0] ? x[j] : max[0];
  }
  for (size_t l = 1; l < kLanes; ++l) {
    min[0] = min[l] < min[0] ? min[l] : min[0];
    max[0] = max[l] > max[0] ? max[l] : max[0];
  }
  return {min[0], max[0]};
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
  const float* x = in.as<float>().data();
  uint8_t* y = out.as<uint8_t>().data();
  const size_t stride = record_bytes(chunks.chunk);
  for (size_t i = 0; i < chunks.count; ++i) {
    const float* chunk = x + chunks.begin(i);
    const size_t len = chunks.length(i);
    uint8_t* record = y + i * stride;

    const auto [min, max] = chunk_min_max(chunk, len);
    store_f32(record, min);
    store_f32(record + 4, max);
    std::memset(record + 8, 0, kHeaderBytes - 8);

    const Levels l = levels(min, max);
    uint8_t* q = record + kHeaderBytes;
    for (size_t j = 0; j < len; ++j) {
      float level = rint_even(chunk[j] * l.scale);
      level =
          level < l.upper_bound ? level : l.upper_bound;  // CUDA min(): a NaN level becomes the bound
      float v = level - l.lower_bound;
      v = v > 0.0f ? v : 0.0f;  // saturate to [0, 255]
      v = v < 255.0f ? v : 255.0f;
      q[j] = static_cast<uint8_t>(static_cast<int32_t>(v));
    }
    std::memset(q + len, 0, align_up(len, kAlignBytes) - len);
  }
}

void MinMaxUint8Compressor::decode(const BufferView& in, const BufferView& out) {
  if (!check_decode(*this, in, out)) return;
  const Chunking chunks(out.count(), chunk_size_);
  if (on_device(in, out)) {
    device_kernels(*this, in, out).minmax_u8_decode(in, out, chunks.chunk);
    return;
  }
  const uint8_t* y = in.as<uint8_t>().data();
  float* x = out.as<float>().data();
  const size_t stride = record_bytes(chunks.chunk);
  for (size_t i = 0; i < chunks.count; ++i) {
    const uint8_t* record = y + i * stride;
    const Levels l = levels(load_f32(record), load_f32(record + 4));
    const uint8_t* q = record + kHeaderBytes;
    float* chunk = x + chunks.begin(i);
    const size_t len = chunks.length(i);
    for (size_t j = 0; j < len; ++j)
      chunk[j] = (static_cast<float>(q[j]) + l.lower_bound) / l.scale;
  }
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
