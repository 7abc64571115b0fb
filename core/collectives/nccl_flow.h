// NCCL's collectives at flow granularity: a cheap model of the pipelined ring and the double binary
// tree (nccl.h) for studies at a thousand ranks and more, where the slice-level model moves
// 2 (P - 1) x slices messages per channel through every rank of every call.
//
// Terms (as nccl.h; P ranks, C channels, W = PipelineOptions::slices_in_flight):
//   hop      one message from a rank to its ring (or tree) neighbour: alpha, the transport's time
//            for an empty message (route latency, overheads), and the rate of the route alone
//            (FlowCapable::transfer_time), shared by the streams that leave the rank at once
//   tau      one slice's transmission at that rate
//   K        the hops a slice travels in one call: 2 (P - 1) for the ring allreduce, P - 1 for
//            reduce_scatter and allgather, the rank's position on the chain for broadcast and reduce,
//            the deepest path up and the rank's path down for the double binary tree
//   chunk    what one step moves per channel: part / P for the ring, the whole part for broadcast,
//            reduce and the tree (which move it slice by slice)
//   n, m     slices per chunk, and m = min(n, W): the burst, the first m slices of a chunk, sent at
//            once (they share the link and land together)
//   V        the bytes one rank sends to one peer in the call: exactly what the slice-level model
//            sends (the ring allreduce: 2 part - c_r - c_{r+1}, every chunk but the rank's own in the
//            reduce-scatter and every chunk but its right neighbour's in the allgather), each slice
//            as the bytes its protocol puts on the wire (nccl.h wire_bytes; so are tau and a burst)
//
// Derivation (a uniform ring, one channel, link rate b, hop latency alpha). The slice-level ring
// forwards slice j of step t as soon as it has slice j of step t - 1 from its left, and its link
// sends the slices in the order (t, j). With f(t, j) the time slice j of step t has left a rank,
// f(t, j) = max(f(t - 1, j) + alpha, f(previous item)) + tau: the longest path through this
// recursion either walks every item (the link never idles: alpha + V / b) or jumps from step to step
// (K jumps of alpha + a burst, then the last step's slices after its burst). The simulator shares a
// link max-min among the slices in flight, so a step's burst of m slices lands together, after
// alpha + m tau, and a jump costs that. So, per channel:
//   bandwidth  alpha + V / b                          (the transfers, simulated)
//   chain      K (alpha + burst) + tail               (tail: the n - m slices after the burst)
//   window     (slices to the peer) x alpha / W  +  V / b
// and T = the largest. The flow model keeps all three: every rank posts, per channel and peer, one
// transfer of V bytes (all released together, so that max-min sharing sees the link loads of the
// ring's steady state, with whatever else shares the links: the first term is the network model's),
// and waits, concurrently, for the larger of the chain and the window, computed from the transport's
// hop times along the rank's own chain (the K hops ending at the rank; intra-host and inter-host
// hops each costed by the first pair of its kind on the ring, or on the tree: the hosts' first two
// heads). On the ring the C channels' slices leave together (C streams share a hop); on the tree the
// streams of the busiest host, every rank's parent and children in both trees, share the links they
// cross (FlowCapable::sharing_factors: an inner host's head sends to three peers on other hosts, and
// on hosts of one NIC the other tree's head, a leaf there, adds a fourth; on a NIC per rank, a
// rail-optimized DGX, the head's NIC carries its three), one stream its chain.
//
// The start. The chain and the window run from the moment the last rank of the group has come
// (FlowCapable::start_together, a meeting that takes no simulated time): a rank's result holds every
// rank's data (the rings, the tree) or its predecessors' (broadcast, reduce; a late successor holds
// them too once its W slots are full), so no rank's pipeline runs ahead of the last to start. The
// transfers are posted on arrival, as NCCL's kernels post theirs.
//
// The window. At most W slices are in flight per peer. On shared links the W slices in flight
// share the link max-min, land together and free their slots together, so the next W go out
// together: once the sends are in bursts they stay in bursts, of W every alpha + W tau, alpha / W
// more per slice than the link's rate, even where W tau would cover alpha for a window that slid.
// That is the slice level's steady state: the second and later of a run of calls back to back (the
// buckets of a training step whose communication is the bottleneck) pay it within 1 % (GPT-2 XL on
// 128 H100s: 3'034 us per 39 MiB bucket, flow 3'024; 4'662 us per 78 MiB bucket, flow 4'650). A
// first call from a start where every rank begins at once pays less, its sends spread by the data's
// arrival until the window fills (10 MiB on 4 x 8 ranks: 1'641 us, later calls 1'818, flow 1'811).
//
// Ordered streams (FlowCapable::ordered_streams: the transport moves one peer's messages one after
// another, NCCL's socket transport, paper_tcp). The slices sent together do not share the link but
// follow one another: the first lands after alpha + tau1 (tau1: one slice alone) and is forwarded at
// once, so a jump costs alpha + tau1 and the last step's other slices (of every channel, on one
// stream) follow at the stream's rate: chain = K (alpha + tau1) + (C x chunk) / b - tau1. The window
// slides: the oldest slice frees its slot alpha + tau1 after it left, so W slices take at least
// alpha + tau1 and each adds max(0, (alpha + tau1) / W - its stream time).
//
// The double binary tree (double_tree.cc) is taken to forward slice by slice, never a burst (true on
// an ordered transport; on shared links its streams' first slices leave as one, "What it drops"): a
// pipeline whose stages are the hops of the first slice's way (alpha + tau1 each: up the deepest
// path, down to the rank) and whose slowest stage is the rank's busiest hop, where a slice takes its
// share (its stream's share of the busiest links, above) and the window's latency. A pipeline takes the sum of its
// stages and n - 1 times the slowest: chain = the way + n (window latency + share) - tau1 (the
// first slice's time there, counted on its way).
//
// Worked examples (tests/core/collectives/nccl_flow_test.cc): 4 hosts of one rank on a star of
// 100 Gbit/s NICs (12.5 bytes per ns) and 1 us links (alpha = 2 us), an allreduce of 8'000'000 B on
// one channel: chunk 2'000'000 B, slices of 1 MiB, n = m = 2, K = 6; the transfers 2'000 + 960'000
// ns, the chain 6 x (2'000 + 160'000) = 972'000 ns (the slice-level model: 972'006 ns). With 1 ms
// links: the chain 6 x (2'000'000 + 160'000) = 12'960'000 ns (the slice-level model: 12'960'006).
// An ordered broadcast of 4 MiB in 8 slices over 3 hops: 3 x (2'000 + 41'943) + 7 x 41'943 =
// 425'430 ns, as the slice level. The tree of 4 hosts of 8 ranks, 16 MiB: 2'911'114 ns (the slice
// level 3'515'308 on shared links, 2'863'221 on an ordered transport); on a NIC per rank 2'240'025 ns.
// Rank 3 of the first ring starting 1 ms late, on an ordered transport: 1'960'000 and 1'962'000 ns
// (the slice level 1'813'778 to 1'962'006). Measured against the
// slice-level model on 4 hosts of 8 ranks (10 and 256 MiB, 5 us and 1 ms; the rings and the tree on
// calls back to back): the rings within 3.0 %, broadcast and reduce within 6.6 %, the double tree
// -25.6 % and -2.4 % at 5 us (its bursts, below), -1.4 % and +0.8 % at 1 ms.
//
// NCCL's step latency (PipelineOptions::step_latency, nccl_step_latency): every message leaves that
// long after its send, so each hop's alpha carries it, in the chain and in the window alike.
//
// What it drops: per-step contention dynamics (a step's slices meeting other traffic at different
// moments), slot stalls other than the window term, the timing of cross traffic within a call (the
// V bytes move as one flow from the start), the fill of a bandwidth-bound pipeline, the first
// call's faster window (above), calls of a chain (broadcast, reduce) back to back overlapping one
// another, the tree's bursts on links shared max-min (double_tree.cc runs each tree's passes as
// streams of their own, so a stream's first W slices to a peer leave together and land together;
// the tree term here forwards slice by slice: flow -17 % to -26 % at 8 ranks per host and 5 us, -7 %
// at one or two; on an ordered transport, FIFO per pair as NCCL's connections, within 2.5 %), the
// per-rank spread of finishing times (every rank's terms start together; a rank whose hop is fast,
// NVLink, finishes its transfers early but waits for its own chain; on a ring, the ranks after a late
// one get their last slices earlier than the last to start plus a whole chain), and a late rank's
// neighbours' early slices going out as bursts on links shared max-min (the slice level's ring with
// one rank 1 ms late: +800 us more). Only meta buffers: the model carries no data; a
// materialized buffer goes at slice level (flow_granularity below), and a workload whose buffers hold
// data is refused with an error naming cluster.collective_granularity (experiments/runner.cc).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/collectives/nccl.h"
#include "core/transport.h"
#include "core/units.h"

namespace bagua::collectives {

// How NCCL's collectives are carried: kSlice message by message as NCCL moves them (nccl.h, the
// default everywhere), kFlow as a few transfers per call and a closed-form pipeline term (above).
enum class CollectiveGranularity : uint8_t { kSlice, kFlow };
std::string to_string(CollectiveGranularity g);  // "slice", "flow"

// What a Transport must offer for kFlow, besides its messages: the simulator's SimTransport does. A
// capability queried with dynamic_cast, so that every other backend stays as it is (kSlice).
class FlowCapable {
 public:
  virtual ~FlowCapable() = default;
  virtual CollectiveGranularity collective_granularity() const = 0;
  // Blocks the calling stream for `d` of the backend's time (the simulator's virtual time).
  virtual void pause(Time d) = 0;
  // The time one message of `bytes` from group rank `src` to `dst` takes alone on the network, from
  // isend to the receive's completion (netsim's lone_transfer_time).
  virtual Time transfer_time(int src, int dst, Bytes bytes) const = 0;
  // Whether the messages from one rank to another move one after another, an ordered byte stream
  // (netsim's TransportModel::ordered), rather than sharing the links at once.
  virtual bool ordered_streams() const = 0;
  // For each of `transfers` ((src, dst) group ranks, all moving at once): how many times longer it
  // takes than alone, each link's capacity split evenly among the transfers that cross it (>= 1; the
  // most over its route's links of their share against the route's narrowest link alone).
  virtual std::vector<double> sharing_factors(std::span<const std::pair<int, int>> transfers) const = 0;
  // Blocks the calling stream until every rank of the group has called it for `tag` as many times as
  // this rank has; no time passes (the last to come returns at once, the others then).
  virtual void start_together(Tag tag) = 0;
};

// The transport's flow capability where its granularity is kFlow and `data` is a meta buffer, else
// null: a buffer that holds data moves at slice level whatever the granularity, since its bytes must
// arrive (a control value kept in host memory beside meta weights: asynchronous averaging's stop flag,
// core/primitives/async_model_average.h). A workload whose buffers hold data is refused at flow
// granularity before it runs (experiments/runner.cc), so only such control values take this way.
FlowCapable* flow_granularity(Transport& transport, const BufferView& data);

// The flow-granularity forms of nccl.h's collectives: the same signatures, the same bytes per peer,
// and no data moved (meta buffers only).
void flow_reduce_scatter(FlowCapable& flow, Transport& transport, const BufferView& data, Tag tag,
                         const PipelineOptions& options);
void flow_allgather(FlowCapable& flow, Transport& transport, const BufferView& data, Tag tag,
                    const PipelineOptions& options);
void flow_ring_allreduce(FlowCapable& flow, Transport& transport, const BufferView& data, Tag tag,
                         const PipelineOptions& options);
void flow_broadcast(FlowCapable& flow, Transport& transport, const BufferView& data, int root, Tag tag,
                    const PipelineOptions& options);
void flow_reduce(FlowCapable& flow, Transport& transport, const BufferView& data, int root, Tag tag,
                 const PipelineOptions& options);
void flow_double_tree_allreduce(FlowCapable& flow, Transport& transport, const BufferView& data,
                                Tag tag, const PipelineOptions& options);

}  // namespace bagua::collectives
