// A checking macro around every CUDA and NCCL call: a failed call throws an exception whose message
// names the call, the library's error string, the rank (MPI_COMM_WORLD's, when MPI is up) and the
// current CUDA device.
//
//   BAGUA_CUDA_CHECK(cudaMemcpyAsync(...));   throws CudaError unless the call returned cudaSuccess
//   BAGUA_NCCL_CHECK(ncclSend(...));          throws NcclError unless the call returned ncclSuccess
//
// Destructors cannot throw: they use BAGUA_CUDA_WARN / BAGUA_NCCL_WARN, which print the same
// message to stderr and carry on.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <stdexcept>
#include <string>

namespace bagua::runtime::nccl {

// A CUDA runtime call failed.
class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An NCCL call failed (or a communicator reported an asynchronous error).
class NcclError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
[[noreturn]] void cuda_call_failed(const char* call, cudaError_t error, const char* file, int line);
[[noreturn]] void nccl_call_failed(const char* call, ncclResult_t error, const char* file, int line);
void warn_cuda(const char* call, cudaError_t error, const char* file, int line) noexcept;
void warn_nccl(const char* call, ncclResult_t error, const char* file, int line) noexcept;
}  // namespace detail

}  // namespace bagua::runtime::nccl

#define BAGUA_CUDA_CHECK(call)                                                                        \
  do {                                                                                                \
    const cudaError_t bagua_cuda_error_ = (call);                                                     \
    if (bagua_cuda_error_ != cudaSuccess)                                                             \
      ::bagua::runtime::nccl::detail::cuda_call_failed(#call, bagua_cuda_error_, __FILE__, __LINE__); \
  } while (0)

#define BAGUA_NCCL_CHECK(call)                                                                        \
  do {                                                                                                \
    const ncclResult_t bagua_nccl_error_ = (call);                                                    \
    if (bagua_nccl_error_ != ncclSuccess)                                                             \
      ::bagua::runtime::nccl::detail::nccl_call_failed(#call, bagua_nccl_error_, __FILE__, __LINE__); \
  } while (0)

// For destructors: report a failure on stderr instead of throwing.
#define BAGUA_CUDA_WARN(call)                                                                  \
  do {                                                                                         \
    const cudaError_t bagua_cuda_error_ = (call);                                              \
    if (bagua_cuda_error_ != cudaSuccess)                                                      \
      ::bagua::runtime::nccl::detail::warn_cuda(#call, bagua_cuda_error_, __FILE__, __LINE__); \
  } while (0)

#define BAGUA_NCCL_WARN(call)                                                                  \
  do {                                                                                         \
    const ncclResult_t bagua_nccl_error_ = (call);                                             \
    if (bagua_nccl_error_ != ncclSuccess)                                                      \
      ::bagua::runtime::nccl::detail::warn_nccl(#call, bagua_nccl_error_, __FILE__, __LINE__); \
  } while (0)
