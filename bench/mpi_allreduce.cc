// Our allreduces over the MPI transport (collectives::allreduce: ring, tree, halving-doubling,
// recursive doubling, and mpi_tuned, which picks among them by size) against Open MPI's own
// MPI_Allreduce (kNative), f32 sum, message sizes from 1 KiB to 64 MiB in powers of 4. (The
// recursive-doubling column comes last so that the columns before it keep their places.)
//
//   mpirun -np 4 build/<dir>/bench/bench_mpi_allreduce [--min-bytes 1024] [--max-bytes 67108864]
//                                                      [--factor 4] [--warmup 3] [--repeats 20]
//   (as root add --allow-run-as-root; with more ranks than cores add --oversubscribe)
//
// With --pingpong instead: the bandwidth between rank 0 and rank 1 (the link an emulated network
// shapes): rank 0 sends `size` bytes to rank 1 over the MPI transport and rank 1 answers with one byte;
// the median round trip over the sizes gives the one-way rate in Mbit/s. Other ranks wait.
//
// A collective must be run the same number of times on every rank, which Google Benchmark's adaptive
// iteration counts do not guarantee (each process picks its own); hence this program's own loop. One
// sample: all ranks leave a barrier, run one allreduce, and the sample is the slowest rank's time (the
// collective is done when its last rank is). Per size: `warmup` unrecorded rounds, then `repeats`
// recorded ones, a round timing every method once in turn, so that a change in the machine's load
// reaches every method alike; per method the median of its samples. The buffer is refilled before
// every run, outside the timed region. Rank 0 prints the table; every rank checks once per size that
// ring and MPI_Allreduce agree.
#if __has_include(<mpi.h>)

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iterator>
#include <string>
#include <vector>

#include "bench/allreduce_timing.h"
#include "core/collectives/collectives.h"
#include "core/ops.h"
#include "runtime/mpi/transport.h"
#include "runtime/mpi/world.h"

namespace {

using bagua::Buffer;
using bagua::DType;
using bagua::ReduceOp;
using bagua::bench::AllreduceOptions;
using bagua::bench::median;
using bagua::bench::parse_options;
using bagua::bench::size_name;
using bagua::collectives::AllreduceAlgo;
using bagua::runtime::mpi::MpiTransport;

// One sample: every rank leaves a barrier and runs one allreduce of `data` (refilled first, outside
// the timed region); the slowest rank's time, in seconds.
double slowest_rank_seconds(MpiTransport& transport, const Buffer& data, AllreduceAlgo algo) {
  bagua::fill(data, 1.0);
  BAGUA_MPI_CHECK(MPI_Barrier(transport.comm()));
  const auto begin = std::chrono::steady_clock::now();
  bagua::collectives::allreduce(transport, data, ReduceOp::kSum, /*tag=*/1, algo);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  BAGUA_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, transport.comm()));
  return seconds;
}

// The median round trip of `data` from rank 0 to rank 1 and one byte back, in seconds.
double median_round_trip(MpiTransport& transport, const Buffer& data, const AllreduceOptions& o) {
  std::vector<double> samples;
  const Buffer ack = Buffer::host(DType::kU8, 1);
  for (int run = 0; run < o.warmup + o.repeats; ++run) {
    BAGUA_MPI_CHECK(MPI_Barrier(transport.comm()));
    const auto begin = std::chrono::steady_clock::now();
    if (transport.rank() == 0) {
      transport.send(data, 1, /*tag=*/4);
      transport.recv(ack, 1, /*tag=*/5);
    } else if (transport.rank() == 1) {
      transport.recv(data, 0, 4);
      transport.send(ack, 0, 5);
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    if (run >= o.warmup) samples.push_back(seconds);
  }
  return median(samples);
}

int run(int argc, char** argv) {
  bagua::runtime::mpi::MpiWorld world(&argc, &argv);
  const AllreduceOptions o = parse_options(argc, argv, "bench_mpi_allreduce", int64_t{64} << 20,
                                           /*with_pingpong=*/true);
  MpiTransport& transport = world.transport();
  const int p = world.size();
  if (o.pingpong) {
    if (p < 2) throw bagua::ConfigError("bench_mpi_allreduce --pingpong: needs 2 ranks or more, got 1");
    if (world.rank() == 0) {
      std::printf(
          "ping-pong rank 0 -> rank 1 (hosts %d and %d), median of %d runs after %d warmup runs\n",
          transport.host_of(0), transport.host_of(1), o.repeats, o.warmup);
      std::printf("| %8s | %14s | %14s |\n", "size", "round trip (ms)", "Mbit/s");
      std::printf("|---------:|----------------:|---------------:|\n");
    }
    for (int64_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.factor) {
      const Buffer data = Buffer::host(DType::kU8, static_cast<size_t>(bytes));
      const double seconds = median_round_trip(transport, data, o);
      if (world.rank() == 0) {
        std::printf("| %8s | %15.4f | %14.1f |\n", size_name(bytes).c_str(), seconds * 1e3,
                    static_cast<double>(bytes) * 8 / seconds / 1e6);
        std::fflush(stdout);
      }
    }
    return 0;
  }
  if (world.rank() == 0) {
    std::printf(
        "allreduce, f32 sum, %d ranks; median of %d runs after %d warmup runs, the methods "
        "interleaved (one run of each in turn); time of the slowest rank\n",
        p, o.repeats, o.warmup);
    std::printf("| %8s | %14s | %10s | %10s | %15s | %18s | %10s | %15s | %10s |\n", "size",
                "ring (ms)", "tree (ms)", "h-d (ms)", "mpi_tuned (ms)", "MPI_Allreduce (ms)",
                "ring / MPI", "mpi_tuned / MPI", "r-d (ms)");
    std::printf(
        "|---------:|---------------:|-----------:|-----------:|----------------:|-------------------:|"
        "-----------:|----------------:|-----------:|\n");
  }
  // The columns' methods, timed in this order within every run.
  constexpr AllreduceAlgo kMethods[] = {
      AllreduceAlgo::kRing,     AllreduceAlgo::kTree,   AllreduceAlgo::kHalvingDoubling,
      AllreduceAlgo::kMpiTuned, AllreduceAlgo::kNative, AllreduceAlgo::kRecursiveDoubling};
  constexpr size_t kMethodCount = std::size(kMethods);
  for (int64_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.factor) {
    const Buffer data = Buffer::host(DType::kF32, static_cast<size_t>(bytes / 4));
    std::vector<std::vector<double>> samples(kMethodCount);
    for (int run = 0; run < o.warmup + o.repeats; ++run)
      for (size_t m = 0; m < kMethodCount; ++m) {
        const double seconds = slowest_rank_seconds(transport, data, kMethods[m]);
        if (run >= o.warmup) samples[m].push_back(seconds);
      }
    double medians[kMethodCount];
    for (size_t m = 0; m < kMethodCount; ++m)
      medians[m] = median(samples[m]);
    const double ring = medians[0], tree = medians[1], hd = medians[2], tuned = medians[3],
                 native = medians[4], rd = medians[5];

    // Both methods must give P at every element (every rank holds 1).
    const Buffer check_ring = Buffer::host(DType::kF32, data.count());
    const Buffer check_native = Buffer::host(DType::kF32, data.count());
    bagua::fill(check_ring, 1.0);
    bagua::fill(check_native, 1.0);
    bagua::collectives::allreduce(transport, check_ring, ReduceOp::kSum, 2, AllreduceAlgo::kRing);
    bagua::collectives::allreduce(transport, check_native, ReduceOp::kSum, 3, AllreduceAlgo::kNative);
    int agree = 1;
    for (size_t i = 0; i < data.count() && agree; ++i) {
      if (check_ring.as<float>()[i] != static_cast<float>(p) ||
          check_native.as<float>()[i] != static_cast<float>(p)) {
        std::fprintf(stderr, "rank %d: size %lld: element %zu is %g (ring) / %g (MPI), expected %d\n",
                     world.rank(), static_cast<long long>(bytes), i, check_ring.as<float>()[i],
                     check_native.as<float>()[i], p);
        agree = 0;
      }
    }
    BAGUA_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &agree, 1, MPI_INT, MPI_MIN, transport.comm()));
    if (!agree) return 1;  // on every rank at once
    if (world.rank() == 0) {
      std::printf("| %8s | %14.5f | %10.5f | %10.5f | %15.5f | %18.5f | %10.2f | %15.2f | %10.5f |\n",
                  size_name(bytes).c_str(), ring * 1e3, tree * 1e3, hd * 1e3, tuned * 1e3, native * 1e3,
                  ring / native, tuned / native, rd * 1e3);
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
    std::fprintf(stderr, "bench_mpi_allreduce: %s\n", e.what());
    return 1;
  }
}

#else  // built without MPI

#include <cstdio>

int main() {
  std::fprintf(stderr, "bench_mpi_allreduce: built without MPI\n");
  return 1;
}

#endif
