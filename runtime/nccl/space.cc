#include "runtime/nccl/space.h"

#include <cstdint>
#include <cstring>
#include <utility>

#include "core/check.h"
#include "core/compress/minmax_uint8.h"
#include "runtime/nccl/check.h"
#include "runtime/nccl/kernels.h"

namespace bagua::runtime::nccl {

void use_device(int device) {
  BAGUA_CUDA_CHECK(cudaSetDevice(device));
}

namespace {

// Waits for the calling thread's stream (cudaStreamPerThread).
void synchronize_caller_stream() {
  BAGUA_CUDA_CHECK(cudaStreamSynchronize(cudaStreamPerThread));
}

// The copy direction between two views' memories (neither is meta here).
cudaMemcpyKind copy_kind(Memory dst, Memory src) {
  const bool to_device = dst == Memory::kDevice;
  const bool from_device = src == Memory::kDevice;
  if (to_device && from_device) return cudaMemcpyDeviceToDevice;
  if (to_device) return cudaMemcpyHostToDevice;
  if (from_device) return cudaMemcpyDeviceToHost;
  return cudaMemcpyHostToHost;
}

void copy_bytes_of_kind(int device, void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (bytes == 0) return;
  use_device(device);
  BAGUA_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, cudaStreamPerThread));
  synchronize_caller_stream();
}

void check_same_shape(const BufferView& a, const BufferView& b, const char* op) {
  BAGUA_CHECK(a.dtype() == b.dtype(), std::string("cuda ") + op + ": dtype " + to_string(a.dtype()) +
                                          " vs " + to_string(b.dtype()));
  BAGUA_CHECK(a.count() == b.count(), std::string("cuda ") + op + ": count " +
                                          std::to_string(a.count()) + " vs " +
                                          std::to_string(b.count()));
}

void check_on_device(const BufferView& v, const char* op, const char* which) {
  BAGUA_CHECK(v.memory() == Memory::kDevice, std::string("cuda ") + op + ": " + which + " is a " +
                                                 to_string(v.memory()) +
                                                 " buffer, expected device memory");
}

// Launch status from kernels.h, then the caller's stream drained: synchronous for the caller.
void finish(cudaError_t launch, const char* what) {
  if (launch != cudaSuccess) detail::cuda_call_failed(what, launch, __FILE__, __LINE__);
  synchronize_caller_stream();
}

kernels::Combine combine_of(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return kernels::Combine::kSum;
    case ReduceOp::kMin:
      return kernels::Combine::kMin;
    case ReduceOp::kMax:
      return kernels::Combine::kMax;
  }
  BAGUA_CHECK(false, "cuda reduce: unknown op " + std::to_string(static_cast<int>(op)));
  return kernels::Combine::kSum;
}

// A device copy of a host view (nullptr allocation for a device view, which is used in place).
struct OnDevice {
  DeviceAllocation staging;
  const void* data = nullptr;
};
OnDevice on_device(int device, const BufferView& v) {
  OnDevice d;
  if (v.memory() == Memory::kDevice) {
    d.data = v.data();
    return d;
  }
  BAGUA_CHECK(v.memory() == Memory::kHost, "cuda: staging a " + to_string(v.memory()) + " buffer");
  const size_t bytes = static_cast<size_t>(v.bytes().count());
  d.staging = DeviceAllocation(device, bytes);
  copy_bytes_of_kind(device, d.staging.data(), v.data(), bytes, cudaMemcpyHostToDevice);
  d.data = d.staging.data();
  return d;
}

template <class T>
uint64_t pattern_of(T value) {
  uint64_t pattern = 0;
  std::memcpy(&pattern, &value, sizeof value);
  return pattern;
}

void check_compressor_views(const BufferView& in, const BufferView& out, DType in_type, DType out_type,
                            const char* what) {
  if (in.memory() != Memory::kDevice || out.memory() != Memory::kDevice)
    throw ConfigError(std::string("cuda ") + what + ": input is a " + to_string(in.memory()) +
                      " buffer and output a " + to_string(out.memory()) +
                      " buffer; the device kernels need both in device memory");
  BAGUA_CHECK(in.dtype() == in_type, std::string("cuda ") + what + ": input is " +
                                         to_string(in.dtype()) + ", expected " + to_string(in_type));
  BAGUA_CHECK(out.dtype() == out_type, std::string("cuda ") + what + ": output is " +
                                           to_string(out.dtype()) + ", expected " +
                                           to_string(out_type));
}

kernels::MinMaxLayout minmax_layout() {
  return kernels::MinMaxLayout{MinMaxUint8Compressor::kEps, MinMaxUint8Compressor::kHeaderBytes,
                               MinMaxUint8Compressor::kAlignBytes};
}

// `bytes` bytes (at least one) from `device`'s pool. The pool's memory is ordered on the allocating
// stream; waiting for that stream makes it usable on any.
void* pool_allocate(int device, size_t bytes) {
  use_device(device);
  void* p = nullptr;
  BAGUA_CUDA_CHECK(cudaMallocAsync(&p, bytes == 0 ? 1 : bytes, cudaStreamPerThread));
  const cudaError_t status = cudaStreamSynchronize(cudaStreamPerThread);
  if (status != cudaSuccess) {
    BAGUA_CUDA_WARN(cudaFreeAsync(p, cudaStreamPerThread));
    detail::cuda_call_failed("cudaStreamSynchronize(cudaStreamPerThread)", status, __FILE__, __LINE__);
  }
  return p;
}

}  // namespace

void copy_bytes(int device, void* dst, const void* src, size_t bytes) {
  copy_bytes_of_kind(device, dst, src, bytes, cudaMemcpyDefault);
}

// ---- DeviceAllocation -------------------------------------------------------------------------------

DeviceAllocation::DeviceAllocation(int device, size_t bytes, cudaStream_t free_stream)
    : device_(device), data_(pool_allocate(device, bytes)), size_(bytes), free_stream_(free_stream) {}

DeviceAllocation::~DeviceAllocation() {
  release();
}

DeviceAllocation::DeviceAllocation(DeviceAllocation&& other) noexcept
    : device_(other.device_),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      free_stream_(other.free_stream_) {}

DeviceAllocation& DeviceAllocation::operator=(DeviceAllocation&& other) noexcept {
  if (this != &other) {
    release();
    device_ = other.device_;
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    free_stream_ = other.free_stream_;
  }
  return *this;
}

void DeviceAllocation::release() noexcept {
  if (!data_) return;
  BAGUA_CUDA_WARN(cudaSetDevice(device_));
  BAGUA_CUDA_WARN(cudaFreeAsync(data_, free_stream_));
  data_ = nullptr;
  size_ = 0;
}

// ---- CudaSpace --------------------------------------------------------------------------------------

CudaSpace::CudaSpace(int device) : device_(device), kernels_(device) {
  int count = 0;
  BAGUA_CUDA_CHECK(cudaGetDeviceCount(&count));
  if (device < 0 || device >= count)
    throw ConfigError("cuda space: device " + std::to_string(device) + " does not exist (" +
                      std::to_string(count) + " visible)");
  int pools = 0;
  BAGUA_CUDA_CHECK(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device));
  if (!pools)
    throw ConfigError(
        "cuda space: device " + std::to_string(device) +
        " has no stream-ordered memory pool (cudaDevAttrMemoryPoolsSupported = 0); the nccl "
        "runtime allocates from it so that freeing never waits for the whole device");
}

void* CudaSpace::allocate(size_t bytes) const {
  return pool_allocate(device_, bytes);
}

void CudaSpace::deallocate(void* p) const {
  // Called from Buffer's deleter, which must not throw.
  if (!p) return;
  BAGUA_CUDA_WARN(cudaSetDevice(device_));
  BAGUA_CUDA_WARN(cudaFreeAsync(p, cudaStreamPerThread));
}

void CudaSpace::copy(const BufferView& dst, const BufferView& src) const {
  BAGUA_CHECK_EQ(dst.bytes().count(), src.bytes().count(), "cuda copy: byte sizes differ");
  if (src.is_meta() || dst.is_meta() || dst.count() == 0) return;
  const size_t bytes = static_cast<size_t>(dst.bytes().count());
  const cudaMemcpyKind kind = copy_kind(dst.memory(), src.memory());
  if (kind == cudaMemcpyHostToHost) {
    std::memmove(dst.data(), src.data(), bytes);
    return;
  }
  copy_bytes_of_kind(device_, dst.data(), src.data(), bytes, kind);
}

void CudaSpace::reduce(const BufferView& dst, const BufferView& src, ReduceOp op) const {
  check_same_shape(dst, src, "reduce");
  if (src.is_meta() || dst.count() == 0) return;
  check_on_device(dst, "reduce", "dst");
  kernels::Element element = kernels::Element::kF32;
  switch (dst.dtype()) {
    case DType::kF32:
      element = kernels::Element::kF32;
      break;
    case DType::kF64:
      element = kernels::Element::kF64;
      break;
    case DType::kI32:
      element = kernels::Element::kI32;
      break;
    case DType::kI64:
      element = kernels::Element::kI64;
      break;
    default:
      BAGUA_CHECK(false, "cuda reduce of dtype " + to_string(dst.dtype()));
  }
  const OnDevice s = on_device(device_, src);
  use_device(device_);
  finish(kernels::reduce(element, combine_of(op), dst.data(), s.data, dst.count(), cudaStreamPerThread),
         "kernels::reduce");
}

void CudaSpace::scale(const BufferView& x, double a) const {
  if (x.is_meta() || x.count() == 0) return;
  check_on_device(x, "scale", "x");
  use_device(device_);
  if (x.dtype() == DType::kF32) {
    finish(kernels::scale_f32(static_cast<float*>(x.data()), static_cast<float>(a), x.count(),
                              cudaStreamPerThread),
           "kernels::scale_f32");
  } else if (x.dtype() == DType::kF64) {
    finish(kernels::scale_f64(static_cast<double*>(x.data()), a, x.count(), cudaStreamPerThread),
           "kernels::scale_f64");
  } else {
    BAGUA_CHECK(false, "cuda scale of dtype " + to_string(x.dtype()));
  }
}

void CudaSpace::axpy(const BufferView& y, double a, const BufferView& x) const {
  check_same_shape(y, x, "axpy");
  if (x.is_meta() || y.count() == 0) return;
  check_on_device(y, "axpy", "y");
  BAGUA_CHECK(y.dtype() == DType::kF32 || y.dtype() == DType::kF64,
              "cuda axpy of dtype " + to_string(y.dtype()));
  const OnDevice xs = on_device(device_, x);
  use_device(device_);
  if (y.dtype() == DType::kF32) {
    finish(kernels::axpy_f32(static_cast<float*>(y.data()), static_cast<float>(a),
                             static_cast<const float*>(xs.data), y.count(), cudaStreamPerThread),
           "kernels::axpy_f32");
  } else {
    finish(kernels::axpy_f64(static_cast<double*>(y.data()), a, static_cast<const double*>(xs.data),
                             y.count(), cudaStreamPerThread),
           "kernels::axpy_f64");
  }
}

void CudaSpace::fill(const BufferView& x, double v) const {
  if (x.is_meta() || x.count() == 0) return;
  check_on_device(x, "fill", "x");
  uint64_t pattern = 0;
  switch (x.dtype()) {
    case DType::kF32:
      pattern = pattern_of(static_cast<float>(v));
      break;
    case DType::kF64:
      pattern = pattern_of(v);
      break;
    case DType::kU8:
      pattern = pattern_of(static_cast<uint8_t>(v));
      break;
    case DType::kI32:
      pattern = pattern_of(static_cast<int32_t>(v));
      break;
    case DType::kI64:
      pattern = pattern_of(static_cast<int64_t>(v));
      break;
    default:
      BAGUA_CHECK(false, "cuda fill of dtype " + to_string(x.dtype()));
  }
  use_device(device_);
  finish(kernels::fill(x.data(), size_of(x.dtype()), pattern, x.count(), cudaStreamPerThread),
         "kernels::fill");
}

// ---- CudaKernels ------------------------------------------------------------------------------------

void CudaKernels::minmax_u8_encode(const BufferView& in, const BufferView& out, size_t chunk) const {
  check_compressor_views(in, out, DType::kF32, DType::kU8, "minmax_u8_encode");
  if (in.count() == 0) return;
  use_device(device_);
  finish(kernels::minmax_u8_encode(static_cast<const float*>(in.data()), in.count(), chunk,
                                   minmax_layout(), static_cast<uint8_t*>(out.data()),
                                   cudaStreamPerThread),
         "kernels::minmax_u8_encode");
}

void CudaKernels::minmax_u8_decode(const BufferView& in, const BufferView& out, size_t chunk) const {
  check_compressor_views(in, out, DType::kU8, DType::kF32, "minmax_u8_decode");
  if (out.count() == 0) return;
  use_device(device_);
  finish(
      kernels::minmax_u8_decode(static_cast<const uint8_t*>(in.data()), out.count(), chunk,
                                minmax_layout(), static_cast<float*>(out.data()), cudaStreamPerThread),
      "kernels::minmax_u8_decode");
}

void CudaKernels::sign_encode(const BufferView& in, const BufferView& out, size_t chunk) const {
  check_compressor_views(in, out, DType::kF32, DType::kU8, "sign_encode");
  if (in.count() == 0) return;
  use_device(device_);
  finish(kernels::sign_encode(static_cast<const float*>(in.data()), in.count(), chunk,
                              static_cast<uint8_t*>(out.data()), cudaStreamPerThread),
         "kernels::sign_encode");
}

void CudaKernels::sign_decode(const BufferView& in, const BufferView& out, size_t chunk) const {
  check_compressor_views(in, out, DType::kU8, DType::kF32, "sign_decode");
  if (out.count() == 0) return;
  use_device(device_);
  finish(kernels::sign_decode(static_cast<const uint8_t*>(in.data()), out.count(), chunk,
                              static_cast<float*>(out.data()), cudaStreamPerThread),
         "kernels::sign_decode");
}

void CudaKernels::f32_to_f16(const BufferView& in, const BufferView& out) const {
  check_compressor_views(in, out, DType::kF32, DType::kF16, "f32_to_f16");
  BAGUA_CHECK_EQ(in.count(), out.count(), "cuda f32_to_f16: element counts");
  if (in.count() == 0) return;
  use_device(device_);
  finish(kernels::f32_to_f16(static_cast<const float*>(in.data()), in.count(),
                             static_cast<uint8_t*>(out.data()), cudaStreamPerThread),
         "kernels::f32_to_f16");
}

void CudaKernels::f16_to_f32(const BufferView& in, const BufferView& out) const {
  check_compressor_views(in, out, DType::kF16, DType::kF32, "f16_to_f32");
  BAGUA_CHECK_EQ(in.count(), out.count(), "cuda f16_to_f32: element counts");
  if (out.count() == 0) return;
  use_device(device_);
  finish(kernels::f16_to_f32(static_cast<const uint8_t*>(in.data()), out.count(),
                             static_cast<float*>(out.data()), cudaStreamPerThread),
         "kernels::f16_to_f32");
}

}  // namespace bagua::runtime::nccl
