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

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "bench/allreduce_timing.h"
#include "core/collectives/collectives.h"
#include "core/ops.h"
#include "runtime/mpi/transport.h"
#include "runtime/nccl/transport.h"
#include "runtime/nccl/world.h"

namespace {

using bagua::Buffer;
using bagua::DType;
using bagua::ReduceOp;
using bagua::bench::AllreduceOptions;
using bagua::bench::median_seconds;
using bagua::bench::parse_options;
using bagua::bench::size_name;
using bagua::collectives::AllreduceAlgo;

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
  const AllreduceOptions o = parse_options(argc, argv, "bench_nccl_allreduce", int64_t{256} << 20,
                                           /*with_pingpong=*/false);
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
    const double ring = median_seconds(transport, data, AllreduceAlgo::kRing, o, MPI_COMM_WORLD);
    const double native = median_seconds(transport, data, AllreduceAlgo::kNative, o, MPI_COMM_WORLD);

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
