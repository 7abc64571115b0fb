// CudaSpace: GPU memory as a Space (core/buffer.h), with the compressor kernels
// (core/device_kernels.h).
//
// Terms:
//   device         the CUDA device (ordinal) whose memory the space hands out; every call first makes
//                  it the calling thread's current device, so any thread (a stream's, say) may use the
//                  space
//   caller stream  cudaStreamPerThread: each host thread's own CUDA stream. Every operation is enqueued
//                  on the calling thread's stream and waited for before it returns, so operations are
//                  synchronous from the caller's point of view and need no ordering with anything else
//                  (a transport's streams included): whatever the host did before, the device has done.
//   pool           device memory comes from the device's stream-ordered allocator (cudaMallocAsync /
//                  cudaFreeAsync). Unlike cudaFree, which waits for the whole device, freeing from the
//                  pool waits for nothing: a rank's compute thread freeing a buffer never blocks behind
//                  an NCCL kernel of its communication thread that waits for a peer.
//
// Operations and their arithmetic are exactly the host space's (core/buffer.cc), so device and host
// results are identical bits: reduce (sum, min, max) of f32, f64, i32, i64; scale and axpy of f32, f64
// (the scalar rounded to f32 for f32, the product rounded before the sum); fill of f32, f64, u8, i32,
// i64. copy moves bytes between any two of device, host and device (of this or another device); reduce
// and axpy also accept a host `src`/`x`, staged through device memory. Other combinations are invariant
// violations (BAGUA_CHECK): core/ops.h routes meta buffers elsewhere.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

#include "core/buffer.h"
#include "core/device_kernels.h"

namespace bagua::runtime::nccl {

// Device bytes from the device's pool; freed, on destruction, on `free_stream` — after the work
// already queued there (a transport frees staging memory on the stream its NCCL operations run on).
class DeviceAllocation {
 public:
  DeviceAllocation() = default;
  // `bytes` bytes (at least one) on `device`, usable by any stream when the constructor returns.
  DeviceAllocation(int device, size_t bytes, cudaStream_t free_stream = cudaStreamPerThread);
  ~DeviceAllocation();
  DeviceAllocation(DeviceAllocation&& other) noexcept;
  DeviceAllocation& operator=(DeviceAllocation&& other) noexcept;
  DeviceAllocation(const DeviceAllocation&) = delete;
  DeviceAllocation& operator=(const DeviceAllocation&) = delete;

  void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void release() noexcept;
  int device_ = 0;
  void* data_ = nullptr;
  size_t size_ = 0;
  cudaStream_t free_stream_ = cudaStreamPerThread;
};

// The compressor kernels on one device's memory: both views of every call must live in device memory.
class CudaKernels final : public DeviceKernels {
 public:
  explicit CudaKernels(int device) : device_(device) {}
  void minmax_u8_encode(const BufferView& in, const BufferView& out, size_t chunk) const override;
  void minmax_u8_decode(const BufferView& in, const BufferView& out, size_t chunk) const override;
  void sign_encode(const BufferView& in, const BufferView& out, size_t chunk) const override;
  void sign_decode(const BufferView& in, const BufferView& out, size_t chunk) const override;
  void f32_to_f16(const BufferView& in, const BufferView& out) const override;
  void f16_to_f32(const BufferView& in, const BufferView& out) const override;

 private:
  int device_;
};

class CudaSpace final : public Space {
 public:
  // Throws ConfigError when `device` does not exist or has no stream-ordered memory pool.
  explicit CudaSpace(int device);

  Memory memory() const override { return Memory::kDevice; }
  std::string name() const override { return "cuda:" + std::to_string(device_); }
  void* allocate(size_t bytes) const override;
  void deallocate(void* p) const override;
  void copy(const BufferView& dst, const BufferView& src) const override;
  void reduce(const BufferView& dst, const BufferView& src, ReduceOp op) const override;
  void scale(const BufferView& x, double a) const override;
  void axpy(const BufferView& y, double a, const BufferView& x) const override;
  void fill(const BufferView& x, double v) const override;
  const DeviceKernels* kernels() const override { return &kernels_; }

  int device() const { return device_; }

 private:
  int device_;
  CudaKernels kernels_;
};

// Makes `device` the calling thread's current device (cheap; every entry point of this runtime calls
// it).
void use_device(int device);
// dst := src, `bytes` bytes, any of host and device memory on either side; synchronous for the caller.
void copy_bytes(int device, void* dst, const void* src, size_t bytes);

}  // namespace bagua::runtime::nccl
