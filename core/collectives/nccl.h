// NCCL's own algorithms over the Transport: the pipelined ring (allreduce, reduce_scatter, allgather,
// broadcast, reduce) and the double binary tree allreduce, under NCCL's three protocols, and the
// tuning model that picks the algorithm and the protocol per call (AllreduceAlgo::kNccl).
//
// Every NCCL figure cites its file and constant in NVIDIA/nccl v2.30.7-1 (the tuning constants
// ncclTunerConstantsDefaults and the 24-entry treeCorrectionFactor of src/graph/tuning.cc, which the
// Simple figures below have matched since v2.29.2).
//
// Terms (the NVIDIA/nccl names):
//   channel  the buffer is cut into C parts by chunk_range; part c is moved by channel c, its own ring
//            (or tree) running concurrently with the others (NCCL's nChannels, one thread block each)
//   chunk    a channel's part cut once more into P chunks (ring) as ring.cc cuts a buffer; one ring
//            step moves one chunk of one channel
//   protocol how a step's bytes travel (NCCL_PROTO; src/include/device.h):
//            Simple  the data as it is, then a flag and a memory fence per step (and a flush of the
//                    network receive): full bandwidth, the highest latency per step;
//            LL      "low latency": lines of 16 bytes (ncclLLFifoLine), 8 data bytes each with a
//                    4-byte flag beside every 4 data bytes, so the receiver polls the data itself:
//                    half the bus bandwidth (twice the payload on the wire), the lowest latency;
//            LL128   lines of 128 bytes (NCCL_LL128_LINESIZE) of which 120 carry data and 8 a flag,
//                    written by warps in units of 2048 bytes carrying 1920 (prims_ll128.h): 128 / 120
//                    of the payload on the wire; needs NVLink-class ordering (the enable rule of
//                    ncclTopoTuneModel, nccl_protocol_enabled)
//   step     NCCL's buffer unit: a protocol's buffer (buffSizes, src/init.cc) over NCCL_STEPS = 8;
//            in data bytes, Simple 4 MiB / 8 = 512 KiB, LL 512 KiB / 8 / 2 = 32 KiB, LL128
//            4'915'200 / 8 x 120 / 128 = 576'000 B (calcCollChunking, src/enqueue.cc)
//   slice    what moves in one message: slice_steps steps (Simple's ring: ALLREDUCE_SLICESTEPS =
//            NCCL_STEPS / 4 = 2 for allreduce, reduce_scatter and allgather; BROADCAST_SLICESTEPS =
//            REDUCE_SLICESTEPS = 1, src/include/collectives.h; every tree and every LL and LL128
//            call: 1, calcCollChunking); a chunk is moved slice by slice
//   slot     one step of a peer's receive buffer: NCCL_STEPS = 8 per peer per channel. A slice holds
//            slice_steps slots, so at most slots / slice_steps slices of one channel are in flight to
//            one peer (NCCL's credit-based flow control, src/device/prims_simple.h, and waitSend of
//            prims_ll.h and prims_ll128.h); a rank forwards a slice as soon as it has received (and
//            reduced) it and waits for an earlier send only to reuse its slot.
//
// A slot is counted free again when its send completes (on the simulator: when its bytes land);
// NCCL frees it when the receiver has consumed the step, a little later. Messages between a pair
// carry the caller's one tag: every rank posts its sends, and its receives, in one strict order
// (step, slice, channel), the same on both sides of every pair, so that posting-order matching
// keeps the channels apart. Under LL and LL128 every message is sent as the protocol's lines (data
// and flags, protocol_transport): its wire bytes are what the network carries and times. The
// protocols' cost per step on the GPU (the flag polling, fences and flushes that
// ncclTopoTuneModel's latencies charge beyond LL's) is each message's StepLatency: on the simulator
// it leaves that long after its send is posted (nccl_step_latency). NCCL's per-call base latencies
// (kernel launch and setup, baseLatencies) are not charged.
#pragma once

#include <memory>
#include <string>

#include "core/collectives/collectives.h"
#include "core/units.h"

namespace bagua::collectives {

// ---- Algorithms and protocols -------------------------------------------------------------------

// NCCL_ALGO_RING and NCCL_ALGO_TREE (src/include/device.h); NCCL's other algorithms (CollNet, NVLS,
// PAT) need hardware or a shape the model leaves out.
enum class NcclAlgo : uint8_t { kRing, kTree };
std::string to_string(NcclAlgo algo);  // "ring", "tree"

// NCCL_PROTO_LL, NCCL_PROTO_LL128, NCCL_PROTO_SIMPLE (src/include/device.h), in NCCL's order.
enum class NcclProtocol : uint8_t { kLL, kLL128, kSimple };
std::string to_string(NcclProtocol protocol);  // "ll", "ll128", "simple"

// LL: a line is a ncclLLFifoLine of 16 bytes, data1, flag1, data2, flag2 of 4 bytes each: 8 data
// bytes (src/include/device.h).
constexpr int64_t kLLLineBytes = 16;
constexpr int64_t kLLLineDataBytes = 8;
// LL128: a line of NCCL_LL128_LINESIZE = 128 bytes, NCCL_LL128_DATAELEMS = 15 of its
// NCCL_LL128_LINEELEMS = 16 words of 8 bytes carrying data, the last the flag (src/include/device.h).
constexpr int64_t kLL128LineBytes = 128;
constexpr int64_t kLL128LineDataBytes = 120;
// A warp writes WireWordPerSlice = WARP_SIZE x NCCL_LL128_SHMEM_ELEMS_PER_THREAD = 32 x 8 words
// = 2048 bytes (16 lines, 1920 data bytes) at a time, and a step sends whole warps' worth: divUp(
// nelem, DataEltPerSlice) x WireWordPerSlice words (GenericOp in src/device/prims_ll128.h).
constexpr int64_t kLL128WarpBytes = 32 * 8 * 8;
constexpr int64_t kLL128WarpDataBytes = kLL128WarpBytes / kLL128LineBytes * kLL128LineDataBytes;

// The bytes a message of `payload` bytes puts on the wire: Simple the payload; LL 16 bytes per 8
// (waitSend(divUp(nelem, EltPerLine) x sizeof(ncclLLFifoLine)), prims_ll.h); LL128 2048 bytes per
// 1920 (kLL128WarpBytes).
Bytes wire_bytes(NcclProtocol protocol, Bytes payload);

// ---- Pipelining ----------------------------------------------------------------------------------

// NCCL_STEPS (src/include/device.h).
constexpr int kNcclSteps = 8;
// Simple: stepSize = DEFAULT_BUFFSIZE / NCCL_STEPS = (1 << 22) / 8 (src/init.cc, src/enqueue.cc).
constexpr Bytes kNcclStepSize = Bytes((int64_t{1} << 22) / kNcclSteps);
// LL: DEFAULT_LL_BUFFSIZE = NCCL_LL_LINES_PER_THREAD 8 x NCCL_LL_MAX_NTHREADS 512 x NCCL_STEPS x 16 B
// = 512 KiB of lines (src/init.cc, src/include/device.h); a step is 64 KiB of lines, and
// calcCollChunking (src/enqueue.cc) halves it into the data a step carries, chunkSize /= 2: 32 KiB.
constexpr int64_t kLLBuffSize = 8 * 512 * kNcclSteps * kLLLineBytes;
constexpr Bytes kLLStepSize = Bytes(kLLBuffSize / kNcclSteps * kLLLineDataBytes / kLLLineBytes);
// LL128: DEFAULT_LL128_BUFFSIZE = NCCL_LL128_ELEMS_PER_THREAD 120 x NCCL_LL128_MAX_NTHREADS 640 x
// NCCL_STEPS x 8 B = 4'915'200 B (src/init.cc); a step is 614'400 B of lines, of which calcCollChunking
// keeps the data words, chunkSize / NCCL_LL128_LINEELEMS x NCCL_LL128_DATAELEMS: 576'000 B.
constexpr int64_t kLL128BuffSize = 120 * 640 * kNcclSteps * 8;
constexpr Bytes kLL128StepSize =
    Bytes(kLL128BuffSize / kNcclSteps / (kLL128LineBytes / 8) * (kLL128LineDataBytes / 8));
// ALLREDUCE_SLICESTEPS = NCCL_STEPS / 4 (src/include/collectives.h).
constexpr int kAllreduceSliceSteps = kNcclSteps / 4;
// ALLGATHER_SLICESTEPS = NCCL_STEPS / 4 (src/include/collectives.h).
constexpr int kAllgatherSliceSteps = kNcclSteps / 4;
// BROADCAST_SLICESTEPS = REDUCE_SLICESTEPS = 1 (src/include/collectives.h).
constexpr int kBroadcastSliceSteps = 1;

// The GPU's work per step that a message of the transport does not pay (nccl_step_latency): each
// message (one slice) leaves this long after its send is posted, `intra` between ranks of one host,
// `inter` across hosts; the sending stream goes on at once. Zero: none (a real backend's GPU does the
// work itself; the pipelines' own tests).
struct StepLatency {
  Time intra;
  Time inter;
  bool operator==(const StepLatency&) const = default;
};

// What a transport offers for StepLatency: a send handed to the network `delay` after the call,
// without blocking the caller (the simulator's SimTransport). A capability queried with
// dynamic_cast, as FlowCapable (nccl_flow.h): other backends pay no modelled delay.
class DelayedSend {
 public:
  virtual ~DelayedSend() = default;
  virtual RequestPtr isend_after(Time delay, const BufferView& data, int dst, Tag tag) = 0;
};

struct PipelineOptions {
  int channels = 1;                        // C >= 1
  Bytes step = kNcclStepSize;              // > 0: the data bytes of one step
  int slice_steps = kAllreduceSliceSteps;  // >= 1, <= slots
  int slots = kNcclSteps;                  // >= 1
  // How every message travels: under LL and LL128 as the protocol's lines, wire_bytes of its data.
  NcclProtocol protocol = NcclProtocol::kSimple;
  // Charged per message on a transport that offers DelayedSend: NCCL's collectives set it from
  // nccl_step_latency for their algorithm and protocol.
  StepLatency step_latency;
  // Slices of one channel in flight to one peer: slots / slice_steps.
  int slices_in_flight() const;
  // Elements per slice for `element_bytes`-byte elements: step x slice_steps, whole elements, >= 1.
  size_t slice_elements(size_t element_bytes) const;
};
// Throws ConfigError naming the field and value for an option out of range.
void validate(const PipelineOptions& options);
// The defaults with BROADCAST_SLICESTEPS / REDUCE_SLICESTEPS = 1.
PipelineOptions broadcast_pipeline(int channels = 1);

// `transport` as a pipeline of `options` uses it: `transport` itself for Simple without a step
// latency (or on a transport without DelayedSend); else an adapter, kept in `adapter`, that sends every
// message `options.step_latency` late (intra or inter by its peer's host) and, for LL and LL128, as
// the protocol's lines (its data with a flag per line, the flag being the message's number on its
// (peer, tag) pair, as NCCL's flag is the step's), receiving them back into the data and checking
// every flag. The adapter serves one stream of one rank.
Transport& protocol_transport(Transport& transport, const PipelineOptions& options,
                              std::unique_ptr<Transport>& adapter);

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
// runTreeSplit (src/device/all_reduce.h) does on each channel; a slice goes down as soon as the root
// has it. Each tree's up and down passes (the root's one pass) are streams of their own
// (Transport::concurrently), each tree on its own matching space, as NCCL gives each channel its own
// thread block, split between the two passes.
void double_tree_allreduce(Transport& transport, const BufferView& data, ReduceOp op, Tag tag,
                           const PipelineOptions& options = {});

// ---- The tuning model (src/graph/tuning.cc, ncclTopoTuneModel and ncclTopoGetAlgoTime) ----------

// What NCCL's model needs to know of a communicator.
struct NcclTopology {
  int nodes = 1;  // nNodes
  int ranks = 1;  // nRanks
  // graphs[a]->bwIntra, bwInter: bus bandwidth of all channels together (NCCL's per-channel figure
  // times nChannels) inside a node and across nodes.
  Bandwidth intra_bandwidth;
  Bandwidth inter_bandwidth;
  bool nvlink = true;  // typeIntra == LINK_NVL (else PCI)
  Time inter_latency;  // graphs[a]->latencyInter, added to the NET latency (twice: flush)
  // minCompCap = maxCompCap, major x 10 + minor: the cluster's (LinkHint::compute_capability), else
  // the paper's V100 (SM 7.0). It picks the rows of perChMaxTreeBws, perChMaxRingLL128Bws,
  // perChMaxTreeLL128Bws and (on one node) llMaxBws, the ring's plateau factor and LL128's rule.
  int compute_capability = 70;
  int max_channels = 2;  // comm->nChannels
  // graphs[a]->typeInter <= PATH_PXB: each GPU reaches its NIC through PCIe switches only, as on
  // DGX-class servers (false: through the CPU, PATH_PHB or SYS): LinkHint::nic_near_device, else
  // true. Only LL128's enable rule reads it.
  bool nic_near_gpu = true;
};

// The topology of `transport`: nodes and ranks from host_layout; bandwidths, the inter-node latency,
// the compute capability and the NIC's path from transport.link_hint() where the transport has one,
// else NCCL's defaults PCI_BW = NET_BW = 12 GB/s (src/graph/topo.h) and no added latency, intra-node
// taken as PCI, SM 7.0.
NcclTopology nccl_topology(const Transport& transport, int max_channels = 2);

// The model's terms for an allreduce of `bytes` by `algo` under `protocol`, in microseconds and GB/s
// as tuning.cc keeps them (ncclTopoTuneModel's latencies and bandwidths, with ncclTopoGetAlgoTime's
// corrections for the size: the tree's treeCorrectionFactor, Simple's ring plateau).
double nccl_latency_us(const NcclTopology& topo, NcclAlgo algo, Bytes bytes,
                       NcclProtocol protocol = NcclProtocol::kSimple);
double nccl_bandwidth_gbs(const NcclTopology& topo, NcclAlgo algo, Bytes bytes,
                          NcclProtocol protocol = NcclProtocol::kSimple);
// time = latency + bytes / (1000 x bandwidth) (ncclTopoGetAlgoTime).
double nccl_time_us(const NcclTopology& topo, NcclAlgo algo, Bytes bytes,
                    NcclProtocol protocol = NcclProtocol::kSimple);
// The part of NCCL's per-step latencies that is the GPU's work under `protocol`, which a message of
// the simulator does not pay: ncclTopoTuneModel's latency of one step of `algo` (hwLatencies inside
// a node, with the ring's net overhead on several nodes; across nodes hwLatencies[NET], the ring
// taking the tree's at one rank per node) less LL's, both without latencyInter (the plugin's reported
// network latency, 0 for IB and sockets, which the simulated message pays as its route's latency).
// LL's step is its data landing with its flags beside it, polled by the receiver (prims_ll.h): the
// link's own latency. LL128 adds its warps' flag checks (prims_ll128.h); Simple a system-wide fence
// and a flag after every slice (postPeer's fence_acq_rel_sys, prims_simple.h) and, across nodes, the
// proxies' handling and the receiver's flush of what the network wrote (iflush in
// src/transport/net.cc). Zero on one rank. E.g. the
// tree across nodes: Simple 14 - 5.0 = 9.0 us, LL128 8.5 - 5.0 = 3.5 us; the ring on NVLink on one
// node: Simple 3.4 - 0.6 = 2.8 us, LL128 1.9 - 0.6 = 1.3 us.
StepLatency nccl_step_latency(const NcclTopology& topo, NcclAlgo algo, NcclProtocol protocol);
// Whether NCCL considers `protocol` when NCCL_PROTO is unset: LL and Simple always; LL128 where
// ncclTopoTuneModel enables it by default (protoEnable 2): intra-node paths no slower than NVLink
// through NVSwitch (typeIntra <= PATH_NVB: NVLink, or one GPU per node), the NIC near the GPU
// (typeInter <= PATH_PXB, or PATH_PXN from SM 9.0), and SM 7.0 or newer.
bool nccl_protocol_enabled(const NcclTopology& topo, NcclProtocol protocol);
// The channel count for `bytes` (topoGetAlgoInfo, src/enqueue.cc): fewer channels while
// bytes < channels x threads x threadThreshold, the protocol's threads (maxThreads) and threshold
// (threadThresholds, ncclTopoTuneModel).
int nccl_channels(const NcclTopology& topo, NcclAlgo algo, Bytes bytes,
                  NcclProtocol protocol = NcclProtocol::kSimple);

struct NcclChoice {
  NcclAlgo algo = NcclAlgo::kRing;
  NcclProtocol protocol = NcclProtocol::kSimple;
  int channels = 1;
  double time_us = 0;
  bool operator==(const NcclChoice&) const = default;
};
// The (algorithm, protocol) pair of least modelled time, as topoGetAlgoInfo picks it, among the
// protocols `option` allows: kAuto every enabled one (nccl_protocol_enabled), the others that one
// protocol alone (NCCL_PROTO=LL128 runs LL128 even where it is off by default). On a tie LL before
// LL128 before Simple, as NCCL's loop; ring before tree, as this model always had it (NCCL's loop
// meets the tree first; an exact tie of the two needs equal floating-point times). And its channel
// count.
NcclChoice nccl_choose(const NcclTopology& topo, Bytes bytes,
                       NcclProtocolOption option = kDefaultNcclProtocol);
// The pipeline NCCL runs `choice` with for an allreduce of `bytes`: the protocol's step, one step per
// slice but on Simple's ring (ALLREDUCE_SLICESTEPS), NCCL_STEPS slots; for the tree under LL128 the
// step shrunk as calcCollChunking shrinks it for small buffers.
PipelineOptions nccl_allreduce_pipeline(const NcclTopology& topo, const NcclChoice& choice,
                                        Bytes bytes);
// A readable account of the model for `bytes`: every term of every (algorithm, protocol) pair, which
// pairs `option` allows, and the choice.
std::string describe(const NcclTopology& topo, Bytes bytes,
                     NcclProtocolOption option = kDefaultNcclProtocol);

// The allreduce NCCL would run: nccl_choose on nccl_topology(transport) among the protocols `option`
// allows, then the pipelined ring or the double binary tree with that protocol's pipeline
// (nccl_allreduce_pipeline) on that many channels.
void nccl_allreduce(Transport& transport, const BufferView& data, ReduceOp op, Tag tag,
                    NcclProtocolOption option = kDefaultNcclProtocol);

// The allgather ncclAllGather runs (AllgatherAlgo::kNccl), under Simple: the pipelined ring on
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
