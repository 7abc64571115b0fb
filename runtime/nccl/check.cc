#include "runtime/nccl/check.h"

#include <cstdio>

#include "runtime/mpi/transport.h"

namespace bagua::runtime::nccl::detail {

namespace {

// "rank 3, cuda:1" (or "rank ?" before MPI is initialized or after it is finalized).
std::string where_am_i() {
  std::string where = "rank " + mpi::detail::world_rank_text();
  int device = -1;
  // cudaGetDevice does not start a context; on a machine without a device it fails, and we say nothing.
  if (cudaGetDevice(&device) == cudaSuccess)
    where += ", cuda:" + std::to_string(device);
  else
    cudaGetLastError();  // not an error of the caller's: clear it
  return where;
}

std::string cuda_failure(const char* call, cudaError_t error, const char* file, int line) {
  return std::string(file) + ":" + std::to_string(line) + ": " + where_am_i() + ": " + call +
         " failed: " + cudaGetErrorName(error) + " (" + cudaGetErrorString(error) + ")";
}

std::string nccl_failure(const char* call, ncclResult_t error, const char* file, int line) {
  std::string message = std::string(file) + ":" + std::to_string(line) + ": " + where_am_i() + ": " +
                        call + " failed: " + ncclGetErrorString(error);
  const char* detail = ncclGetLastError(nullptr);
  if (detail && *detail) message += " (" + std::string(detail) + ")";
  return message;
}

}  // namespace

void cuda_call_failed(const char* call, cudaError_t error, const char* file, int line) {
  throw CudaError(cuda_failure(call, error, file, line));
}

void nccl_call_failed(const char* call, ncclResult_t error, const char* file, int line) {
  throw NcclError(nccl_failure(call, error, file, line));
}

void warn_cuda(const char* call, cudaError_t error, const char* file, int line) noexcept {
  try {
    std::fprintf(stderr, "%s\n", cuda_failure(call, error, file, line).c_str());
    std::fflush(stderr);
  } catch (...) {
  }
}

void warn_nccl(const char* call, ncclResult_t error, const char* file, int line) noexcept {
  try {
    std::fprintf(stderr, "%s\n", nccl_failure(call, error, file, line).c_str());
    std::fflush(stderr);
  } catch (...) {
  }
}

}  // namespace bagua::runtime::nccl::detail
