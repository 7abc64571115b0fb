// Compressors: encode a float32 buffer into bytes and decode it back.
//
// `encoded_bytes(n)` is exact, so that meta buffers cost on the wire what real ones would. An instance
// may hold state tied to the buffer it compresses (error feedback's residual, random-k's step counter):
// use one instance per site (per bucket, per chunk role) — primitives take a CompressorFactory.
//
// Common contract of every compressor here:
//   - encode(in, out): `in` holds n float32 elements, `out` exactly encoded_bytes(n) bytes (dtype u8);
//     decode(in, out): `in` holds encoded_bytes(n) bytes, `out` n float32 elements. Shapes are checked
//     (InternalError on a mismatch) even when nothing is computed.
//   - If either view is meta, encode/decode do nothing (the sizes still are checked).
//   - n = 0 encodes to 0 bytes.
//   - If a view lives in device memory, the work goes to the space's DeviceKernels (see
//     core/device_kernels.h) where one exists (minmax_uint8, sign, fp16; identity copies through the
//     space); the others throw ConfigError "compressor X has no device kernel".
//   - Byte layouts are native little-endian; each compressor's header documents its layout to the byte,
//     so that device kernels can produce the very same bytes.
//
// The compressors: identity.h, minmax_uint8.h, sign.h, topk.h, randomk.h, cast.h (fp16, bf16), qsgd.h,
// and error_feedback.h (a wrapper around any of them).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/buffer.h"
#include "core/clock.h"
#include "core/params.h"
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
  // Modelled device cost of encoding / decoding n elements. The default charges one pass that reads the
  // floats and writes the encoding (and the reverse), at one flop per element.
  virtual Work encode_cost(size_t n) const;
  virtual Work decode_cost(size_t n) const;
  // Error feedback's step (error_feedback.h) fused where a compressor can: replace `residual` (n f32,
  // host) with corrected = x + 1 residual, encode corrected into `out` (host), then replace `residual`
  // with corrected + (-1) D(out), element by element — the bits that add_scaled, encode, decode and
  // add_scaled would give. Returns false (and does nothing) where the compressor has no fused form;
  // error feedback then runs those four.
  virtual bool encode_residual(const BufferView& x, const BufferView& residual, const BufferView& out) {
    return false;
  }
};

// Charge `clock` the modelled cost of encoding `in` (decoding into `out`), then do it: how a primitive
// runs a compressor on its stream.
void timed_encode(Clock& clock, Compressor& c, const BufferView& in, const BufferView& out);
void timed_decode(Clock& clock, Compressor& c, const BufferView& in, const BufferView& out);

using CompressorFactory = std::function<std::unique_ptr<Compressor>()>;
using CompressorRegistry = Registry<Compressor>;

// Registers identity, minmax_uint8, sign, topk, randomk, fp16, bf16 and qsgd, each with its parameters.
void register_compressors(CompressorRegistry& registry);

// Wraps `inner` with error feedback (core/compress/error_feedback.h): the part of each input that the
// compression lost is added to the next input.
std::unique_ptr<Compressor> make_error_feedback(std::unique_ptr<Compressor> inner);

// A factory of compressor `name`, configured from `params`: the entries of `params` declared by the
// compressor's schema are validated and used, defaults fill the rest, and other entries (an algorithm's
// own parameters) are ignored. With `error_feedback`, every instance is wrapped by make_error_feedback.
// Throws ConfigError naming the compressor and parameter for an unknown name or an invalid value.
CompressorFactory compressor_factory(const CompressorRegistry& registry, const std::string& name,
                                     const Params& params, bool error_feedback);

}  // namespace bagua
