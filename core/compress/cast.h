// fp16 and bf16: casting float32 to a 16-bit float, rounding to nearest, ties to even.
//
// fp16 is IEEE 754 binary16 (1 sign, 5 exponent, 10 fraction bits; largest finite 65504, smallest
// subnormal 2^-24). Rounding is to nearest even over the whole range: values of magnitude >= 65520
// (65504 plus half its ulp) become infinity; magnitudes below 2^-14 become subnormals (the tie 2^-25
// rounds to zero); +-0 and +-inf keep their sign; a NaN stays a NaN (quiet; the sign and the top 9
// fraction bits of its payload are kept).
//
// bf16 is the top half of a float32 (1 sign, 8 exponent, 7 fraction bits), rounded to nearest even
// rather than truncated; float32 subnormals round like any other value; a NaN stays a (quiet) NaN.
//
// Layout of the encoding of n elements (2n bytes): element i as a little-endian 16-bit pattern at
// byte 2i. The conversions are written out here (no library), and exposed for tests and kernels.
#pragma once

#include <cstdint>

#include "core/compress/compressor.h"

namespace bagua {

uint16_t f32_to_f16_bits(float f);
float f16_bits_to_f32(uint16_t h);
uint16_t f32_to_bf16_bits(float f);
float bf16_bits_to_f32(uint16_t b);

class Fp16Compressor final : public Compressor {
 public:
  std::string name() const override { return "fp16"; }
  Bytes encoded_bytes(size_t n) const override { return Bytes(static_cast<int64_t>(2 * n)); }
  // On device buffers: DeviceKernels::f32_to_f16 / f16_to_f32, with the encoding viewed as f16.
  void encode(const BufferView& in, const BufferView& out) override;
  void decode(const BufferView& in, const BufferView& out) override;
  Work encode_cost(size_t n) const override;
  Work decode_cost(size_t n) const override;
};

class Bf16Compressor final : public Compressor {
 public:
  std::string name() const override { return "bf16"; }
  Bytes encoded_bytes(size_t n) const override { return Bytes(static_cast<int64_t>(2 * n)); }
  void encode(const BufferView& in, const BufferView& out) override;
  void decode(const BufferView& in, const BufferView& out) override;
  Work encode_cost(size_t n) const override;
  Work decode_cost(size_t n) const override;
};

}  // namespace bagua
