// CUDA kernels of the device space and of the device compressor kernels, behind plain launch functions.
//
// This header is the boundary between the C++20 code of the runtime and the CUDA translation unit
// (kernels.cu, compiled by nvcc in its own dialect): it includes nothing from core/ and passes raw
// device pointers, element counts and layout constants.
//
// Every launcher enqueues its kernels on `stream` and returns the status of the launches (cudaSuccess
// when nothing had to be launched, e.g. n = 0); the caller checks it and synchronizes. Pointers are
// device pointers of the current device. f32/f64 pointers must be aligned to their element size (views
// of typed buffers are); byte streams (encodings, fp16 patterns) may start at any byte.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace bagua::runtime::nccl::kernels {

enum class Element : int { kF32, kF64, kI32, kI64 };
enum class Combine : int { kSum, kMin, kMax };

// dst[i] := dst[i] (combine) src[i]; min and max as std::min(dst, src) / std::max(dst, src).
cudaError_t reduce(Element type, Combine combine, void* dst, const void* src, size_t n,
                   cudaStream_t stream);
// x[i] := a * x[i]
cudaError_t scale_f32(float* x, float a, size_t n, cudaStream_t stream);
cudaError_t scale_f64(double* x, double a, size_t n, cudaStream_t stream);
// y[i] := y[i] + a * x[i], the product rounded before the sum (no fused multiply-add, as on the host).
cudaError_t axpy_f32(float* y, float a, const float* x, size_t n, cudaStream_t stream);
cudaError_t axpy_f64(double* y, double a, const double* x, size_t n, cudaStream_t stream);
// Each of the n elements of `element_bytes` (1, 2, 4 or 8) bytes := the low bytes of `pattern`.
cudaError_t fill(void* x, size_t element_bytes, uint64_t pattern, size_t n, cudaStream_t stream);

// The MinMax uint8 record layout (core/compress/minmax_uint8.h), passed in by the caller so that the
// constants have one home.
struct MinMaxLayout {
  float eps;            // added to max - min
  size_t header_bytes;  // min, max, zeros
  size_t align_bytes;   // a record's data is padded to a multiple of this
};
// n f32 -> the chunked encoding (chunk > 0 elements per record).
cudaError_t minmax_u8_encode(const float* in, size_t n, size_t chunk, const MinMaxLayout& layout,
                             uint8_t* out, cudaStream_t stream);
cudaError_t minmax_u8_decode(const uint8_t* in, size_t n, size_t chunk, const MinMaxLayout& layout,
                             float* out, cudaStream_t stream);

// 1-bit sign with a per-chunk scale (core/compress/sign.h).
cudaError_t sign_encode(const float* in, size_t n, size_t chunk, uint8_t* out, cudaStream_t stream);
cudaError_t sign_decode(const uint8_t* in, size_t n, size_t chunk, float* out, cudaStream_t stream);

// f32 <-> IEEE binary16 bit patterns, little-endian, 2 bytes per element (core/compress/cast.h).
cudaError_t f32_to_f16(const float* in, size_t n, uint8_t* out, cudaStream_t stream);
cudaError_t f16_to_f32(const uint8_t* in, size_t n, float* out, cudaStream_t stream);

}  // namespace bagua::runtime::nccl::kernels
