// minmax_uint8: Bagua's MinMax uint8 compression (the ByteGrad algorithm's), byte for byte.
//
// Followed (read, not copied) from BaguaSys/bagua, rust/bagua-core:
//   bagua-core-internal/kernels/bagua_kernels.cu
//       compress_float_to_uint8 / decompress_uint8_to_float (the arithmetic and the record layout),
//       compress_float_to_uint8_host (per-chunk min/max over min(remaining, chunk_size) elements,
//       chunk_offset = output_size / num_chunks)
//   bagua-core-internal/src/datatypes/mod.rs
//       MinMaxUInt8CompressionParameters::get_compressed_buffer_size (32-byte alignment of the header
//       and of the data), RawBaguaTensor::compress (chunk_size = elements / n_chunks)
//   bagua-core-internal/src/comm_ops/centralized_low_precision_synchronous.rs (n_chunks = nranks)
//
// Terms. The n input elements are cut into chunks of `chunk` elements (the last may be shorter). Each
// chunk becomes one record: a 32-byte header, then one byte per element, padded to a multiple of 32.
//
// Layout of the encoding (all offsets in bytes, values little-endian):
//   stride = 32 + align32(chunk)                 (Bagua's chunk_offset)
//   record i starts at i * stride and holds chunk i (elements [i*chunk, i*chunk + len_i)):
//     [0, 4)                 min  (f32): the smallest element of the chunk
//     [4, 8)                 max  (f32): the largest element of the chunk
//     [8, 32)                zero
//     [32, 32 + len_i)       q_j  (u8), one per element j of the chunk, in order
//     [32 + len_i, 32 + align32(len_i))  zero
//   encoded_bytes(n) = (chunks - 1) * stride + 32 + align32(len_last); 0 for n = 0.
// When chunk divides n this is exactly Bagua's get_compressed_buffer_size(n_chunks, chunk, F32).
//
// Arithmetic, in float32 exactly as Bagua's kernel evaluates it (eps = 1e-7f):
//   scale       = f32(255.0 / f64(max - min + eps))   (the literal 255.0 is a double: the division is
//                                                      done in double and rounded to float)
//   upper_bound = rint(max * scale)                    (rint: nearest, ties to even)
//   lower_bound = upper_bound - 255
//   encode: q = min(rint(x * scale), upper_bound) - lower_bound, saturated to [0, 255]
//   decode: x' = (q + lower_bound) / scale
// This is the usual min-max formula q = round((x - min) * scale), x' = q / scale + min, as Bagua
// computes it: offsets from the rounded max rather than from min, so that x' = rint(x * scale) / scale
// and every element is within half a step, (max - min + eps) / 255 / 2, of its input (plus float
// rounding).
//
// Choices where Bagua's source does not decide:
//   - Chunk size. Bagua has no chunk-size parameter: it pads a bucket to a multiple of the world size
//     (BaguaBucket alignment = world size in bytegrad.py) and uses one chunk per rank. Here
//     `chunk_size` is a parameter, default 0 = one chunk for the whole buffer; a primitive that encodes
//     each rank's slice separately (or sets chunk_size to the slice length) produces Bagua's n_chunks =
//     nranks bytes.
//   - A short last chunk gets a record padded to align32 of its own length instead of a zero-padded
//     full chunk (Bagua never has a short chunk: it pads the bucket).
//   - Padding bytes are written as zeros (Bagua leaves them as they were), so encodings are
//     deterministic. The saturation to [0, 255] is explicit (the kernel's float -> uint8 conversion).
#pragma once

#include "core/compress/compressor.h"

namespace bagua {

class MinMaxUint8Compressor final : public Compressor {
 public:
  static constexpr float kEps = 1e-7f;        // bagua_kernels.cu: const float eps = 1e-7
  static constexpr size_t kHeaderBytes = 32;  // datatypes/mod.rs: align_size(4 * 2, 32)
  static constexpr size_t kAlignBytes = 32;   // datatypes/mod.rs: align_bytes = 32

  // chunk_size: elements per chunk; 0 = the whole buffer is one chunk.
  explicit MinMaxUint8Compressor(size_t chunk_size = 0) : chunk_size_(chunk_size) {}

  std::string name() const override { return "minmax_uint8"; }
  Bytes encoded_bytes(size_t n) const override;
  void encode(const BufferView& in, const BufferView& out) override;
  void decode(const BufferView& in, const BufferView& out) override;
  bool encode_residual(const BufferView& x, const BufferView& residual, const BufferView& out) override;
  Work encode_cost(size_t n) const override;
  Work decode_cost(size_t n) const override;

  size_t chunk_size() const { return chunk_size_; }

  // The per-chunk quantization grid derived from a chunk's min and max (shared by encode and decode).
  struct Levels {
    float scale;
    float upper_bound;
    float lower_bound;
  };
  static Levels levels(float min, float max);

 private:
  size_t chunk_size_;
};

}  // namespace bagua
