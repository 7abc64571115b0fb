// The catalogue of core/collectives/collectives.h as functions: for each collective, the number of
// steps and the bytes the busiest rank sends, in terms of P (ranks) and S (bytes), for S divisible by P
// (the chunked forms) — docs/algorithms.md derives every entry.
//
// A *step* is a message on the critical path when each rank's sends go one after another: a message's
// step is one more than the larger of the sender's previous send's step and the steps of the messages
// the sender received before posting it; a collective takes as many steps as its latest message. In the
// alpha-beta model with one message in flight per rank, a collective whose steps each carry m bytes
// takes steps * (alpha + m / beta).
#pragma once

#include <cstdint>

#include "core/collectives/collectives.h"
#include "core/units.h"

namespace bagua::collectives {

struct WireCost {
  int64_t steps = 0;
  Bytes sent;  // bytes sent by the rank that sends the most
  bool operator==(const WireCost&) const = default;
};

int ceil_log2(int n);   // ceil(log2 n), 0 for n = 1
int floor_log2(int n);  // floor(log2 n)

WireCost ring_reduce_scatter_cost(int ranks, Bytes size);
WireCost ring_allgather_cost(int ranks, Bytes size);
WireCost ring_allreduce_cost(int ranks, Bytes size);
// `segments` = k, the number of segments the buffer is moved in.
WireCost tree_allreduce_cost(int ranks, Bytes size, int segments = 1);
WireCost halving_doubling_allreduce_cost(int ranks, Bytes size);
// Any S (the whole buffer moves every round).
WireCost recursive_doubling_allreduce_cost(int ranks, Bytes size);
// kNative is costed as the ring it falls back to. kNccl's cost depends on the topology and the size
// (nccl_choose): ConfigError here; cost the pipelined ring or the double binary tree below.
WireCost allreduce_cost(AllreduceAlgo algo, int ranks, Bytes size);
WireCost reduce_cost(int ranks, Bytes size, int segments = 1);  // binomial
WireCost reduce_cost(ReduceAlgo algo, int ranks, Bytes size, int segments = 1);
WireCost broadcast_cost(BroadcastAlgo algo, int ranks, Bytes size, int segments = 1);
WireCost alltoall_cost(int ranks, Bytes size);
// `size` = S, the bytes every rank sends to each distinct ring neighbour.
WireCost neighbour_exchange_cost(int ranks, Bytes size);

// NCCL's pipelined ring (core/collectives/nccl.h) on C = `channels` channels in slices of at most
// `slice` bytes, for S divisible by C P: each channel's chunk of S / (C P) bytes moves in
// n = ceil(S / (C P slice)) slices, and a rank sends each slice of each channel of each step, one
// message after another: steps = (ring steps) n C, bytes as the bulk ring. (With the window never
// binding and one slice per link at a time, the critical path is ring steps + n - 1 slice times: see
// docs/algorithms.md.) Broadcast and reduce: the chain, P + n C - 2 steps, S bytes.
WireCost pipelined_reduce_scatter_cost(int ranks, Bytes size, int channels, Bytes slice);
WireCost pipelined_allgather_cost(int ranks, Bytes size, int channels, Bytes slice);
WireCost pipelined_ring_allreduce_cost(int ranks, Bytes size, int channels, Bytes slice);
WireCost pipelined_chain_cost(int ranks, Bytes size, int channels, Bytes slice);  // broadcast, reduce
// The double binary tree allreduce on `hosts` hosts of `ranks_per_host` ranks, 2 max(1, C / 2) parts
// of S / parts bytes in slices of at most `slice` bytes: every rank sends its part of each tree to its
// parent and to each child, so the busiest rank sends (links in tree 0 + links in tree 1) S / 2 (for
// C <= 3); steps: the pipeline's depth, 2 h + n - 1 for trees h hops high and n slices per part (the
// flows of one rank interleave as their data arrives, so a rank's message order, and the step count
// of the serial definition above, depend on timing: tests check the bytes, and that the serial count
// is at least this depth).
WireCost double_tree_allreduce_cost(int hosts, int ranks_per_host, Bytes size, Bytes slice);

// Two-level forms on `hosts` hosts of `ranks_per_host` ranks each, numbered host by host, with a ring
// among the leaders; the broadcast's root is a host leader. The intra-host phases are the ones
// plan_intra_host picks from `intra_host` for S bytes (the segment taken to be a whole number of
// elements, as the default 512 KiB is for every dtype). For IntraHostAlgo::kNccl each phase is
// pipelined_chain_cost(Q, S, intra_host.channels, intra_host.segment), bytes as the chains'; its
// channel count depends on the links, so intra_host.channels must be > 0 here (ConfigError).
WireCost hierarchical_allreduce_cost(int hosts, int ranks_per_host, Bytes size,
                                     const IntraHostOptions& intra_host = {});
WireCost hierarchical_reduce_scatter_cost(int hosts, int ranks_per_host, Bytes size,
                                          const IntraHostOptions& intra_host = {});
WireCost hierarchical_allgather_cost(int hosts, int ranks_per_host, Bytes size,
                                     const IntraHostOptions& intra_host = {});
WireCost hierarchical_broadcast_cost(int hosts, int ranks_per_host, Bytes size,
                                     const IntraHostOptions& intra_host = {});

}  // namespace bagua::collectives
