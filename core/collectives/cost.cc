#include "core/collectives/cost.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/collectives/nccl.h"

namespace bagua::collectives {

namespace {

void check_shape(int ranks, Bytes size, const char* who) {
  if (ranks < 1)
    throw ConfigError(std::string(who) + ": ranks = " + std::to_string(ranks) + ", expected >= 1");
  if (size.count() < 0)
    throw ConfigError(std::string(who) + ": size = " + std::to_string(size.count()) + " bytes");
}

// S / P for the chunked forms, which assume S divisible by P.
Bytes per_rank(int ranks, Bytes size, const char* who) {
  check_shape(ranks, size, who);
  if (size.count() % ranks != 0)
    throw ConfigError(std::string(who) + ": size " + std::to_string(size.count()) +
                      " bytes is not divisible by " + std::to_string(ranks) + " ranks");
  return Bytes(size.count() / ranks);
}

bool nothing_moves(int ranks, Bytes size) {
  return ranks == 1 || size.count() == 0;
}

}  // namespace

int ceil_log2(int n) {
  BAGUA_CHECK(n >= 1, "ceil_log2 of " + std::to_string(n));
  int k = 0;
  while ((1 << k) < n)
    ++k;
  return k;
}

int floor_log2(int n) {
  BAGUA_CHECK(n >= 1, "floor_log2 of " + std::to_string(n));
  int k = 0;
  while ((2 << k) <= n)
    ++k;
  return k;
}

WireCost ring_reduce_scatter_cost(int ranks, Bytes size) {
  const Bytes chunk = per_rank(ranks, size, "ring_reduce_scatter_cost");
  if (nothing_moves(ranks, size)) return {};
  return {ranks - 1, chunk * (ranks - 1)};
}

WireCost ring_allgather_cost(int ranks, Bytes size) {
  const Bytes chunk = per_rank(ranks, size, "ring_allgather_cost");
  if (nothing_moves(ranks, size)) return {};
  return {ranks - 1, chunk * (ranks - 1)};
}

WireCost ring_allreduce_cost(int ranks, Bytes size) {
  const Bytes chunk = per_rank(ranks, size, "ring_allreduce_cost");
  if (nothing_moves(ranks, size)) return {};
  return {2 * (ranks - 1), chunk * (2 * (ranks - 1))};
}

WireCost reduce_cost(int ranks, Bytes size, int segments) {
  check_shape(ranks, size, "reduce_cost");
  if (nothing_moves(ranks, size)) return {};
  // The leaves send segment j at step j + 1; a rank whose subtree is h levels deep sends it at
  // h + j + 1, so the root has the last segment from its deepest child (floor(lg P) - 1 levels) at
  // floor(lg P) + k - 1. Every rank but the root sends its whole buffer once.
  return {floor_log2(ranks) + segments - 1, size};
}

WireCost reduce_cost(ReduceAlgo algo, int ranks, Bytes size, int segments) {
  check_shape(ranks, size, "reduce_cost");
  if (nothing_moves(ranks, size)) return {};
  switch (algo) {
    case ReduceAlgo::kBinomial:
      return reduce_cost(ranks, size, segments);
    case ReduceAlgo::kChain:
      // The chain broadcast's mirror: the far end (P - 1 ranks from the root) sends segment j at step
      // j + 1, and every rank i hops from the root sends it one step after receiving it, at step
      // (P - 1 - i) + j + 1; the root receives the last segment from rank 1 at step P + k - 2. Every
      // rank but the root sends S once.
      return {ranks + segments - 2, size};
  }
  return {};
}

WireCost broadcast_cost(BroadcastAlgo algo, int ranks, Bytes size, int segments) {
  check_shape(ranks, size, "broadcast_cost");
  if (nothing_moves(ranks, size)) return {};
  switch (algo) {
    case BroadcastAlgo::kBinomial:
      // The root sends each of the k segments to its ceil(lg P) children in turn; its last send is the
      // last step.
      return {static_cast<int64_t>(segments) * ceil_log2(ranks), size * ceil_log2(ranks)};
    case BroadcastAlgo::kChain:
      // Segment j leaves rank i (counted from the root) at step i + j + 1; the last rank gets the last
      // segment from rank P - 2 at step P - 2 + k.
      return {ranks + segments - 2, size};
  }
  return {};
}

WireCost tree_allreduce_cost(int ranks, Bytes size, int segments) {
  check_shape(ranks, size, "tree_allreduce_cost");
  if (nothing_moves(ranks, size)) return {};
  const WireCost up = reduce_cost(ranks, size, segments);
  const WireCost down = broadcast_cost(BroadcastAlgo::kBinomial, ranks, size, segments);
  // The broadcast starts when the root has reduced; the rank whose lowest set bit is the highest below
  // P sends S up and ceil(lg P) - 1 times S down, as much as the root sends down.
  return {up.steps + down.steps, down.sent};
}

WireCost halving_doubling_allreduce_cost(int ranks, Bytes size) {
  check_shape(ranks, size, "halving_doubling_allreduce_cost");
  if (nothing_moves(ranks, size)) return {};
  const int core = 1 << floor_log2(ranks);
  const Bytes chunk = per_rank(core, size, "halving_doubling_allreduce_cost");
  // Halving sends S/2 + S/4 + ... + S/P' = (P' - 1) S / P', doubling as much again.
  const WireCost core_cost{2 * floor_log2(core), chunk * (2 * (core - 1))};
  if (core == ranks) return core_cost;
  // The fold and the unfold add a step each, and a partner sends the whole result back.
  return {core_cost.steps + 2, core_cost.sent + size};
}

WireCost recursive_doubling_allreduce_cost(int ranks, Bytes size) {
  check_shape(ranks, size, "recursive_doubling_allreduce_cost");
  if (nothing_moves(ranks, size)) return {};
  const int rounds = floor_log2(ranks);
  // Every round sends the whole buffer, one message per rank.
  if ((1 << rounds) == ranks) return {rounds, size * rounds};
  // The fold and the unfold add a step each: a folded rank's send is step 1, so its partner's first
  // round is step 2 and the unfold step lg P' + 2; the partner sends every round and the result back.
  return {rounds + 2, size * (rounds + 1)};
}

WireCost allreduce_cost(AllreduceAlgo algo, int ranks, Bytes size) {
  switch (algo) {
    case AllreduceAlgo::kRing:
    case AllreduceAlgo::kNative:
      return ring_allreduce_cost(ranks, size);
    case AllreduceAlgo::kTree:
      return tree_allreduce_cost(ranks, size);
    case AllreduceAlgo::kHalvingDoubling:
      return halving_doubling_allreduce_cost(ranks, size);
    case AllreduceAlgo::kRecursiveDoubling:
      return recursive_doubling_allreduce_cost(ranks, size);
    case AllreduceAlgo::kMpiTuned:
      return allreduce_cost(mpi_tuned_choice(ranks, static_cast<size_t>(size.count())), ranks, size);
    case AllreduceAlgo::kNccl:
      throw ConfigError(
          "allreduce_cost: 'nccl' depends on the topology (nccl_choose); cost the pipelined ring "
          "or the double binary tree");
  }
  return {};
}

namespace {

// Slices per channel chunk: ceil(S / (C P slice)), S divisible by C P.
int64_t slices_per_chunk(int ranks, Bytes size, int channels, Bytes slice, const char* who) {
  const Bytes chunk = per_rank(ranks * channels, size, who);
  if (slice.count() <= 0)
    throw ConfigError(std::string(who) + ": slice of " + std::to_string(slice.count()) + " bytes");
  return (chunk.count() + slice.count() - 1) / slice.count();
}

}  // namespace

WireCost pipelined_reduce_scatter_cost(int ranks, Bytes size, int channels, Bytes slice) {
  const int64_t n = slices_per_chunk(ranks, size, channels, slice, "pipelined_reduce_scatter_cost");
  if (nothing_moves(ranks, size)) return {};
  return {(ranks - 1) * n * channels, Bytes(size.count() / ranks) * (ranks - 1)};
}

WireCost pipelined_allgather_cost(int ranks, Bytes size, int channels, Bytes slice) {
  return pipelined_reduce_scatter_cost(ranks, size, channels, slice);
}

WireCost pipelined_ring_allreduce_cost(int ranks, Bytes size, int channels, Bytes slice) {
  const WireCost half = pipelined_reduce_scatter_cost(ranks, size, channels, slice);
  return {2 * half.steps, half.sent * 2};
}

WireCost pipelined_chain_cost(int ranks, Bytes size, int channels, Bytes slice) {
  check_shape(ranks, size, "pipelined_chain_cost");
  if (nothing_moves(ranks, size)) return {};
  const Bytes part = per_rank(channels, size, "pipelined_chain_cost");
  const int64_t n = (part.count() + slice.count() - 1) / slice.count();
  // Slice m (in posting order) leaves position p at step m + p + 1; the last position receives the
  // last of n C from position P - 2 at step n C + P - 2.
  return {ranks + n * channels - 2, size};
}

WireCost double_tree_allreduce_cost(int hosts, int ranks_per_host, Bytes size, Bytes slice) {
  const int ranks = hosts * ranks_per_host;
  const Bytes part = per_rank(2, size, "double_tree_allreduce_cost");
  check_shape(ranks, size, "double_tree_allreduce_cost");
  if (nothing_moves(ranks, size)) return {};
  HostLayout layout;
  for (int h = 0; h < hosts; ++h) {
    layout.hosts.emplace_back();
    for (int i = 0; i < ranks_per_host; ++i)
      layout.hosts.back().push_back(h * ranks_per_host + i);
  }
  const int64_t n = (part.count() + slice.count() - 1) / slice.count();
  std::vector<std::vector<TreePlace>> place(2);
  for (int tree = 0; tree < 2; ++tree)
    for (int r = 0; r < ranks; ++r)
      place[tree].push_back(double_tree_place(layout, r, tree));
  int64_t links_max = 0;
  int64_t height = 0;  // hops from the deepest rank to its tree's root, the deeper tree
  for (int r = 0; r < ranks; ++r) {
    int64_t links = 0;
    for (int tree = 0; tree < 2; ++tree) {
      const TreePlace& p = place[tree][r];
      links += (p.parent >= 0 ? 1 : 0) + static_cast<int64_t>(p.children.size());
      int64_t depth = 0;
      for (int u = r; place[tree][u].parent >= 0; u = place[tree][u].parent)
        ++depth;
      height = std::max(height, depth);
    }
    links_max = std::max(links_max, links);
  }
  // Slice n - 1 leaves the deepest rank n - 1 slices after slice 0, climbs `height` hops and comes
  // back down as many.
  const int64_t steps = 2 * height + n - 1;
  return {steps, part * links_max};
}

WireCost alltoall_cost(int ranks, Bytes size) {
  const Bytes chunk = per_rank(ranks, size, "alltoall_cost");
  if (nothing_moves(ranks, size)) return {};
  return {ranks - 1, chunk * (ranks - 1)};
}

WireCost neighbour_exchange_cost(int ranks, Bytes size) {
  // One send to each distinct neighbour, posted one after the other: the second leaves at step 2. An
  // empty buffer still travels (zero-byte messages), so the steps depend on P alone.
  check_shape(ranks, size, "neighbour_exchange_cost");
  if (ranks == 1) return {};
  if (ranks == 2) return {1, size};
  return {2, size * 2};
}

namespace {

// The intra-host phases of a two-level form on a host of `ranks` ranks, for S = `size` bytes: the
// plan, and the cost of the reduce onto the leader and of the broadcast from it.
struct IntraHostCost {
  IntraHostPlan plan;
  WireCost up;
  WireCost down;
};

IntraHostCost intra_host_cost(int ranks, Bytes size, const IntraHostOptions& options) {
  // plan_intra_host over bytes (elements of one byte) gives the same plan as over elements whenever
  // the segment is a whole number of elements.
  IntraHostCost cost;
  cost.plan = plan_intra_host(options, ranks, static_cast<size_t>(size.count()), 1);
  const int segments = static_cast<int>(cost.plan.segments);
  if (cost.plan.nccl) {
    // NCCL's channel count follows the links (intra_host_channels): the caller names it.
    if (options.channels <= 0)
      throw ConfigError("the cost of intra_host 'nccl' needs intra_host.channels > 0, got " +
                        std::to_string(options.channels));
    cost.up = pipelined_chain_cost(ranks, size, options.channels, options.segment);
    cost.down = cost.up;
  } else if (cost.plan.chain) {
    cost.up = reduce_cost(ReduceAlgo::kChain, ranks, size, segments);
    cost.down = broadcast_cost(BroadcastAlgo::kChain, ranks, size, segments);
  } else {
    cost.up = reduce_cost(ReduceAlgo::kBinomial, ranks, size);
    cost.down = broadcast_cost(BroadcastAlgo::kBinomial, ranks, size);
  }
  return cost;
}

}  // namespace

WireCost hierarchical_allreduce_cost(int hosts, int ranks_per_host, Bytes size,
                                     const IntraHostOptions& intra_host) {
  check_shape(hosts * ranks_per_host, size, "hierarchical_allreduce_cost");
  if (size.count() == 0) return {};
  const IntraHostCost intra = intra_host_cost(ranks_per_host, size, intra_host);
  const WireCost across = ring_allreduce_cost(hosts, size);
  const int64_t steps = intra.up.steps + across.steps + intra.down.steps;
  if (!intra.plan.chain && !intra.plan.nccl) {
    // A leader sends the ring's bytes and the root's share of the host broadcast; no other rank sends
    // more (a binomial tree's inner rank sends S up and at most ceil(lg Q) - 1 times S down).
    return {steps, across.sent + intra.down.sent};
  }
  // Chains (one segment at a time or NCCL's pipelined ones): a leader sends the ring's bytes and S
  // down the chain; a rank inside the chain (Q >= 3) sends S up and S down.
  const Bytes leader = across.sent + (ranks_per_host >= 2 ? size : Bytes(0));
  const Bytes inner = ranks_per_host >= 3 ? size * 2 : Bytes(0);
  return {steps, std::max(leader, inner)};
}

WireCost hierarchical_reduce_scatter_cost(int hosts, int ranks_per_host, Bytes size,
                                          const IntraHostOptions& intra_host) {
  const int ranks = hosts * ranks_per_host;
  const Bytes chunk = per_rank(ranks, size, "hierarchical_reduce_scatter_cost");
  if (size.count() == 0) return {};
  const WireCost up = intra_host_cost(ranks_per_host, size, intra_host).up;
  const WireCost across = ring_reduce_scatter_cost(hosts, size);
  // The leader hands Q - 1 chunks out one after another; a non-leader sends its whole buffer up once
  // (in a binomial tree and in a chain alike).
  const Bytes leader = across.sent + chunk * (ranks_per_host - 1);
  const Bytes other = ranks_per_host > 1 ? size : Bytes(0);
  return {up.steps + across.steps + (ranks_per_host - 1), std::max(leader, other)};
}

WireCost hierarchical_allgather_cost(int hosts, int ranks_per_host, Bytes size,
                                     const IntraHostOptions& intra_host) {
  const int ranks = hosts * ranks_per_host;
  const Bytes chunk = per_rank(ranks, size, "hierarchical_allgather_cost");
  if (size.count() == 0) return {};
  // The local ranks' chunks reach the leader in one step (all at once).
  const int gather_steps = ranks_per_host > 1 ? 1 : 0;
  const WireCost across = ring_allgather_cost(hosts, size);
  const IntraHostCost intra = intra_host_cost(ranks_per_host, size, intra_host);
  const int64_t steps = gather_steps + across.steps + intra.down.steps;
  if (!intra.plan.chain && !intra.plan.nccl) return {steps, across.sent + intra.down.sent};
  // Chain: the leader sends the ring's bytes and S; a rank inside the chain its chunk and S.
  const Bytes leader = across.sent + (ranks_per_host >= 2 ? size : Bytes(0));
  const Bytes inner = ranks_per_host >= 3 ? chunk + size : Bytes(0);
  return {steps, std::max(leader, inner)};
}

WireCost hierarchical_broadcast_cost(int hosts, int ranks_per_host, Bytes size,
                                     const IntraHostOptions& intra_host) {
  check_shape(hosts * ranks_per_host, size, "hierarchical_broadcast_cost");
  if (size.count() == 0) return {};
  const WireCost across = broadcast_cost(BroadcastAlgo::kBinomial, hosts, size);
  const WireCost down = intra_host_cost(ranks_per_host, size, intra_host).down;
  // The root, a leader, sends to the other leaders, then over its own host (a binomial tree's root
  // or a chain's head sends the most there).
  return {across.steps + down.steps, across.sent + down.sent};
}

}  // namespace bagua::collectives
