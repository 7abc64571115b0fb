// Device implementations of the compressor kernels, offered by a device Space (runtime/nccl) so that
// compressors work on GPU-resident buffers without a round trip through the host. Layouts are exactly
// the host compressors' (core/compress), so host and device encodings are interchangeable bytes.
#pragma once

#include <cstddef>

#include "core/buffer.h"

namespace bagua {

struct DeviceKernels {
  virtual ~DeviceKernels() = default;
  // MinMax uint8 (Bagua's chunked format): see core/compress/minmax_uint8.h for the layout.
  virtual void minmax_u8_encode(const BufferView& in, const BufferView& out, size_t chunk) const = 0;
  virtual void minmax_u8_decode(const BufferView& in, const BufferView& out, size_t chunk) const = 0;
  // 1-bit sign with a per-chunk scale: see core/compress/sign.h.
  virtual void sign_encode(const BufferView& in, const BufferView& out, size_t chunk) const = 0;
  virtual void sign_decode(const BufferView& in, const BufferView& out, size_t chunk) const = 0;
  // float32 <-> IEEE half.
  virtual void f32_to_f16(const BufferView& in, const BufferView& out) const = 0;
  virtual void f16_to_f32(const BufferView& in, const BufferView& out) const = 0;
};

}  // namespace bagua
