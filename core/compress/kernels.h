// The compressors' host kernels, vectorised: the functions of core/compress/reference.h with the same
// arguments and bit-identical results, at memory speed. Each is multiversioned (core/compress/simd.h):
// AVX2 where the CPU has it, the x86-64 baseline otherwise; the hottest loops also have intrinsics
// versions for AVX2 (with FMA, F16C) and AVX-512 (kernels_x86.h), taken at the level isa() names.
//
// Where the reference's result depends on the order of its operations, the kernels compute in another
// order only where the result provably cannot differ, and fall back to the reference where it could:
//   - min/max: the minimum of a set of floats does not depend on the order in which it is taken,
//     except for which zero (+0 or -0) wins among equal zeros, and for NaN (which the reference keeps
//     only when it is the first element — every lane starts from it — and so do the kernels). A chunk
//     whose min or max is a zero is redone by the reference.
//   - sums of |x| (sign's scale) and of x^2 (QSGD's norm, each square exact in double): both the
//     reference's sequential double sum and the kernels' sum in 32 lanes lie within a relative
//     gamma_n = n u / (1 - n u) of the exact sum (u = 2^-53, non-negative terms; Higham, "Accuracy and
//     Stability of Numerical Algorithms", 2nd ed., section 4.2). The stored f32 is a monotone function
//     of the sum, so where the kernel's sum widened by twice that bound (and a margin) maps to one f32,
//     the reference's sum maps to it too; otherwise (about 2^-10 of chunks at n = 2^18) the chunk is
//     summed by the reference. A non-finite sum is always redone by the reference.
//   - minmax_uint8's decode (q + lower_bound) / scale: a chunk's decoded values depend on its byte q
//     alone, so the fast form (a reciprocal and one fused Newton step) is run on all 256 bytes and
//     compared bit for bit with the division; a chunk whose grid differs anywhere (underflow,
//     overflow, a zero or infinite scale) is decoded by the division.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace bagua::compress_kernels {

// The instruction-set level of the kernels written with intrinsics (kernels_x86.h): the x86-64
// baseline (the vectors of simd.h, multiversioned), AVX2 with FMA and F16C, or AVX-512 (F, BW, DQ,
// VL, with BMI2). Chosen once from the CPU's features; tests lower it to run every level the CPU has.
enum class Isa { kBaseline, kAvx2, kAvx512 };
std::string to_string(Isa isa);
Isa cpu_isa();  // the highest level this CPU runs
Isa isa();      // the level in use: cpu_isa() unless lowered
// Use at most `level` (never above cpu_isa()); returns the level now in use.
Isa limit_isa(Isa level);

std::pair<float, float> chunk_min_max(const float* x, size_t len);
void minmax_uint8_encode(const float* x, size_t n, size_t chunk_size, uint8_t* y);
void minmax_uint8_decode(const uint8_t* y, size_t n, size_t chunk_size, float* x);

float sign_scale(const float* x, size_t len);
void sign_encode(const float* x, size_t n, size_t chunk_size, uint8_t* y);
void sign_decode(const uint8_t* y, size_t n, size_t chunk_size, float* x);

void fp16_encode(const float* x, size_t n, uint8_t* y);
void fp16_decode(const uint8_t* y, size_t n, float* x);
void bf16_encode(const float* x, size_t n, uint8_t* y);
void bf16_decode(const uint8_t* y, size_t n, float* x);

void topk_encode(const float* x, size_t n, size_t k, uint8_t* y, std::vector<uint32_t>& candidates);

void qsgd_encode(const float* x, size_t n, size_t chunk_size, uint32_t levels, uint64_t seed,
                 uint64_t step, uint8_t* y);
void qsgd_decode(const uint8_t* y, size_t n, size_t chunk_size, uint32_t levels, float* x);

void add_scaled(const float* x, float a, const float* e, size_t n, float* out);

// Error feedback's step fused (Compressor::encode_residual): encode `corrected` into y, then
// corrected := corrected + a D(y), element by element, in fewer passes than encode, decode and
// add_scaled; the same bytes and floats as those three. `a` is -1, taken as an argument as add_scaled
// takes it: the reference multiplies by it, which keeps a NaN's sign, where a literal -1 would let the
// compiler fold the product into a negation, which flips it.
void sign_encode_residual(float* corrected, size_t n, size_t chunk_size, float a, uint8_t* y);
void minmax_uint8_encode_residual(float* corrected, size_t n, size_t chunk_size, float a, uint8_t* y);
// Error feedback's whole step around sign: e := x + one e in the scales' pass (at AVX-512; before it
// elsewhere), then sign_encode_residual's second pass.
void sign_encode_feedback(const float* x, float one, float* e, size_t n, size_t chunk_size, float a,
                          uint8_t* y);
// Error feedback's whole step around minmax_uint8 in two passes: e := x + one e (add_scaled's
// operations, `one` = 1) with each chunk's min and max taken on the way, then
// minmax_uint8_encode_residual's second pass on e (the same bytes and floats as add_scaled followed by
// minmax_uint8_encode_residual).
void minmax_uint8_encode_feedback(const float* x, float one, float* e, size_t n, size_t chunk_size,
                                  float a, uint8_t* y);
void topk_encode_residual(float* corrected, size_t n, size_t k, float a, uint8_t* y,
                          std::vector<uint32_t>& candidates);
// Error feedback's whole step around top-k: e := x + one e in the candidates' pass (at AVX-512;
// before it elsewhere), then topk_encode_residual's update of the kept elements.
void topk_encode_feedback(const float* x, float one, float* e, size_t n, size_t k, float a, uint8_t* y,
                          std::vector<uint32_t>& candidates);

}  // namespace bagua::compress_kernels
