#include "core/buffer.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <type_traits>

namespace bagua {

std::string to_string(DType t) {
  switch (t) {
    case DType::kF32:
      return "f32";
    case DType::kF64:
      return "f64";
    case DType::kF16:
      return "f16";
    case DType::kBF16:
      return "bf16";
    case DType::kU8:
      return "u8";
    case DType::kI32:
      return "i32";
    case DType::kI64:
      return "i64";
  }
  return "?";
}

std::string to_string(Memory m) {
  switch (m) {
    case Memory::kHost:
      return "host";
    case Memory::kDevice:
      return "device";
    case Memory::kMeta:
      return "meta";
  }
  return "?";
}

std::string to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kMin:
      return "min";
    case ReduceOp::kMax:
      return "max";
  }
  return "?";
}

namespace {

// The host's element-wise kernels. Each is the plain loop (one float operation per element, in element
// order, the same operations as before they were vectorised: d + s, std::min(d, s) = s < d ? s : d,
// std::max(d, s) = d < s ? s : d, y + a x, a x) written on GCC vectors of 32 bytes, so that every
// element gets bit for bit the scalar loop's result. Multiversioned: compiled for AVX2 and for the
// x86-64 baseline, the better one chosen at load time (target_clones), so one binary runs on any
// x86-64. Neither target has FMA, so y + a x is never contracted.
// The vector helpers below are inline and never cross an ABI boundary: GCC's note that passing a
// 32-byte vector without AVX changes the calling convention does not apply to them.
// Not under ThreadSanitizer: GCC instruments the ifunc's resolver too, which the dynamic loader calls
// before TSan's runtime is initialised (the program crashes at load).
#pragma GCC diagnostic ignored "-Wpsabi"
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__ELF__) && \
    !defined(__SANITIZE_THREAD__)
#define BAGUA_HOST_KERNEL __attribute__((target_clones("avx2", "default")))
#else
#define BAGUA_HOST_KERNEL
#endif

template <class T>
struct VecOf;
template <>
struct VecOf<float> {
  typedef float type __attribute__((vector_size(32)));
};
template <>
struct VecOf<double> {
  typedef double type __attribute__((vector_size(32)));
};
template <>
struct VecOf<int32_t> {
  typedef int32_t type __attribute__((vector_size(32)));
};
template <>
struct VecOf<int64_t> {
  typedef int64_t type __attribute__((vector_size(32)));
};
template <class T>
using Vec = typename VecOf<T>::type;

template <class T>
inline Vec<T> load_vec(const T* p) {
  Vec<T> v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class T>
inline void store_vec(T* p, const Vec<T>& v) {
  std::memcpy(p, &v, sizeof v);
}

// d := d op s element-wise; `Op` works on a scalar and on a vector alike.
template <class T, class Op>
inline void elementwise(T* d, const T* s, size_t n, Op op) {
  constexpr size_t kLanes = sizeof(Vec<T>) / sizeof(T);
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    store_vec(d + i, op(load_vec(d + i), load_vec(s + i)));
  for (; i < n; ++i)
    d[i] = op(d[i], s[i]);
}

struct Sum {
  template <class V>
  V operator()(V d, V s) const {
    return d + s;
  }
};
struct Min {  // std::min(d, s)
  template <class V>
  V operator()(V d, V s) const {
    return s < d ? s : d;
  }
};
struct Max {  // std::max(d, s)
  template <class V>
  V operator()(V d, V s) const {
    return d < s ? s : d;
  }
};

template <class T>
inline void reduce_kernel(T* d, const T* s, size_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      elementwise(d, s, n, Sum{});
      break;
    case ReduceOp::kMin:
      elementwise(d, s, n, Min{});
      break;
    case ReduceOp::kMax:
      elementwise(d, s, n, Max{});
      break;
  }
}

BAGUA_HOST_KERNEL void reduce_f32(float* d, const float* s, size_t n, ReduceOp op) {
  reduce_kernel(d, s, n, op);
}
BAGUA_HOST_KERNEL void reduce_f64(double* d, const double* s, size_t n, ReduceOp op) {
  reduce_kernel(d, s, n, op);
}
BAGUA_HOST_KERNEL void reduce_i32(int32_t* d, const int32_t* s, size_t n, ReduceOp op) {
  reduce_kernel(d, s, n, op);
}
BAGUA_HOST_KERNEL void reduce_i64(int64_t* d, const int64_t* s, size_t n, ReduceOp op) {
  reduce_kernel(d, s, n, op);
}

// y := y + a x.
template <class T>
inline void axpy_kernel(T* y, T a, const T* x, size_t n) {
  elementwise(y, x, n, [a](auto yv, auto xv) { return yv + a * xv; });
}
BAGUA_HOST_KERNEL void axpy_f32(float* y, float a, const float* x, size_t n) {
  axpy_kernel(y, a, x, n);
}
BAGUA_HOST_KERNEL void axpy_f64(double* y, double a, const double* x, size_t n) {
  axpy_kernel(y, a, x, n);
}

// x := a x (v *= a).
template <class T>
inline void scale_kernel(T* x, T a, size_t n) {
  elementwise(x, x, n, [a](auto v, auto) { return v * a; });
}
BAGUA_HOST_KERNEL void scale_f32(float* x, float a, size_t n) {
  scale_kernel(x, a, n);
}
BAGUA_HOST_KERNEL void scale_f64(double* x, double a, size_t n) {
  scale_kernel(x, a, n);
}

// The scalar loops, for a source that overlaps its destination at an offset (where loading a vector
// ahead would read elements the scalar loop had already written).
template <class T>
void reduce_scalar(T* d, const T* s, size_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      for (size_t i = 0; i < n; ++i)
        d[i] += s[i];
      break;
    case ReduceOp::kMin:
      for (size_t i = 0; i < n; ++i)
        d[i] = std::min(d[i], s[i]);
      break;
    case ReduceOp::kMax:
      for (size_t i = 0; i < n; ++i)
        d[i] = std::max(d[i], s[i]);
      break;
  }
}
template <class T>
void axpy_scalar(T* y, T a, const T* x, size_t n) {
  for (size_t i = 0; i < n; ++i)
    y[i] += a * x[i];
}

// Whether [a, a + bytes) and [b, b + bytes) overlap without being the same range.
bool overlaps_shifted(const void* a, const void* b, size_t bytes) {
  const auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return pa != pb && pa < pb + bytes && pb < pa + bytes;
}

template <class T>
void reduce_typed(T* d, const T* s, size_t n, ReduceOp op) {
  if (overlaps_shifted(d, s, n * sizeof(T))) {
    reduce_scalar(d, s, n, op);
  } else if constexpr (std::is_same_v<T, float>) {
    reduce_f32(d, s, n, op);
  } else if constexpr (std::is_same_v<T, double>) {
    reduce_f64(d, s, n, op);
  } else if constexpr (std::is_same_v<T, int32_t>) {
    reduce_i32(d, s, n, op);
  } else {
    static_assert(std::is_same_v<T, int64_t>);
    reduce_i64(d, s, n, op);
  }
}

template <class T>
void axpy_typed(T* y, T a, const T* x, size_t n) {
  if (overlaps_shifted(y, x, n * sizeof(T))) {
    axpy_scalar(y, a, x, n);
  } else if constexpr (std::is_same_v<T, float>) {
    axpy_f32(y, a, x, n);
  } else {
    static_assert(std::is_same_v<T, double>);
    axpy_f64(y, a, x, n);
  }
}

// 16-bit floats, reduced as NCCL reduces them (its half and bfloat16 sums): each result is the exact
// operation rounded once to the 16-bit format, to nearest even. fp16 is IEEE binary16, widened exactly
// to float32 and narrowed by rounding (coded here: not every compiler has _Float16 on x86-64); the sum
// of two binary16 values computed in float32 and rounded again is the correctly rounded binary16 sum,
// since float32's 24-bit significand is at least 2 x 11 + 2 bits (double rounding is then innocuous:
// Figueroa, "When is double rounding innocuous?", SIGNUM 1995). bf16 is the top half of a float32,
// widened exactly and narrowed by rounding the lower 16 bits (a NaN stays a quiet NaN).
float f16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t fraction = h & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: fraction x 2^-24, exact in float32
    const float magnitude = static_cast<float>(fraction) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  const uint32_t u = exponent == 0x1fu ? sign | 0x7f800000u | (fraction << 13)
                                       : sign | ((exponent + 112u) << 23) | (fraction << 13);
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
uint16_t float_to_f16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  const auto sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t magnitude = u & 0x7fffffffu;
  if (magnitude > 0x7f800000u)  // NaN: quiet, the top fraction bits kept
    return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520: infinity
  if (magnitude < 0x38800000u) {  // below 2^-14: a subnormal (or zero), fraction = round(|f| x 2^24)
    float a;
    std::memcpy(&a, &magnitude, sizeof a);
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(a * 0x1p24f)));
  }
  const uint32_t rebiased = magnitude - 0x38000000u;  // exponent 127 -> 15
  return static_cast<uint16_t>(sign | ((rebiased + 0x0fffu + ((rebiased >> 13) & 1u)) >> 13));
}
float bf16_to_float(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
// One 16-bit reduction for both formats: widen exactly, reduce in float32, narrow by rounding once.
// For bf16 (8-bit significands) a + b is exact in float32 unless the exponents differ by more than 16,
// where float32 rounding already decides the bf16 result; for fp16 see above.
template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
void reduce_16bit(uint16_t* d, const uint16_t* s, size_t n, ReduceOp op) {
  for (size_t i = 0; i < n; ++i) {
    const float a = Widen(d[i]);
    const float b = Widen(s[i]);
    const float r = op == ReduceOp::kSum   ? a + b
                    : op == ReduceOp::kMin ? std::min(a, b)
                                           : std::max(a, b);
    d[i] = Narrow(r);
  }
}

void check_same_shape(const BufferView& a, const BufferView& b, const char* op) {
  BAGUA_CHECK(a.dtype() == b.dtype(),
              std::string(op) + ": dtype " + to_string(a.dtype()) + " vs " + to_string(b.dtype()));
  BAGUA_CHECK(a.count() == b.count(), std::string(op) + ": count " + std::to_string(a.count()) +
                                          " vs " + std::to_string(b.count()));
}

// Host memory: plain loops the compiler vectorizes.
class HostSpace final : public Space {
 public:
  Memory memory() const override { return Memory::kHost; }
  std::string name() const override { return "host"; }
  void* allocate(size_t bytes) const override {
    // 64-byte alignment for vectorized loops; at least one byte so that an empty buffer has storage.
    const size_t rounded = std::max<size_t>(64, (bytes + 63) / 64 * 64);
    void* p = std::aligned_alloc(64, rounded);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void deallocate(void* p) const override { std::free(p); }
  void copy(const BufferView& dst, const BufferView& src) const override {
    BAGUA_CHECK_EQ(dst.bytes().count(), src.bytes().count(), "copy: byte sizes differ");
    if (src.is_meta() || dst.count() == 0) return;
    BAGUA_CHECK(src.is_host(), "host copy from a " + to_string(src.memory()) + " buffer");
    std::memmove(dst.data(), src.data(), static_cast<size_t>(dst.bytes().count()));
  }
  void reduce(const BufferView& dst, const BufferView& src, ReduceOp op) const override {
    check_same_shape(dst, src, "reduce");
    if (src.is_meta()) return;
    switch (dst.dtype()) {
      case DType::kF32:
        reduce_typed(dst.as<float>().data(), src.as<float>().data(), dst.count(), op);
        break;
      case DType::kF64:
        reduce_typed(dst.as<double>().data(), src.as<double>().data(), dst.count(), op);
        break;
      case DType::kI32:
        reduce_typed(dst.as<int32_t>().data(), src.as<int32_t>().data(), dst.count(), op);
        break;
      case DType::kI64:
        reduce_typed(dst.as<int64_t>().data(), src.as<int64_t>().data(), dst.count(), op);
        break;
      case DType::kF16:
        reduce_16bit<f16_to_float, float_to_f16>(static_cast<uint16_t*>(dst.data()),
                                                 static_cast<const uint16_t*>(src.data()), dst.count(),
                                                 op);
        break;
      case DType::kBF16:
        reduce_16bit<bf16_to_float, float_to_bf16>(static_cast<uint16_t*>(dst.data()),
                                                   static_cast<const uint16_t*>(src.data()),
                                                   dst.count(), op);
        break;
      default:
        BAGUA_CHECK(false, "reduce of dtype " + to_string(dst.dtype()) + " on the host");
    }
  }
  void scale(const BufferView& x, double a) const override {
    if (x.dtype() == DType::kF32) {
      scale_f32(x.as<float>().data(), static_cast<float>(a), x.count());
    } else if (x.dtype() == DType::kF64) {
      scale_f64(x.as<double>().data(), a, x.count());
    } else {
      BAGUA_CHECK(false, "scale of dtype " + to_string(x.dtype()));
    }
  }
  void axpy(const BufferView& y, double a, const BufferView& x) const override {
    check_same_shape(y, x, "axpy");
    if (x.is_meta()) return;
    if (y.dtype() == DType::kF32) {
      axpy_typed(y.as<float>().data(), static_cast<float>(a), x.as<float>().data(), y.count());
    } else if (y.dtype() == DType::kF64) {
      axpy_typed(y.as<double>().data(), a, x.as<double>().data(), y.count());
    } else {
      BAGUA_CHECK(false, "axpy of dtype " + to_string(y.dtype()));
    }
  }
  void fill(const BufferView& x, double v) const override {
    switch (x.dtype()) {
      case DType::kF32:
        std::fill_n(x.as<float>().data(), x.count(), static_cast<float>(v));
        break;
      case DType::kF64:
        std::fill_n(x.as<double>().data(), x.count(), v);
        break;
      case DType::kU8:
        std::fill_n(x.as<uint8_t>().data(), x.count(), static_cast<uint8_t>(v));
        break;
      case DType::kI32:
        std::fill_n(x.as<int32_t>().data(), x.count(), static_cast<int32_t>(v));
        break;
      case DType::kI64:
        std::fill_n(x.as<int64_t>().data(), x.count(), static_cast<int64_t>(v));
        break;
      default:
        BAGUA_CHECK(false, "fill of dtype " + to_string(x.dtype()));
    }
  }
};

// Meta: sizes only. Allocation returns nothing; every data operation is a no-op (shapes still checked).
class MetaSpace final : public Space {
 public:
  Memory memory() const override { return Memory::kMeta; }
  std::string name() const override { return "meta"; }
  void* allocate(size_t) const override { return nullptr; }
  void deallocate(void*) const override {}
  void copy(const BufferView& dst, const BufferView& src) const override {
    BAGUA_CHECK_EQ(dst.bytes().count(), src.bytes().count(), "copy: byte sizes differ");
  }
  void reduce(const BufferView& dst, const BufferView& src, ReduceOp) const override {
    check_same_shape(dst, src, "reduce");
  }
  void scale(const BufferView&, double) const override {}
  void axpy(const BufferView& y, double, const BufferView& x) const override {
    check_same_shape(y, x, "axpy");
  }
  void fill(const BufferView&, double) const override {}
};

// Constant-initialized at namespace scope: no guard on each call, as a function's static would have
// (host_space() is called for every BufferView default-constructed: the simulator's message and
// receive records hold one each).
constinit const HostSpace kHostSpace;
constinit const MetaSpace kMetaSpace;

}  // namespace

const Space& host_space() {
  return kHostSpace;
}

const Space& meta_space() {
  return kMetaSpace;
}

void BufferView::slice_out_of_range(size_t offset, size_t count) const {
  BAGUA_CHECK(offset <= count_ && count <= count_ - offset,
              "slice [" + std::to_string(offset) + ", +" + std::to_string(count) + ") of a buffer of " +
                  std::to_string(count_));
}

BufferView BufferView::reinterpret(DType t) const {
  const size_t bytes = count_ * size_of(dtype_);
  BAGUA_CHECK(bytes % size_of(t) == 0,
              "reinterpret " + std::to_string(bytes) + " bytes as " + to_string(t));
  return BufferView(data_, bytes / size_of(t), t, space_);
}

Buffer::Buffer(const Space& space, DType dtype, size_t count)
    : storage_(space.allocate(count * size_of(dtype)), Release{&space}),
      view_(storage_.get(), count, dtype, &space) {}

}  // namespace bagua
