// Compressors: encode a float32 buffer into bytes and decode it back.
//
// `encoded_bytes(n)` is exact, so that meta buffers cost on the wire what real ones would. An instance
// may hold state tied to the buffer it compresses (error feedback's residual, random-k's step counter):
// use one instance per site (per bucket, per chunk role) — primitives take a CompressorFactory.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/buffer.h"
#include "core/clock.h"
#include "core/registry.h"

namespace bagua {

class Compressor {
 public:
  virtual ~Compressor() = default;
  virtual std::string name() const = 0;
  // Exact size of the encoding of n float32 elements.
  virtual Bytes encoded_bytes(size_t n) const = 0;
  // in: n f32 elements; out: exactly encoded_bytes(n) bytes (dtype u8). No-op on meta buffers.
  virtual void encode(const BufferView& in, const BufferView& out) = 0;
  // in: encoded_bytes(n) bytes; out: n f32 elements.
  virtual void decode(const BufferView& in, const BufferView& out) = 0;
  // Modelled device cost of encoding / decoding n elements.
  virtual Work encode_cost(size_t n) const;
  virtual Work decode_cost(size_t n) const;
};

using CompressorFactory = std::function<std::unique_ptr<Compressor>()>;
using CompressorRegistry = Registry<Compressor>;
void register_compressors(CompressorRegistry& registry);

}  // namespace bagua
