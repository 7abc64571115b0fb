// Our ring allreduce (collectives::allreduce, kRing, over the NCCL transport: grouped ncclSend/ncclRecv
// steps plus a reduce kernel per step) against NCCL's own ncclAllReduce (kNative), f32 sum on GPU
// buffers, message sizes from 1 KiB to 256 MiB in powers of 4.
//
//   mpirun -np 8 build/<dir>/bench/bench_nccl_allreduce [--min-bytes 1024] [--max-bytes 268435456]
//                                                       [--factor 4] [--warmup 3] [--repeats 20]
//   (one process per GPU; as root add --allow-run-as-root)
//
// As in bench_mpi_allreduce, a collective must run the same number of times on every rank, so this is
// its own loop rather than Google Benchmark's: per size and method, `warmup` unrecorded runs, then the
// median over `repeats` samples of the slowest rank's time (all ranks leave a barrier, run one
// allreduce, and wait for its completion; every transport call here returns once the GPU is done).
// Rank 0 prints the table; every rank checks once per size that both methods give P everywhere.
//
// Built only with the NCCL runtime (BAGUA_BENCH_NCCL, set by bench/CMakeLists.txt); otherwise a stub
// that says so.
#if defined(BAGUA_BENCH_NCCL)

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "core/collectives/collectives.h"
#include "core/ops.h"
#include "runtime/mpi/transport.h"
#include "runtime/nccl/transport.h"
#include "runtime/nccl/world.h"

namespace {

using bagua::Buffer;
using bagua::DType;
using bagua::ReduceOp;
using bagua::collectives::AllreduceAlgo;

struct Options {
  int64_t min_bytes = 1024;
  int64_t max_bytes = int64_t{256} << 20;
  int64_t factor = 4;
  int warmup = 3;
  int repeats = 20;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw bagua::ConfigError("bench_nccl_allreduce: " + flag + " needs a value");
    const int64_t value = std::stoll(argv[++i]);
    if (flag == "--min-bytes")
      o.min_bytes = value;
    else if (flag == "--max-bytes")
      o.max_bytes = value;
    else if (flag == "--factor")
      o.factor = value;
    else if (flag == "--warmup")
      o.warmup = static_cast<int>(value);
    else if (flag == "--repeats")
      o.repeats = static_cast<int>(value);
    else
      throw bagua::ConfigError("bench_nccl_allreduce: unknown flag " + flag);
  }
  if (o.min_bytes < 4 || o.max_bytes < o.min_bytes || o.factor < 2 || o.repeats < 1 || o.warmup < 0)
    throw bagua::ConfigError(
        "bench_nccl_allreduce: need 4 <= min-bytes <= max-bytes, factor >= 2, "
        "repeats >= 1, warmup >= 0");
  return o;
}

double median_seconds(bagua::Transport& transport, const Buffer& data, AllreduceAlgo algo,
                      const Options& o) {
  std::vector<double> samples;
  for (int run = 0; run < o.warmup + o.repeats; ++run) {
    bagua::fill(data, 1.0);
    BAGUA_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    const auto begin = std::chrono::steady_clock::now();
    bagua::collectives::allreduce(transport, data, ReduceOp::kSum, /*tag=*/1, algo);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    BAGUA_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    if (run >= o.warmup) samples.push_back(seconds);
  }
  std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
  return samples[samples.size() / 2];
}

std::string size_name(int64_t bytes) {
  if (bytes >= (int64_t{1} << 20)) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= 1024) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}

// Whether every element of `data` (on the device) is p.
bool all_equal(const Buffer& data, int p) {
  const Buffer host = Buffer::host(DType::kF32, data.count());
  bagua::copy(host, data);
  for (float v : host.as<float>())
    if (v != static_cast<float>(p)) return false;
  return true;
}

int run(int argc, char** argv) {
  bagua::runtime::nccl::NcclWorld world(&argc, &argv);
  const Options o = parse(argc, argv);
  bagua::Transport& transport = world.context().transport();
  const bagua::Space& gpu = world.context().space();
  const int p = world.size();
  if (world.rank() == 0) {
    std::printf(
        "allreduce, f32 sum on GPU buffers, %d ranks; median of %d runs after %d warmup runs; "
        "time of the slowest rank\n",
        p, o.repeats, o.warmup);
    std::printf("| %8s | %14s | %18s | %10s |\n", "size", "ring (ms)", "ncclAllReduce (ms)",
                "ring / NCCL");
    std::printf("|---------:|---------------:|-------------------:|-----------:|\n");
  }
  for (int64_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.factor) {
    const Buffer data(gpu, DType::kF32, static_cast<size_t>(bytes / 4));
    const double ring = median_seconds(transport, data, AllreduceAlgo::kRing, o);
    const double native = median_seconds(transport, data, AllreduceAlgo::kNative, o);

    int agree = 1;
    for (AllreduceAlgo algo : {AllreduceAlgo::kRing, AllreduceAlgo::kNative}) {
      bagua::fill(data, 1.0);
      bagua::collectives::allreduce(transport, data, ReduceOp::kSum, 2, algo);
      if (!all_equal(data, p)) {
        std::fprintf(stderr, "rank %d: size %lld: %s allreduce does not give %d everywhere\n",
                     world.rank(), static_cast<long long>(bytes),
                     bagua::collectives::to_string(algo).c_str(), p);
        agree = 0;
      }
    }
    BAGUA_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &agree, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    if (!agree) return 1;  // on every rank at once
    if (world.rank() == 0) {
      std::printf("| %8s | %14.4f | %18.4f | %10.2f |\n", size_name(bytes).c_str(), ring * 1e3,
                  native * 1e3, ring / native);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_nccl_allreduce: %s\n", e.what());
    return 1;
  }
}

#else

#include <cstdio>

int main() {
  std::fprintf(stderr,
               "bench_nccl_allreduce: built without the NCCL runtime (CUDA and NCCL not found)\n");
  return 1;
}

#endif
