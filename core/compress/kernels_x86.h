// The compressors' host kernels written with x86 intrinsics for two instruction-set levels above the
// baseline that core/compress/simd.h's vectors reach: AVX2 (with FMA and F16C, which every AVX2 CPU
// has) and AVX-512 (F, BW, DQ, VL, with BMI2). Each function is compiled for its level only (a target
// attribute, not a flag of the whole build) and called by core/compress/kernels.cc only when the CPU
// has that level (compress_kernels::isa()), so one binary runs on any x86-64.
//
// Terms (minmax_uint8.h): a chunk's `levels` l = (scale, upper_bound, lower_bound); q the byte of an
// element; the decoded value (q + lower_bound) / scale.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "core/compress/minmax_uint8.h"
#include "core/compress/topk_keep.h"

namespace bagua::compress_kernels::x86 {

using Levels = MinMaxUint8Compressor::Levels;

// The min and max of x[0, len) taken lane-wise from x[0] (reference::chunk_min_max's comparisons in
// another order: the caller redoes a chunk whose min or max is a zero, kernels.h).
std::pair<float, float> min_max_avx2(const float* x, size_t len);
std::pair<float, float> min_max_avx512(const float* x, size_t len);

// e := x + one * e over [0, len) (add_scaled's float operations, `one` = 1), and the min and max of
// the new e as min_max_* takes them.
std::pair<float, float> add_min_max_avx2(const float* x, float one, float* e, size_t len);
std::pair<float, float> add_min_max_avx512(const float* x, float one, float* e, size_t len);

// q[j] = the reference's byte of x[j] under l, for j in [0, len).
void quantize_avx2(const float* x, size_t len, const Levels& l, uint8_t* q);
void quantize_avx512(const float* x, size_t len, const Levels& l, uint8_t* q);

// Whether decode_* gives the reference's (q + lower_bound) / scale for every byte q under l: checked
// on all 256 bytes (a chunk's decoded values are a function of its byte alone), so where it holds,
// decode_* is bit-identical on any input of the chunk. The divide is replaced by a product with
// r = 1 / scale and one Newton correction, y = y0 + r (t - y0 scale) with both products fused
// (P. Markstein, "Computation of elementary functions on the IBM RISC System/6000 processor", IBM J.
// Res. Develop. 34(1), 1990: correctly rounded away from underflow and overflow). The exhaustive
// check, not the theorem, guarantees the bits; the tests include grids where it fails.
bool decode_exact_avx2(const Levels& l);
bool decode_exact_avx512(const Levels& l);
void decode_avx2(const uint8_t* q, size_t len, const Levels& l, float* x);
void decode_avx512(const uint8_t* q, size_t len, const Levels& l, float* x);

// Error feedback's second pass (kernels.h's minmax_uint8_encode_residual): q = the byte of e[j], then
// e[j] := e[j] + a D(q), D the fast decode where `fast_decode` (decode_exact_*), else the division.
void quantize_residual_avx2(float* e, size_t len, const Levels& l, float a, bool fast_decode,
                            uint8_t* q);
void quantize_residual_avx512(float* e, size_t len, const Levels& l, float a, bool fast_decode,
                              uint8_t* q);

// cast.cc's f32_to_f16_bits and f16_bits_to_f32 by the F16C conversions (round to nearest even, as
// the reference), a NaN's half pattern kept as the reference writes it.
void fp16_encode_avx2(const float* x, size_t n, uint8_t* y);
void fp16_encode_avx512(const float* x, size_t n, uint8_t* y);
void fp16_decode_avx2(const uint8_t* y, size_t n, float* x);
void fp16_decode_avx512(const uint8_t* y, size_t n, float* x);
// cast.cc's f32_to_bf16_bits sixteen lanes at a time (the baseline's loop runs eight).
void bf16_encode_avx2(const float* x, size_t n, uint8_t* y);
void bf16_encode_avx512(const float* x, size_t n, uint8_t* y);

// top-k (topk.h), AVX-512: the indices of the elements whose key (|x|'s bits, a NaN's counted as
// infinity's) is at least `floor`, in index order, into `index`, and their keys into `keys` (room for
// n each); returns their number, and the largest of their keys and `floor` in *top. The second form
// first makes e := x + one e (add_scaled's operations) and selects from it.
// The first form at AVX2, eight elements a step: `set_bits` is the 256 x 8 table of each 8-bit mask's
// set positions, lowest first (kernels.cc), by which the step's indices and keys are packed to the front.
size_t topk_candidates_avx2(const float* x, size_t n, uint32_t floor, uint32_t* index, uint32_t* keys,
                            uint32_t* top, const uint32_t* set_bits);
size_t topk_candidates_avx512(const float* x, size_t n, uint32_t floor, uint32_t* index, uint32_t* keys,
                              uint32_t* top);
size_t topk_candidates_feedback_avx512(const float* x, float one, float* e, size_t n, uint32_t floor,
                                       uint32_t* index, uint32_t* keys, uint32_t* top);
// Offers the `count` candidates (indices and keys) to `kept` (topk_keep.h), sixteen at a time.
void topk_keep_avx512(const uint32_t* index, const uint32_t* keys, size_t count, const float* x,
                      TopkKept& kept);

// QSGD (qsgd.h), AVX-512 only (its draws are 64-bit multiplies, one instruction there); terms of
// core/compress/qsgd_code.h:
//   - the sum of x^2 in double over 64 lanes, each square exact (24-bit significands), so the fused
//     multiply-add rounds as the product-then-add does (certified by qsgd_certified_norm).
//   - the codes of elements [begin, begin + len) of a chunk of prescale 1 (levels_per_unit finite;
//     element e's draw is number e of the SplitMix64 generator in state s0), sixteen lanes at a time.
//   - reference::qsgd_encode for codes of code_bits <= 8 bits, whose chunks (but the last) have a
//     multiple of 8 elements, chunk by chunk (draw e of the generator in state s0 for element e): its
//     norm (summed as above, certified by qsgd_certified_norm), then its codes while it is in
//     cache, sixteen at a time narrowed to bytes, their low code_bits bits gathered by bit extracts
//     (BMI2 pext), 2 code_bits bytes stored (each chunk starts at a byte).
//   - reference::qsgd_decode for the same encodings, chunk by chunk, sixteen codes at a time widened
//     to 32-bit lanes (for any code_bits by bit deposits, BMI2 pdep), then scaled.
//   - count codes of code_bits <= 8 bits packed into the stream, count a multiple of 8, as above.
double sum_squares_avx512(const float* x, size_t len);
void qsgd_codes_avx512(const float* x, size_t begin, size_t len, float levels_per_unit, float s,
                       int level_bits, uint64_t s0, uint32_t* codes);
void qsgd_encode_avx512(const float* x, size_t n, size_t chunk_size, uint32_t levels, uint64_t s0,
                        uint8_t* y);
void qsgd_decode_avx512(const uint8_t* y, size_t n, size_t chunk_size, uint32_t levels, float* x);
void pack_codes_avx512(const uint32_t* codes, size_t count, int code_bits, uint8_t* stream,
                       const uint8_t* stream_end);

// sign (sign.h), AVX-512: the sum of |x| in double over 64 lanes (kernels.cc certifies the mean from
// it); the same after e := x + one e (add_scaled's operations, `one` = 1), of the new e; and the bytes
// of bits for `bytes` whole bytes (bit k of byte b: x[8b + k] >= 0, false for NaN).
double sum_abs_avx512(const float* x, size_t len);
// The same sums at AVX2: |x| (sign's), x^2 (QSGD's norm).
double sum_abs_avx2(const float* x, size_t len);
double sum_squares_avx2(const float* x, size_t len);
double add_sum_abs_avx512(const float* x, float one, float* e, size_t len);
void sign_bits_avx2(const float* x, size_t bytes, uint8_t* bits);
void sign_bits_avx512(const float* x, size_t bytes, uint8_t* bits);

}  // namespace bagua::compress_kernels::x86
