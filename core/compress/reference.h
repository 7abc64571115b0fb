// The scalar reference of every host kernel (core/compress/kernels.h has the same functions, fast): one
// element at a time, in element order, exactly the arithmetic each compressor's header specifies. The
// compressors run the fast kernels; tests check that those give these functions' bytes bit for bit,
// on random inputs and on the edge cases (NaN, infinities, zeros of either sign, all-equal chunks, odd
// lengths, unaligned pointers).
//
// Arguments as the compressors pass them: x holds n float32 elements, y the encoding
// (encoded_bytes(n) bytes, layout in the compressor's header); chunk_size 0 means one chunk.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace bagua::compress_reference {

// minmax_uint8.h. The chunk's (min, max) as cub's Min and Max reductions give them, in eight lanes.
std::pair<float, float> chunk_min_max(const float* x, size_t len);
void minmax_uint8_encode(const float* x, size_t n, size_t chunk_size, uint8_t* y);
void minmax_uint8_decode(const uint8_t* y, size_t n, size_t chunk_size, float* x);

// sign.h. The scale of a chunk: f32(sum in double of |x|, in element order / len).
float sign_scale(const float* x, size_t len);
void sign_encode(const float* x, size_t n, size_t chunk_size, uint8_t* y);
void sign_decode(const uint8_t* y, size_t n, size_t chunk_size, float* x);

// cast.h: two bytes per element.
void fp16_encode(const float* x, size_t n, uint8_t* y);
void fp16_decode(const uint8_t* y, size_t n, float* x);
void bf16_encode(const float* x, size_t n, uint8_t* y);
void bf16_decode(const uint8_t* y, size_t n, float* x);

// topk.h, k in [1, n]; `candidates` is scratch.
void topk_encode(const float* x, size_t n, size_t k, uint8_t* y, std::vector<uint32_t>& candidates);

// qsgd.h: s = levels, the draws of Rng::for_step(seed, step).
void qsgd_encode(const float* x, size_t n, size_t chunk_size, uint32_t levels, uint64_t seed,
                 uint64_t step, uint8_t* y);
void qsgd_decode(const uint8_t* y, size_t n, size_t chunk_size, uint32_t levels, float* x);

// error_feedback.h: out = x + a e, element by element (the float operations of axpy).
void add_scaled(const float* x, float a, const float* e, size_t n, float* out);

}  // namespace bagua::compress_reference
