// identity: the float32 input as is — a baseline, and a check that a primitive's plumbing is lossless.
//
// Layout of the encoding of n elements (4n bytes): element i as a little-endian f32 at byte 4i.
#pragma once

#include "core/compress/compressor.h"

namespace bagua {

class IdentityCompressor final : public Compressor {
 public:
  std::string name() const override { return "identity"; }
  Bytes encoded_bytes(size_t n) const override { return Bytes(static_cast<int64_t>(4 * n)); }
  // Copies through the views' space (core/ops.h), so it also works on device buffers.
  void encode(const BufferView& in, const BufferView& out) override;
  void decode(const BufferView& in, const BufferView& out) override;
  Work encode_cost(size_t n) const override;
  Work decode_cost(size_t n) const override;
};

}  // namespace bagua
