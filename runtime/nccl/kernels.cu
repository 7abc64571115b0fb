// The CUDA kernels behind kernels.h.
//
// Bit-exactness. The compressor kernels reproduce the host compressors' bytes (core/compress), so every
// floating-point step is written with an explicitly rounded intrinsic (__fmul_rn, __fadd_rn, __fdiv_rn,
// __ddiv_rn, ...): nvcc would otherwise fuse a multiply and an add into one FMA, which rounds once
// where the host rounds twice. Denormals are kept (nvcc's default, no -ftz) and rintf rounds to nearest
// even, as the host's rint_even does.
//
// MinMax uint8 follows the arithmetic of Bagua's compress_float_to_uint8 / decompress_uint8_to_float
// (BaguaSys/bagua, rust/bagua-core/bagua-core-internal/kernels/bagua_kernels.cu), as restated in
// core/compress/minmax_uint8.h; the code here is written from that header.
//
// Shape of the work. Element-wise kernels run a grid-stride loop over the elements. The per-chunk
// reductions (MinMax's min and max, sign's mean |x|) give one block to a chunk at a time, each thread
// folding a strided share and the block combining the threads' partial results in shared memory. The
// quantizing passes cut each chunk into tiles of kTile elements, one block per tile, so that a single
// large chunk still spreads over the whole GPU.
#include <cuda_runtime.h>

#include "runtime/nccl/kernels.h"

namespace bagua::runtime::nccl::kernels {

namespace {

constexpr int kThreads = 256;         // threads per block; a power of two (block reductions halve it)
constexpr size_t kMaxBlocks = 65535;  // grid cap (valid in every grid dimension); loops stride past it
constexpr size_t kTile = 4096;        // elements of a chunk quantized by one block (16 per thread)
constexpr size_t kNone = ~size_t{0};  // "no element" in a block reduction

unsigned blocks_for(size_t items, size_t per_block) {
  size_t blocks = (items + per_block - 1) / per_block;
  if (blocks > kMaxBlocks) blocks = kMaxBlocks;
  return blocks == 0 ? 1u : static_cast<unsigned>(blocks);
}

__host__ __device__ size_t smaller(size_t a, size_t b) {
  return a < b ? a : b;
}
__host__ __device__ size_t align_up(size_t a, size_t b) {
  return (a + b - 1) / b * b;
}

__device__ size_t first_index() {
  return blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
}
__device__ size_t grid_stride() {
  return static_cast<size_t>(gridDim.x) * blockDim.x;
}

// IEEE comparison: true only for NaN (no fast-math here, so the compiler keeps it).
__device__ bool is_nan(float v) {
  return v != v;
}

// Little-endian f32 at any byte address (encodings are byte streams).
__device__ float load_f32(const uint8_t* p) {
  const uint32_t u = static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
                     static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
  return __uint_as_float(u);
}
__device__ void store_f32(uint8_t* p, float v) {
  const uint32_t u = __float_as_uint(v);
  p[0] = static_cast<uint8_t>(u);
  p[1] = static_cast<uint8_t>(u >> 8);
  p[2] = static_cast<uint8_t>(u >> 16);
  p[3] = static_cast<uint8_t>(u >> 24);
}

// ---- Space operations -------------------------------------------------------------------------------

template <class T, Combine C>
__global__ void reduce_kernel(T* dst, const T* src, size_t n) {
  for (size_t i = first_index(); i < n; i += grid_stride()) {
    const T d = dst[i];
    const T s = src[i];
    if constexpr (C == Combine::kSum)
      dst[i] = d + s;
    else if constexpr (C == Combine::kMin)
      dst[i] = s < d ? s : d;  // std::min(d, s)
    else
      dst[i] = d < s ? s : d;  // std::max(d, s)
  }
}

template <class T, Combine C>
cudaError_t launch_reduce(void* dst, const void* src, size_t n, cudaStream_t stream) {
  reduce_kernel<T, C><<<blocks_for(n, kThreads), kThreads, 0, stream>>>(static_cast<T*>(dst),
                                                                        static_cast<const T*>(src), n);
  return cudaGetLastError();
}

template <class T>
cudaError_t launch_reduce_typed(Combine combine, void* dst, const void* src, size_t n,
                                cudaStream_t stream) {
  switch (combine) {
    case Combine::kSum:
      return launch_reduce<T, Combine::kSum>(dst, src, n, stream);
    case Combine::kMin:
      return launch_reduce<T, Combine::kMin>(dst, src, n, stream);
    case Combine::kMax:
      return launch_reduce<T, Combine::kMax>(dst, src, n, stream);
  }
  return cudaErrorInvalidValue;
}

__global__ void scale_f32_kernel(float* x, float a, size_t n) {
  for (size_t i = first_index(); i < n; i += grid_stride())
    x[i] = __fmul_rn(x[i], a);
}
__global__ void scale_f64_kernel(double* x, double a, size_t n) {
  for (size_t i = first_index(); i < n; i += grid_stride())
    x[i] = __dmul_rn(x[i], a);
}
__global__ void axpy_f32_kernel(float* y, float a, const float* x, size_t n) {
  for (size_t i = first_index(); i < n; i += grid_stride())
    y[i] = __fadd_rn(y[i], __fmul_rn(a, x[i]));
}
__global__ void axpy_f64_kernel(double* y, double a, const double* x, size_t n) {
  for (size_t i = first_index(); i < n; i += grid_stride())
    y[i] = __dadd_rn(y[i], __dmul_rn(a, x[i]));
}

template <class U>
__global__ void fill_kernel(U* x, U value, size_t n) {
  for (size_t i = first_index(); i < n; i += grid_stride())
    x[i] = value;
}

template <class U>
cudaError_t launch_fill(void* x, uint64_t pattern, size_t n, cudaStream_t stream) {
  fill_kernel<U><<<blocks_for(n, kThreads), kThreads, 0, stream>>>(static_cast<U*>(x),
                                                                   static_cast<U>(pattern), n);
  return cudaGetLastError();
}

// ---- MinMax uint8 -----------------------------------------------------------------------------------

// One element's value and index, or none (index kNone).
struct Extreme {
  float value;
  size_t index;
};

// The extreme the host's left-to-right scan keeps: it replaces its running minimum (maximum) only by a
// strictly smaller (larger) element, so it ends with the earliest of the elements equal to the extreme
// value (-0 and +0 are equal). Preferring, between equal values, the smaller index makes this
// combination associative and commutative, so a block may combine partial results in any order. NaN
// never enters.
template <bool kMax>
__device__ Extreme pick(const Extreme& a, const Extreme& b) {
  if (a.index == kNone) return b;
  if (b.index == kNone) return a;
  const bool b_beyond = kMax ? a.value < b.value : b.value < a.value;
  const bool a_beyond = kMax ? b.value < a.value : a.value < b.value;
  if (b_beyond) return b;
  if (a_beyond) return a;
  return b.index < a.index ? b : a;
}

struct Levels {
  float scale;
  float upper_bound;
  float lower_bound;
};

// MinMaxUint8Compressor::levels, operation for operation.
__device__ Levels levels_of(float min_value, float max_value, float eps) {
  Levels l;
  const float range = __fadd_rn(__fsub_rn(max_value, min_value), eps);
  l.scale = __double2float_rn(__ddiv_rn(255.0, static_cast<double>(range)));
  l.upper_bound = rintf(__fmul_rn(max_value, l.scale));
  l.lower_bound = __double2float_rn(__dsub_rn(static_cast<double>(l.upper_bound), 255.0));
  return l;
}

// Record geometry shared by the MinMax kernels.
struct Records {
  size_t n;                // elements
  size_t chunk;            // elements per chunk
  size_t chunks;           // number of chunks (records)
  size_t stride;           // bytes between records
  size_t header_bytes;     // bytes before a record's data
  size_t align_bytes;      // data padding
  size_t tiles_per_chunk;  // ceil(chunk / kTile)
};

Records records_of(size_t n, size_t chunk, const MinMaxLayout& layout) {
  Records r;
  r.n = n;
  r.chunk = chunk == 0 ? n : chunk;
  r.chunks = (n + r.chunk - 1) / r.chunk;
  r.header_bytes = layout.header_bytes;
  r.align_bytes = layout.align_bytes;
  r.stride = layout.header_bytes + align_up(r.chunk, layout.align_bytes);
  r.tiles_per_chunk = (r.chunk + kTile - 1) / kTile;
  return r;
}

// Tile `tile` of the quantizing passes: chunk `chunk`, whose elements start at `begin`, and the
// chunk's elements [first, end) that the tile covers; empty (first >= end) for a tile past the end of
// a short last chunk.
struct Tile {
  size_t chunk;
  size_t begin;
  size_t first;
  size_t end;
};

__device__ Tile tile_of(const Records& r, size_t tile) {
  Tile t;
  t.chunk = tile / r.tiles_per_chunk;
  t.begin = t.chunk * r.chunk;
  t.first = (tile % r.tiles_per_chunk) * kTile;
  t.end = smaller(smaller(r.chunk, r.n - t.begin), t.first + kTile);
  return t;
}

// One block per chunk: its min and max (as the host scan finds them) into the record's header, and the
// record's zero bytes (header after min and max, padding after the data).
__global__ void minmax_headers(const float* in, Records r, uint8_t* out) {
  __shared__ Extreme lows[kThreads];
  __shared__ Extreme highs[kThreads];
  const int t = static_cast<int>(threadIdx.x);
  for (size_t i = blockIdx.x; i < r.chunks; i += gridDim.x) {
    const size_t begin = i * r.chunk;
    const size_t len = smaller(r.chunk, r.n - begin);
    const float* x = in + begin;
    Extreme low{0.0f, kNone};
    Extreme high{0.0f, kNone};
    for (size_t j = static_cast<size_t>(t); j < len; j += kThreads) {
      const float v = x[j];
      if (is_nan(v)) continue;  // never replaces the host's running extremes
      low = pick<false>(low, Extreme{v, j});
      high = pick<true>(high, Extreme{v, j});
    }
    lows[t] = low;
    highs[t] = high;
    __syncthreads();
    for (int half = kThreads / 2; half > 0; half /= 2) {
      if (t < half) {
        lows[t] = pick<false>(lows[t], lows[t + half]);
        highs[t] = pick<true>(highs[t], highs[t + half]);
      }
      __syncthreads();
    }
    uint8_t* record = out + i * r.stride;
    if (t == 0) {
      float min_value = lows[0].value;
      float max_value = highs[0].value;
      // A NaN first element is the host scan's starting value, and no comparison with NaN replaces it.
      if (is_nan(x[0])) min_value = max_value = x[0];
      store_f32(record, min_value);
      store_f32(record + 4, max_value);
    }
    for (size_t b = 8 + static_cast<size_t>(t); b < r.header_bytes; b += kThreads)
      record[b] = 0;
    const size_t padded = align_up(len, r.align_bytes);
    for (size_t b = len + static_cast<size_t>(t); b < padded; b += kThreads)
      record[r.header_bytes + b] = 0;
    __syncthreads();  // lows and highs are reused for the next chunk
  }
}

// One block per tile of a chunk: q_j = min(rint(x_j scale), upper_bound) - lower_bound, saturated.
__global__ void minmax_quantize(const float* in, Records r, float eps, uint8_t* out) {
  __shared__ Levels shared_levels;
  const size_t tiles = r.chunks * r.tiles_per_chunk;
  for (size_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const Tile s = tile_of(r, tile);
    if (s.first >= s.end)
      continue;  // past the end of a short last chunk (the same for the whole block)
    uint8_t* record = out + s.chunk * r.stride;
    __syncthreads();  // every thread has read the previous tile's levels
    if (threadIdx.x == 0) shared_levels = levels_of(load_f32(record), load_f32(record + 4), eps);
    __syncthreads();
    const Levels l = shared_levels;
    for (size_t j = s.first + threadIdx.x; j < s.end; j += kThreads) {
      float level = rintf(__fmul_rn(in[s.begin + j], l.scale));
      level = level < l.upper_bound ? level : l.upper_bound;  // a NaN level becomes the bound
      const float v = __fsub_rn(level, l.lower_bound);
      record[r.header_bytes + j] = v >= 255.0f ? uint8_t{255}
                                   : v > 0.0f  ? static_cast<uint8_t>(v)
                                               : uint8_t{0};
    }
  }
}

// One block per tile of a chunk: x_j = (q_j + lower_bound) / scale.
__global__ void minmax_dequantize(const uint8_t* in, Records r, float eps, float* out) {
  __shared__ Levels shared_levels;
  const size_t tiles = r.chunks * r.tiles_per_chunk;
  for (size_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const Tile s = tile_of(r, tile);
    if (s.first >= s.end) continue;
    const uint8_t* record = in + s.chunk * r.stride;
    __syncthreads();
    if (threadIdx.x == 0) shared_levels = levels_of(load_f32(record), load_f32(record + 4), eps);
    __syncthreads();
    const Levels l = shared_levels;
    for (size_t j = s.first + threadIdx.x; j < s.end; j += kThreads)
      out[s.begin + j] =
          __fdiv_rn(__fadd_rn(static_cast<float>(record[r.header_bytes + j]), l.lower_bound), l.scale);
  }
}

// ---- Sign -------------------------------------------------------------------------------------------

// One block per chunk: f32(sum of |x| / len), the sum in double (in a tree order, not the host's).
__global__ void sign_scales(const float* in, size_t n, size_t chunk, size_t chunks, uint8_t* out) {
  __shared__ double sums[kThreads];
  const int t = static_cast<int>(threadIdx.x);
  for (size_t i = blockIdx.x; i < chunks; i += gridDim.x) {
    const size_t begin = i * chunk;
    const size_t len = smaller(chunk, n - begin);
    double sum = 0;
    for (size_t j = static_cast<size_t>(t); j < len; j += kThreads)
      sum = __dadd_rn(sum, static_cast<double>(fabsf(in[begin + j])));
    sums[t] = sum;
    __syncthreads();
    for (int half = kThreads / 2; half > 0; half /= 2) {
      if (t < half) sums[t] = __dadd_rn(sums[t], sums[t + half]);
      __syncthreads();
    }
    if (t == 0) store_f32(out + 4 * i, __double2float_rn(__ddiv_rn(sums[0], static_cast<double>(len))));
    __syncthreads();  // sums is reused for the next chunk
  }
}

// Byte b holds the signs of elements 8b .. 8b + 7, least significant bit first; 1 for x >= 0.
__global__ void sign_bits(const float* in, size_t n, uint8_t* bits) {
  const size_t bytes = (n + 7) / 8;
  for (size_t b = first_index(); b < bytes; b += grid_stride()) {
    unsigned byte = 0;
    for (size_t k = 0; k < 8 && 8 * b + k < n; ++k)
      byte |= (in[8 * b + k] >= 0.0f ? 1u : 0u) << k;
    bits[b] = static_cast<uint8_t>(byte);
  }
}

__global__ void sign_expand(const uint8_t* in, size_t n, size_t chunk, size_t chunks, float* out) {
  const uint8_t* bits = in + 4 * chunks;
  for (size_t e = first_index(); e < n; e += grid_stride()) {
    const float scale = load_f32(in + 4 * (e / chunk));
    out[e] = ((bits[e / 8] >> (e % 8)) & 1u) ? scale : -scale;
  }
}

// ---- fp16 -------------------------------------------------------------------------------------------

// f32_to_f16_bits of core/compress/cast.cc, step for step (round to nearest even over the whole range).
__device__ uint16_t f32_to_f16_bits(float f) {
  const uint32_t x = __float_as_uint(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t magnitude = x & 0x7FFFFFFFu;
  if (magnitude >= 0x7F800000u) {  // inf or NaN
    if (magnitude == 0x7F800000u) return static_cast<uint16_t>(sign | 0x7C00u);
    return static_cast<uint16_t>(sign | 0x7E00u | ((magnitude >> 13) & 0x3FFu));  // quiet NaN
  }
  if (magnitude >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // >= 65520: infinity
  if (magnitude >= 0x38800000u) {                                              // a normal half
    const uint32_t odd = (magnitude >> 13) & 1u;
    return static_cast<uint16_t>(sign | ((magnitude - (112u << 23) + 0xFFFu + odd) >> 13));
  }
  // A subnormal half or zero: the magnitude in units of 2^-24 (exact scaling), rounded to nearest even.
  const float units = rintf(__fmul_rn(__uint_as_float(magnitude), 0x1p24f));
  return static_cast<uint16_t>(sign | static_cast<uint32_t>(units));
}

__device__ float f16_bits_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  const uint32_t fraction = h & 0x3FFu;
  if (exponent == 0) {  // zero or subnormal: fraction * 2^-24, exact
    const float magnitude = __fmul_rn(static_cast<float>(fraction), 0x1p-24f);
    return __uint_as_float(sign | __float_as_uint(magnitude));
  }
  if (exponent == 0x1F) return __uint_as_float(sign | 0x7F800000u | (fraction << 13));  // inf, NaN
  return __uint_as_float(sign | ((exponent + 112u) << 23) | (fraction << 13));
}

__global__ void f32_to_f16_kernel(const float* in, size_t n, uint8_t* out) {
  for (size_t i = first_index(); i < n; i += grid_stride()) {
    const uint16_t h = f32_to_f16_bits(in[i]);
    out[2 * i] = static_cast<uint8_t>(h);
    out[2 * i + 1] = static_cast<uint8_t>(h >> 8);
  }
}

__global__ void f16_to_f32_kernel(const uint8_t* in, size_t n, float* out) {
  for (size_t i = first_index(); i < n; i += grid_stride()) {
    const uint16_t h = static_cast<uint16_t>(in[2 * i] | (in[2 * i + 1] << 8));
    out[i] = f16_bits_to_f32(h);
  }
}

}  // namespace

// ---- Launchers --------------------------------------------------------------------------------------
// Each clears a stale (non-sticky) error status first, so that the status it returns is its launch's.

cudaError_t reduce(Element type, Combine combine, void* dst, const void* src, size_t n,
                   cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  (void)cudaGetLastError();
  switch (type) {
    case Element::kF32:
      return launch_reduce_typed<float>(combine, dst, src, n, stream);
    case Element::kF64:
      return launch_reduce_typed<double>(combine, dst, src, n, stream);
    case Element::kI32:
      return launch_reduce_typed<int32_t>(combine, dst, src, n, stream);
    case Element::kI64:
      return launch_reduce_typed<int64_t>(combine, dst, src, n, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t scale_f32(float* x, float a, size_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  (void)cudaGetLastError();
  scale_f32_kernel<<<blocks_for(n, kThreads), kThreads, 0, stream>>>(x, a, n);
  return cudaGetLastError();
}

cudaError_t scale_f64(double* x, double a, size_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  (void)cudaGetLastError();
  scale_f64_kernel<<<blocks_for(n, kThreads), kThreads, 0, stream>>>(x, a, n);
  return cudaGetLastError();
}

cudaError_t axpy_f32(float* y, float a, const float* x, size_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  (void)cudaGetLastError();
  axpy_f32_kernel<<<blocks_for(n, kThreads), kThreads, 0, stream>>>(y, a, x, n);
  return cudaGetLastError();
}

cudaError_t axpy_f64(double* y, double a, const double* x, size_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  (void)cudaGetLastError();
  axpy_f64_kernel<<<blocks_for(n, kThreads), kThreads, 0, stream>>>(y, a, x, n);
  return cudaGetLastError();
}

cudaError_t fill(void* x, size_t element_bytes, uint64_t pattern, size_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  (void)cudaGetLastError();
  switch (element_bytes) {
    case 1:
      return launch_fill<uint8_t>(x, pattern, n, stream);
    case 2:
      return launch_fill<uint16_t>(x, pattern, n, stream);
    case 4:
      return launch_fill<uint32_t>(x, pattern, n, stream);
    case 8:
      return launch_fill<unsigned long long>(x, pattern, n, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t minmax_u8_encode(const float* in, size_t n, size_t chunk, const MinMaxLayout& layout,
                             uint8_t* out, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (layout.header_bytes < 8 || layout.align_bytes == 0) return cudaErrorInvalidValue;
  const Records r = records_of(n, chunk, layout);
  (void)cudaGetLastError();
  minmax_headers<<<blocks_for(r.chunks, 1), kThreads, 0, stream>>>(in, r, out);
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) return status;
  // Stream order: the quantizing pass reads the headers written above.
  minmax_quantize<<<blocks_for(r.chunks * r.tiles_per_chunk, 1), kThreads, 0, stream>>>(
      in, r, layout.eps, out);
  return cudaGetLastError();
}

cudaError_t minmax_u8_decode(const uint8_t* in, size_t n, size_t chunk, const MinMaxLayout& layout,
                             float* out, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (layout.header_bytes < 8 || layout.align_bytes == 0) return cudaErrorInvalidValue;
  const Records r = records_of(n, chunk, layout);
  (void)cudaGetLastError();
  minmax_dequantize<<<blocks_for(r.chunks * r.tiles_per_chunk, 1), kThreads, 0, stream>>>(
      in, r, layout.eps, out);
  return cudaGetLastError();
}

cudaError_t sign_encode(const float* in, size_t n, size_t chunk, uint8_t* out, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (chunk == 0) chunk = n;
  const size_t chunks = (n + chunk - 1) / chunk;
  (void)cudaGetLastError();
  sign_scales<<<blocks_for(chunks, 1), kThreads, 0, stream>>>(in, n, chunk, chunks, out);
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) return status;
  sign_bits<<<blocks_for((n + 7) / 8, kThreads), kThreads, 0, stream>>>(in, n, out + 4 * chunks);
  return cudaGetLastError();
}

cudaError_t sign_decode(const uint8_t* in, size_t n, size_t chunk, float* out, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (chunk == 0) chunk = n;
  const size_t chunks = (n + chunk - 1) / chunk;
  (void)cudaGetLastError();
  sign_expand<<<blocks_for(n, kThreads), kThreads, 0, stream>>>(in, n, chunk, chunks, out);
  return cudaGetLastError();
}

cudaError_t f32_to_f16(const float* in, size_t n, uint8_t* out, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  (void)cudaGetLastError();
  f32_to_f16_kernel<<<blocks_for(n, kThreads), kThreads, 0, stream>>>(in, n, out);
  return cudaGetLastError();
}

cudaError_t f16_to_f32(const uint8_t* in, size_t n, float* out, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  (void)cudaGetLastError();
  f16_to_f32_kernel<<<blocks_for(n, kThreads), kThreads, 0, stream>>>(in, n, out);
  return cudaGetLastError();
}

}  // namespace bagua::runtime::nccl::kernels
