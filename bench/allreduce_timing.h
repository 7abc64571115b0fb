// What bench_mpi_allreduce and bench_nccl_allreduce share: their options, the timed loop (see the
// programs' comments) and the table's size names. Needs MPI.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/collectives/collectives.h"
#include "core/ops.h"
#include "runtime/mpi/transport.h"

namespace bagua::bench {

struct AllreduceOptions {
  int64_t min_bytes = 1024;
  int64_t max_bytes = 0;
  int64_t factor = 4;
  int warmup = 3;
  int repeats = 20;
  bool pingpong = false;
};

// --min-bytes, --max-bytes (default `max_bytes`), --factor, --warmup, --repeats, and --pingpong when
// `with_pingpong`; errors start with `program`.
inline AllreduceOptions parse_options(int argc, char** argv, const std::string& program,
                                      int64_t max_bytes, bool with_pingpong) {
  AllreduceOptions o;
  o.max_bytes = max_bytes;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (with_pingpong && flag == "--pingpong") {
      o.pingpong = true;
      continue;
    }
    if (i + 1 >= argc) throw ConfigError(program + ": " + flag + " needs a value");
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
      throw ConfigError(program + ": unknown flag " + flag);
  }
  if (o.min_bytes < 4 || o.max_bytes < o.min_bytes || o.factor < 2 || o.repeats < 1 || o.warmup < 0)
    throw ConfigError(program +
                      ": need 4 <= min-bytes <= max-bytes, factor >= 2, repeats >= 1, warmup >= 0");
  return o;
}

// The median of `samples` (which it reorders).
inline double median(std::vector<double>& samples) {
  std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
  return samples[samples.size() / 2];
}

// The median over `repeats` runs, each after a barrier on `comm`, of the slowest rank's time, in
// seconds.
inline double median_seconds(Transport& transport, const Buffer& data, collectives::AllreduceAlgo algo,
                             const AllreduceOptions& o, MPI_Comm comm) {
  std::vector<double> samples;
  for (int run = 0; run < o.warmup + o.repeats; ++run) {
    fill(data, 1.0);
    BAGUA_MPI_CHECK(MPI_Barrier(comm));
    const auto begin = std::chrono::steady_clock::now();
    collectives::allreduce(transport, data, ReduceOp::kSum, /*tag=*/1, algo);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    BAGUA_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, comm));
    if (run >= o.warmup) samples.push_back(seconds);
  }
  return median(samples);
}

inline std::string size_name(int64_t bytes) {
  if (bytes >= (int64_t{1} << 20)) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= 1024) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}

}  // namespace bagua::bench
