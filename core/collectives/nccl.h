// NCCL's own algorithms over the Transport: the pipelined ring (allreduce, reduce_scatter, allgather,
// broadcast, reduce) and the double binary tree allreduce, as NCCL's Simple protocol runs them, and
// the tuning model that picks between them per call (AllreduceAlgo::kNccl).
//
// Terms (the NVIDIA/nccl names; every figure cites its file and constant):
//   channel  the buffer is cut into C parts by chunk_range; part c is moved by channel c, its own ring
//            (or tree) running concurrently with the others (NCCL's nChannels, one thread block each)
//   chunk    a channel's part cut once more into P chunks (ring) as ring.cc cuts a buffer; one ring
//            step moves one chunk of one channel
//   step     NCCL's buffer unit: stepSize = NCCL_BUFFSIZE / NCCL_STEPS = 4 MiB / 8 = 512 KiB
//            (DEFAULT_BUFFSIZE (1 << 22) in src/init.cc, NCCL_STEPS 8 in src/include/device.h,
//            stepSize in src/enqueue.cc)
//   slice    what moves in one message: slice_steps steps (ALLREDUCE_SLICESTEPS = NCCL_STEPS / 4 = 2
//            for allreduce, reduce_scatter and allgather; BROADCAST_SLICESTEPS = REDUCE_SLICESTEPS
//            = 1, src/include/collectives.h); a chunk is moved slice by slice
//   slot     one step of a peer's receive buffer: NCCL_STEPS = 8 per peer per channel. A slice holds
//            slice_steps slots, so at most slots / slice_steps slices of one channel are in flight to
//            one peer (NCCL's credit-based flow control, src/device/prims_simple.h); a rank forwards
//            a slice as soon as it has received (and reduced) it and waits for an earlier send only
//            to reuse its slot.
//
// A slot is counted free again when its send completes (on the simulator: when its bytes land);
// NCCL frees it when the receiver has consumed the step, a little later. Messages between a pair
// carry the caller's one tag: every rank posts its sends, and its receives, in one strict order
// (step, slice, channel), the same on both sides of every pair, so that posting-order matching
// keeps the channels apart. Only the Simple protocol is modelled (not LL, not LL128).
#pragma once

#include <string>

#include "core/collectives/collectives.h"
#include "core/units.h"

namespace bagua::collectives {

// ---- Pipelining ----------------------------------------------------------------------------------

// NCCL_STEPS (src/include/device.h).
constexpr int kNcclSteps = 8;
// stepSize = DEFAULT_BUFFSIZE / NCCL_STEPS = (1 << 22) / 8 (src/init.cc, src/enqueue.cc).
constexpr Bytes kNcclStepSize = Bytes((int64_t{1} << 22) / kNcclSteps);
// ALLREDUCE_SLICESTEPS = NCCL_STEPS / 4 (src/include/collectives.h).
constexpr int kAllreduceSliceSteps = kNcclSteps / 4;
// ALLGATHER_SLICESTEPS = NCCL_STEPS / 4 (src/include/collectives.h).
constexpr int kAllgatherSliceSteps = kNcclSteps / 4;
// BROADCAST_SLICESTEPS = REDUCE_SLICESTEPS = 1 (src/include/collectives.h).
constexpr int kBroadcastSliceSteps = 1;

struct PipelineOptions {
  int channels = 1;                        // C >= 1
  Bytes step = kNcclStepSize;              // > 0
  int slice_steps = kAllreduceSliceSteps;  // >= 1, <= slots
  int slots = kNcclSteps;                  // >= 1
  // Slices of one channel in flight to one peer: slots / slice_steps.
  int slices_in_flight() const;
  // Elements per slice for `element_bytes`-byte elements: step x slice_steps, whole elements, >= 1.
  size_t slice_elements(size_t element_bytes) const;
};
// Throws ConfigError naming the field and value for an option out of range.
void validate(const PipelineOptions& options);
// The defaults with BROADCAST_SLICESTEPS / REDUCE_SLICESTEPS = 1.
PipelineOptions broadcast_pipeline(int channels = 1);

// ---- The pipelined ring --------------------------------------------------------------------------

// The same results as reduce_scatter, allgather, ring_allreduce, broadcast (BroadcastAlgo::kChain
// order: root, root + 1, ...) and reduce (ReduceAlgo::kChain order: root + 1, ..., root), the buffer
// cut into channels as NCCL cuts it for each call (ncclCollCbdPart, src/enqueue.cc and src/device/
// *.h): the allreduce, broadcast and reduce give channel c part c of the buffer (chunk_range), which
// the ring cuts into P chunks; the reduce-scatter and the allgather, whose buffers hold one block per
// rank (chunk r of the buffer, as ring.cc cuts it: ncclReduceScatter's and ncclAllGather's
// rank-major layout), give channel c part c of every rank's block, so that rank r ends holding
// chunk r of the buffer, exactly as with the bulk-synchronous ring (all_gather.h's runRing: offset =
// dataOffset + rankDest x count, dataOffset the channel's part of a block).
void pipelined_reduce_scatter(Transport& transport, const BufferView& data, ReduceOp op, Tag tag,
                              const PipelineOptions& options = {});
void pipelined_allgather(Transport& transport, const BufferView& data, Tag tag,
                         const PipelineOptions& options = {});
void pipelined_ring_allreduce(Transport& transport, const BufferView& data, ReduceOp op, Tag tag,
                              const PipelineOptions& options = {});
void pipelined_broadcast(Transport& transport, const BufferView& data, int root, Tag tag,
                         const PipelineOptions& options = broadcast_pipeline());
void pipelined_reduce(Transport& transport, const BufferView& data, int root, ReduceOp op, Tag tag,
                      const PipelineOptions& options = broadcast_pipeline());

// ---- The double binary tree ----------------------------------------------------------------------

// One rank's place in one tree: its parent (-1 at the root) and children (ranks of the transport).
struct TreePlace {
  int parent = -1;
  std::vector<int> children;
  bool operator==(const TreePlace&) const = default;
};

// NCCL's binary tree over n nodes (ncclGetBtree, src/graph/trees.cc): node `node`'s parent and its
// children, -1 where there is none. And the second tree of the double binary tree (ncclGetDtree):
// the first mirrored (node n - 1 - i) for even n, shifted by one (i + 1 mod n) for odd n.
struct NodeLinks {
  int parent = -1;
  int child0 = -1;
  int child1 = -1;
};
NodeLinks btree_links(int nodes, int node);
NodeLinks dtree_links(int nodes, int node, int tree);  // tree 0 or 1

// Rank `rank`'s place in tree `tree` of the double binary tree over `layout`'s hosts: the hosts form
// ncclGetDtree's trees, and inside a host its ranks form a chain, its head linked to the other hosts'
// heads: in tree 0 the host's ranks in order (the lowest heads it), in tree 1 the other way.
TreePlace double_tree_place(const HostLayout& layout, int rank, int tree);

// Allreduce by two binary trees: the buffer is cut into 2 max(1, C / 2) parts, part p reduced up tree
// p mod 2 and broadcast back down it, slice by slice (slices_in_flight per peer), as NCCL's
// runTreeUpDown (src/device/all_reduce.h) does on each channel; a slice goes down as soon as the root
// has it. One rank's code serves both trees and both directions in the order their data should
// arrive (double_tree.cc), where NCCL gives each channel its own thread block.
void double_tree_allreduce(Transport& transport, const BufferView& data, ReduceOp op, Tag tag,
                           const PipelineOptions& options = {});

// ---- The tuning model (src/graph/tuning.cc, ncclTopoTuneModel and ncclTopoGetAlgoTime) ----------

enum class NcclAlgo : uint8_t { kRing, kTree };
std::string to_string(NcclAlgo algo);  // "ring", "tree"

// What NCCL's model needs to know of a communicator.
struct NcclTopology {
  int nodes = 1;  // nNodes
  int ranks = 1;  // nRanks
  // graphs[a]->bwIntra, bwInter: bus bandwidth of all channels together (NCCL's per-channel figure
  // times nChannels) inside a node and across nodes.
  Bandwidth intra_bandwidth;
  Bandwidth inter_bandwidth;
  bool nvlink = true;           // typeIntra == LINK_NVL (else PCI)
  Time inter_latency;           // graphs[a]->latencyInter, added to the NET latency (twice: flush)
  int compute_capability = 70;  // minCompCap: the paper's V100 (SM 7.0)
  int max_channels = 2;         // comm->nChannels
};

// The topology of `transport`: nodes and ranks from host_layout, bandwidths and the inter-node
// latency from transport.link_hint() where the transport has one, else NCCL's defaults PCI_BW =
// NET_BW = 12 GB/s (src/graph/topo.h) and no added latency, intra-node taken as PCI.
NcclTopology nccl_topology(const Transport& transport, int max_channels = 2);

// The model's terms for an allreduce of `bytes` (Simple protocol), in microseconds and GB/s as
// tuning.cc keeps them.
double nccl_latency_us(const NcclTopology& topo, NcclAlgo algo, Bytes bytes);
double nccl_bandwidth_gbs(const NcclTopology& topo, NcclAlgo algo, Bytes bytes);
// time = latency + bytes / (1000 x bandwidth) (ncclTopoGetAlgoTime).
double nccl_time_us(const NcclTopology& topo, NcclAlgo algo, Bytes bytes);
// The channel count for `bytes` (topoGetAlgoInfo, src/enqueue.cc): fewer channels while
// bytes < channels x threads x NCCL_SIMPLE_THREAD_THRESHOLD.
int nccl_channels(const NcclTopology& topo, NcclAlgo algo, Bytes bytes);

struct NcclChoice {
  NcclAlgo algo = NcclAlgo::kRing;
  int channels = 1;
  double time_us = 0;
  bool operator==(const NcclChoice&) const = default;
};
// The algorithm of least modelled time (ring on a tie), and its channel count.
NcclChoice nccl_choose(const NcclTopology& topo, Bytes bytes);
// A readable account of the model for `bytes`: every term of both algorithms and the choice.
std::string describe(const NcclTopology& topo, Bytes bytes);

// The allreduce NCCL would run: nccl_choose on nccl_topology(transport), then the pipelined ring or
// the double binary tree with that many channels.
void nccl_allreduce(Transport& transport, const BufferView& data, ReduceOp op, Tag tag);

// The allgather ncclAllGather runs (AllgatherAlgo::kNccl): the pipelined ring on
// nccl_channels(nccl_topology(transport), kRing, S) channels, S the gathered buffer's bytes (NCCL
// tunes an allgather on nBytes = nRanks x sendcount x element size: ncclFuncMaxSendRecvCount in
// src/include/enqueue.h, used by topoGetAlgoInfo in src/enqueue.cc), in slices of
// ALLGATHER_SLICESTEPS = NCCL_STEPS / 4 = 2 steps (src/include/collectives.h; runRing of
// src/device/all_gather.h runs ProtoSimple<ALLGATHER_CHUNKSTEPS / ALLGATHER_SLICESTEPS,
// ALLGATHER_SLICESTEPS>). Ring only: NCCL's other allgather algorithms are not modelled (PAT, from
// NCCL 2.23, serves one rank per node; NVLS and CollNet need NVSwitch or SHARP hardware), nor the
// order in which NCCL walks a channel's part (ALLGATHER_CHUNKSTEPS = 4 steps through all P - 1 ring
// steps, then the next 4): here each ring step forwards its chunk slice by slice as soon as each
// slice is there, as the pipelined allreduce does.
void nccl_allgather(Transport& transport, const BufferView& data, Tag tag);

}  // namespace bagua::collectives
