#include "core/compress/cast.h"

#include <bit>

#include "core/compress/common.h"
#include "core/compress/kernels.h"

namespace bagua {

using namespace compress_detail;

uint16_t f32_to_f16_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t magnitude = x & 0x7FFFFFFFu;
  if (magnitude >= 0x7F800000u) {  // inf or NaN
    if (magnitude == 0x7F800000u) return sign | 0x7C00u;
    return static_cast<uint16_t>(sign | 0x7E00u | ((magnitude >> 13) & 0x3FFu));  // quiet NaN
  }
  if (magnitude >= 0x477FF000u) return sign | 0x7C00u;  // >= 65520: rounds to infinity
  if (magnitude >= 0x38800000u) {                       // >= 2^-14: a normal half
    // Re-bias the exponent (127 -> 15: subtract 112 << 23), then round the 13 dropped fraction bits to
    // nearest even: add 0xFFF plus the lowest kept bit, and shift. A carry out of the fraction
    // correctly bumps the exponent.
    const uint32_t odd = (magnitude >> 13) & 1u;
    return static_cast<uint16_t>(sign | ((magnitude - (112u << 23) + 0xFFFu + odd) >> 13));
  }
  // A subnormal half (or zero): the value in units of 2^-24, rounded to nearest even. Scaling by 2^24
  // is exact, and the result (at most 1024, which is the smallest normal's pattern 0x0400) is an
  // integer.
  const float units = rint_even(std::bit_cast<float>(magnitude) * 0x1p24f);
  return static_cast<uint16_t>(sign | static_cast<uint16_t>(units));
}

float f16_bits_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  const uint32_t fraction = h & 0x3FFu;
  if (exponent == 0) {  // zero or subnormal: fraction * 2^-24, exact in float
    const float magnitude = static_cast<float>(fraction) * 0x1p-24f;
    return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(magnitude));
  }
  if (exponent == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (fraction << 13));  // inf, NaN
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (fraction << 13));
}

uint16_t f32_to_bf16_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x0040u);  // quiet NaN
  // Round the 16 dropped bits to nearest even; a carry may reach the exponent (up to infinity).
  const uint32_t odd = (x >> 16) & 1u;
  return static_cast<uint16_t>((x + 0x7FFFu + odd) >> 16);
}

float bf16_bits_to_f32(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

namespace {

// One pass: 4n bytes read, 2n written (or the reverse); a handful of integer operations per element,
// counted as 4 flops.
Work cast_cost(size_t n) {
  return Work{4.0 * static_cast<double>(n), Bytes(static_cast<int64_t>(6 * n)), {}};
}

}  // namespace

void Fp16Compressor::encode(const BufferView& in, const BufferView& out) {
  if (!check_encode(*this, in, out)) return;
  if (on_device(in, out)) {
    device_kernels(*this, in, out).f32_to_f16(in, out.reinterpret(DType::kF16));
    return;
  }
  compress_kernels::fp16_encode(in.as<float>().data(), in.count(), out.as<uint8_t>().data());
}

void Fp16Compressor::decode(const BufferView& in, const BufferView& out) {
  if (!check_decode(*this, in, out)) return;
  if (on_device(in, out)) {
    device_kernels(*this, in, out).f16_to_f32(in.reinterpret(DType::kF16), out);
    return;
  }
  compress_kernels::fp16_decode(in.as<uint8_t>().data(), out.count(), out.as<float>().data());
}

Work Fp16Compressor::encode_cost(size_t n) const {
  return cast_cost(n);
}
Work Fp16Compressor::decode_cost(size_t n) const {
  return cast_cost(n);
}

void Bf16Compressor::encode(const BufferView& in, const BufferView& out) {
  if (!check_encode(*this, in, out)) return;
  if (on_device(in, out)) no_device_kernel(*this);
  compress_kernels::bf16_encode(in.as<float>().data(), in.count(), out.as<uint8_t>().data());
}

void Bf16Compressor::decode(const BufferView& in, const BufferView& out) {
  if (!check_decode(*this, in, out)) return;
  if (on_device(in, out)) no_device_kernel(*this);
  compress_kernels::bf16_decode(in.as<uint8_t>().data(), out.count(), out.as<float>().data());
}

Work Bf16Compressor::encode_cost(size_t n) const {
  return cast_cost(n);
}
Work Bf16Compressor::decode_cost(size_t n) const {
  return cast_cost(n);
}

}  // namespace bagua
