// Allreduce entry points: the algorithm switch, the average, and the algorithms' names (allreduce,
// broadcast, reduce, intra-host phases).
#include <string>

#include "core/check.h"
#include "core/collectives/collectives.h"
#include "core/collectives/cost.h"
#include "core/collectives/nccl.h"
#include "core/operation.h"
#include "core/ops.h"

namespace bagua::collectives {

namespace {

constexpr AllreduceAlgo kAllreduceAlgos[] = {AllreduceAlgo::kRing,
                                             AllreduceAlgo::kTree,
                                             AllreduceAlgo::kHalvingDoubling,
                                             AllreduceAlgo::kRecursiveDoubling,
                                             AllreduceAlgo::kNative,
                                             AllreduceAlgo::kNccl,
                                             AllreduceAlgo::kMpiTuned};
constexpr BroadcastAlgo kBroadcastAlgos[] = {BroadcastAlgo::kBinomial, BroadcastAlgo::kChain};
constexpr ReduceAlgo kReduceAlgos[] = {ReduceAlgo::kBinomial, ReduceAlgo::kChain};
constexpr IntraHostAlgo kIntraHostAlgos[] = {IntraHostAlgo::kAuto, IntraHostAlgo::kBinomial,
                                             IntraHostAlgo::kChain, IntraHostAlgo::kNccl};
constexpr NcclProtocolOption kNcclProtocolOptions[] = {
    NcclProtocolOption::kAuto, NcclProtocolOption::kSimple, NcclProtocolOption::kLL,
    NcclProtocolOption::kLL128};

// The algorithm of `algos` named `name`; ConfigError naming every choice otherwise.
template <class Algo, size_t N>
Algo parse_algo(std::string_view name, const Algo (&algos)[N], const char* kind) {
  std::string expected;
  for (size_t i = 0; i < N; ++i) {
    if (to_string(algos[i]) == name) return algos[i];
    expected += (i == 0 ? "" : i + 1 == N ? " or " : ", ") + to_string(algos[i]);
  }
  throw ConfigError(std::string(kind) + " algorithm '" + std::string(name) + "' is unknown (expected " +
                    expected + ")");
}

void check_average_dtype(const BufferView& data, const char* who) {
  if (data.dtype() != DType::kF32 && data.dtype() != DType::kF64)
    throw ConfigError(std::string(who) + ": dtype " + to_string(data.dtype()) +
                      " cannot hold an average (expected f32 or f64)");
}

}  // namespace

std::string to_string(AllreduceAlgo algo) {
  switch (algo) {
    case AllreduceAlgo::kRing:
      return "ring";
    case AllreduceAlgo::kTree:
      return "tree";
    case AllreduceAlgo::kHalvingDoubling:
      return "halving_doubling";
    case AllreduceAlgo::kRecursiveDoubling:
      return "recursive_doubling";
    case AllreduceAlgo::kNative:
      return "native";
    case AllreduceAlgo::kNccl:
      return "nccl";
    case AllreduceAlgo::kMpiTuned:
      return "mpi_tuned";
  }
  return "?";
}

std::vector<std::string> allreduce_algo_names() {
  std::vector<std::string> names;
  for (AllreduceAlgo a : kAllreduceAlgos)
    names.push_back(to_string(a));
  return names;
}

AllreduceAlgo parse_allreduce_algo(std::string_view name) {
  return parse_algo(name, kAllreduceAlgos, "allreduce");
}

std::string to_string(NcclProtocolOption option) {
  switch (option) {
    case NcclProtocolOption::kAuto:
      return "auto";
    case NcclProtocolOption::kSimple:
      return "simple";
    case NcclProtocolOption::kLL:
      return "ll";
    case NcclProtocolOption::kLL128:
      return "ll128";
  }
  return "?";
}

NcclProtocolOption parse_nccl_protocol_option(std::string_view name) {
  for (NcclProtocolOption o : kNcclProtocolOptions)
    if (to_string(o) == name) return o;
  throw ConfigError("NCCL protocol '" + std::string(name) +
                    "' is unknown (expected auto, simple, ll or ll128)");
}

std::vector<std::string> nccl_protocol_option_names() {
  std::vector<std::string> names;
  for (NcclProtocolOption o : kNcclProtocolOptions)
    names.push_back(to_string(o));
  return names;
}

std::string to_string(BroadcastAlgo algo) {
  switch (algo) {
    case BroadcastAlgo::kBinomial:
      return "binomial";
    case BroadcastAlgo::kChain:
      return "chain";
  }
  return "?";
}

BroadcastAlgo parse_broadcast_algo(std::string_view name) {
  return parse_algo(name, kBroadcastAlgos, "broadcast");
}

std::string to_string(ReduceAlgo algo) {
  switch (algo) {
    case ReduceAlgo::kBinomial:
      return "binomial";
    case ReduceAlgo::kChain:
      return "chain";
  }
  return "?";
}

ReduceAlgo parse_reduce_algo(std::string_view name) {
  return parse_algo(name, kReduceAlgos, "reduce");
}

std::string to_string(IntraHostAlgo algo) {
  switch (algo) {
    case IntraHostAlgo::kAuto:
      return "auto";
    case IntraHostAlgo::kBinomial:
      return "binomial";
    case IntraHostAlgo::kChain:
      return "chain";
    case IntraHostAlgo::kNccl:
      return "nccl";
  }
  return "?";
}

IntraHostAlgo parse_intra_host_algo(std::string_view name) {
  return parse_algo(name, kIntraHostAlgos, "intra-host");
}

void allreduce(Transport& transport, const BufferView& data, ReduceOp op, Tag tag, AllreduceAlgo algo,
               NcclProtocolOption protocol) {
  switch (algo) {
    case AllreduceAlgo::kRing:
      ring_allreduce(transport, data, op, tag);
      return;
    case AllreduceAlgo::kTree:
      tree_allreduce(transport, data, op, tag);
      return;
    case AllreduceAlgo::kHalvingDoubling:
      halving_doubling_allreduce(transport, data, op, tag);
      return;
    case AllreduceAlgo::kRecursiveDoubling:
      recursive_doubling_allreduce(transport, data, op, tag);
      return;
    case AllreduceAlgo::kNative: {
      const OperationScope scope("native allreduce");
      if (!transport.native_allreduce(data, op)) ring_allreduce(transport, data, op, tag);
      return;
    }
    case AllreduceAlgo::kNccl:
      nccl_allreduce(transport, data, op, tag, protocol);
      return;
    case AllreduceAlgo::kMpiTuned:
      allreduce(transport, data, op, tag,
                mpi_tuned_choice(transport.size(), static_cast<size_t>(data.bytes().count())));
      return;
  }
  BAGUA_CHECK(false, "allreduce: unknown algorithm " + std::to_string(static_cast<int>(algo)));
}

namespace {

// Our MPI transport on shared memory (Open MPI 4.1, this project's CI machine class), from
// bench_mpi_allreduce: a 1 KiB ring allreduce on 2 ranks (2 messages of 512 B) takes 2.3 us, so about
// 1 us per message; a 1 MiB one (2 messages of 512 KiB, 1 MiB sent per rank) 0.117 ms, so about
// 9 GB/s per rank.
constexpr double kMpiMessageSeconds = 1.0e-6;
constexpr double kMpiSecondsPerByte = 1.0 / 9.0e9;

// Whether Open MPI 4.1's tuned component runs its recursive doubling for an allreduce of `bytes` on
// `ranks` ranks with a commutative operation (sum, min and max are): the switch points of
// ompi_coll_tuned_allreduce_intra_dec_fixed in ompi/mca/coll/tuned/coll_tuned_decision_fixed.c
// (v4.1.4, Debian's openmpi 4.1.4; alg 3 = recursive_doubling), on total_dsize = the buffer's bytes.
// That function picks, for a commutative operation,
//   ranks < 4:         ring below 8 B, recursive doubling below 4 KiB, ring below 8 KiB, recursive
//                      doubling below 16 KiB, ring below 64 KiB, segmented ring below 256 KiB (run as
//                      the plain ring: its segment size is 0), Rabenseifner's halving-doubling above;
//   ranks < 8:         ring below 16 B, recursive doubling below 8 KiB, Rabenseifner above;
//   ranks < 16:        recursive doubling below 8 KiB, Rabenseifner above;
//   ranks < 32:        segmented ring below 64 B, recursive doubling below 4 KiB, Rabenseifner above;
//   ranks < 64:        segmented ring below 128 B, Rabenseifner above;
//   ranks < 128:       recursive doubling below 256 KiB, Rabenseifner above;
//   ranks < 256:       nonoverlapping (reduce + broadcast) below 128 KiB, recursive doubling below
//                      256 KiB, Rabenseifner above;
//   ranks < 512:       nonoverlapping below 4 KiB, Rabenseifner above;
//   ranks < 2048:      nonoverlapping below 2 KiB, recursive doubling below 16 KiB, Rabenseifner above;
//   ranks < 4096:      nonoverlapping below 2 KiB, segmented ring below 4 KiB, recursive doubling below
//                      16 KiB, Rabenseifner above;
//   otherwise:         nonoverlapping below 2 KiB, segmented ring below 16 KiB, recursive doubling
//                      below 32 KiB, Rabenseifner above.
bool open_mpi_runs_recursive_doubling(int ranks, int64_t bytes) {
  if (ranks < 4) return (bytes >= 8 && bytes < 4096) || (bytes >= 8192 && bytes < 16384);
  if (ranks < 8) return bytes >= 16 && bytes < 8192;
  if (ranks < 16) return bytes < 8192;
  if (ranks < 32) return bytes >= 64 && bytes < 4096;
  if (ranks < 64) return false;
  if (ranks < 128) return bytes < 262144;
  if (ranks < 256) return bytes >= 131072 && bytes < 262144;
  if (ranks < 512) return false;
  if (ranks < 2048) return bytes >= 2048 && bytes < 16384;
  if (ranks < 4096) return bytes >= 4096 && bytes < 16384;
  return bytes >= 16384 && bytes < 32768;
}

}  // namespace

AllreduceAlgo mpi_tuned_choice(int ranks, size_t bytes) {
  if (ranks <= 1 || bytes == 0) return AllreduceAlgo::kRing;
  if (open_mpi_runs_recursive_doubling(ranks, static_cast<int64_t>(bytes)))
    return AllreduceAlgo::kRecursiveDoubling;
  // The catalogue's formulas need S divisible by P and by P' (halving-doubling's core): cost the
  // next multiple of P P' (at most P P' bytes more, which only matters for the tiniest buffers).
  int core = 1;
  while (core * 2 <= ranks)
    core *= 2;
  const int64_t unit = static_cast<int64_t>(ranks) * core;
  const Bytes size((static_cast<int64_t>(bytes) + unit - 1) / unit * unit);
  AllreduceAlgo best = AllreduceAlgo::kRing;
  double best_seconds = 0;
  for (AllreduceAlgo algo :
       {AllreduceAlgo::kRing, AllreduceAlgo::kTree, AllreduceAlgo::kHalvingDoubling}) {
    const WireCost cost = allreduce_cost(algo, ranks, size);
    const double seconds = static_cast<double>(cost.steps) * kMpiMessageSeconds +
                           static_cast<double>(cost.sent.count()) * kMpiSecondsPerByte;
    if (algo == AllreduceAlgo::kRing || seconds < best_seconds) {
      best = algo;
      best_seconds = seconds;
    }
  }
  return best;
}

void allreduce_average(Transport& transport, const BufferView& data, Tag tag, AllreduceAlgo algo,
                       NcclProtocolOption protocol) {
  check_average_dtype(data, "allreduce_average");
  allreduce(transport, data, ReduceOp::kSum, tag, algo, protocol);
  scale(data, 1.0 / transport.size());
}

void hierarchical_allreduce_average(HierarchicalGroups& groups, const BufferView& data, Tag tag,
                                    AllreduceAlgo algo, NcclProtocolOption protocol) {
  check_average_dtype(data, "hierarchical_allreduce_average");
  hierarchical_allreduce(groups, data, ReduceOp::kSum, tag, algo, protocol);
  scale(data, 1.0 / groups.world_size);
}

}  // namespace bagua::collectives
