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

constexpr AllreduceAlgo kAllreduceAlgos[] = {
    AllreduceAlgo::kRing,   AllreduceAlgo::kTree, AllreduceAlgo::kHalvingDoubling,
    AllreduceAlgo::kNative, AllreduceAlgo::kNccl, AllreduceAlgo::kMpiTuned};
constexpr BroadcastAlgo kBroadcastAlgos[] = {BroadcastAlgo::kBinomial, BroadcastAlgo::kChain};
constexpr ReduceAlgo kReduceAlgos[] = {ReduceAlgo::kBinomial, ReduceAlgo::kChain};
constexpr IntraHostAlgo kIntraHostAlgos[] = {IntraHostAlgo::kAuto, IntraHostAlgo::kBinomial,
                                             IntraHostAlgo::kChain, IntraHostAlgo::kNccl};

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

void allreduce(Transport& transport, const BufferView& data, ReduceOp op, Tag tag, AllreduceAlgo algo) {
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
    case AllreduceAlgo::kNative: {
      const OperationScope scope("native allreduce");
      if (!transport.native_allreduce(data, op)) ring_allreduce(transport, data, op, tag);
      return;
    }
    case AllreduceAlgo::kNccl:
      nccl_allreduce(transport, data, op, tag);
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

}  // namespace

AllreduceAlgo mpi_tuned_choice(int ranks, size_t bytes) {
  if (ranks <= 1 || bytes == 0) return AllreduceAlgo::kRing;
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

void allreduce_average(Transport& transport, const BufferView& data, Tag tag, AllreduceAlgo algo) {
  check_average_dtype(data, "allreduce_average");
  allreduce(transport, data, ReduceOp::kSum, tag, algo);
  scale(data, 1.0 / transport.size());
}

void hierarchical_allreduce_average(HierarchicalGroups& groups, const BufferView& data, Tag tag,
                                    AllreduceAlgo algo) {
  check_average_dtype(data, "hierarchical_allreduce_average");
  hierarchical_allreduce(groups, data, ReduceOp::kSum, tag, algo);
  scale(data, 1.0 / groups.world_size);
}

}  // namespace bagua::collectives
