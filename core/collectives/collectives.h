// Collectives over the Transport, written once: ring, tree and halving-doubling allreduce,
// reduce-scatter, allgather, broadcast, reduce, alltoall, and their two-level hierarchical forms.
//
// Every operation is in place on a BufferView of any dtype that core/ops.h can reduce (f32, f64, i32,
// i64 on the host), takes one Tag for the whole call (messages between a pair with one tag match in
// posting order, so every step of a collective may use the caller's tag), and is called by every rank
// of the transport's group with the same count, dtype, root and algorithm. Scratch buffers are made
// with Buffer::like, so on a meta buffer every data operation is a no-op while every byte is still
// sent. An empty buffer, or a group of one rank, sends nothing.
//
// Chunks. A buffer of `count` elements is cut into P chunks by chunk_range: sizes differ by at most one
// element, the first count % P chunks being the larger. Every chunked collective uses this cut; chunk r
// "belongs" to rank r.
//
// Catalogue (docs/algorithms.md derives each entry; core/collectives/cost.h has them as functions, and
// tests check them against what the code sends). P ranks; S bytes, divisible by P for the chunked
// forms; lg = log2; P' = the largest power of two <= P; k = number of segments; the hierarchical forms
// run on H hosts of Q ranks each (P = H Q, ranks numbered host by host) with a ring among the leaders.
// "steps": messages on the critical path when each rank's sends go one after another (a message's step
// is one more than the latest step the sender has sent or received before posting it). "bytes sent":
// the most any one rank sends.
//
//   collective, algorithm                     steps                        bytes sent
//   ----------------------------------------  ---------------------------  ----------------------------
//   reduce_scatter, ring                      P-1                          (P-1) S/P
//   allgather, ring                           P-1                          (P-1) S/P
//   allreduce, ring                           2(P-1)                       2(P-1) S/P
//   allreduce, tree                           floor(lg P) + ceil(lg P)     ceil(lg P) S
//   allreduce, tree in k segments             floor(lg P) + k-1            ceil(lg P) S
//                                               + k ceil(lg P)
//   allreduce, halving-doubling, P = P'       2 lg P                       2(P-1) S/P
//   allreduce, halving-doubling, P > P'       2 lg P' + 2                  2(P'-1) S/P' + S
//   allreduce, recursive doubling, P = P'     lg P                         lg P S
//   allreduce, recursive doubling, P > P'     lg P' + 2                    (lg P' + 1) S
//   reduce, binomial, k segments              floor(lg P) + k-1            S
//   reduce, chain, k segments                 P + k-2                      S
//   broadcast, binomial, k segments           k ceil(lg P)                 ceil(lg P) S  (the root)
//   broadcast, chain, k segments              P + k-2                      S
//   alltoall, pairwise exchange               P-1                          (P-1) S/P
//   alltoall, grouped (W peers per wave)      P-1, ceil((P-1)/W) latencies (P-1) S/P
//   neighbour_exchange, P >= 3                2                            2S
//   neighbour_exchange, P = 2                 1                            S
//   NCCL's algorithms (core/collectives/nccl.h), C channels, n slices per channel chunk:
//   reduce_scatter / allgather, pipelined     (P-1) n C                    (P-1) S/P
//     (allgather "nccl": the pipelined allgather on the channels NCCL's tuner gives S)
//   allreduce, pipelined ring                 2(P-1) n C                   2(P-1) S/P
//   broadcast / reduce, pipelined chain       P + n C - 2                  S
//   allreduce, double binary tree, h hops     >= 2h + n - 1                (links in both trees) S/2
//   Hierarchical, intra-host chains of k segments (Q >= 3; chosen when S >= Q x segment, see
//   IntraHostOptions):
//   hierarchical allreduce                    2(Q + k-2) + 2(H-1)          max(2S, S + 2(H-1) S/H)
//   hierarchical reduce_scatter               (Q + k-2) + (H-1) + (Q-1)    S
//   hierarchical allgather                    1 + (H-1) + (Q + k-2)        S + max((H-1) S/H, S/P)
//   hierarchical broadcast, root a leader     ceil(lg H) + (Q + k-2)       (ceil(lg H) + 1) S
//   Hierarchical, intra-host "nccl" (pipelined chains, C channels, n slices per channel's part): the
//   rows above with k = n C; bytes as the chains' (Q >= 2 here)
//   hierarchical allreduce                    2(Q + n C-2) + 2(H-1)        max(2S, S + 2(H-1) S/H)
//   Hierarchical, intra-host binomial trees, unsegmented (smaller buffers, or Q <= 2):
//   hierarchical allreduce                    floor(lg Q) + 2(H-1)         2(H-1) S/H + ceil(lg Q) S
//                                               + ceil(lg Q)
//   hierarchical reduce_scatter               floor(lg Q) + (H-1) + (Q-1)  S if Q > 1, else (H-1) S/H
//   hierarchical allgather                    [Q > 1] + (H-1) + ceil(lg Q) (H-1) S/H + ceil(lg Q) S
//   hierarchical broadcast, root a leader     ceil(lg H) + ceil(lg Q)      (ceil(lg H) + ceil(lg Q)) S
//
// (A grouped alltoall posts a wave's sends one after another without waiting, so they count as P-1
// steps, but their latencies overlap: one per wave. k = 1 is the unsegmented form. The root of a
// binomial reduce receives ceil(lg P) S. A hierarchical broadcast whose root is not a leader takes
// one more step, the root sending to its leader.)
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/buffer.h"
#include "core/transport.h"

namespace bagua::collectives {

// ---- Chunks --------------------------------------------------------------------------------------

// Elements [offset, offset + count) of a buffer.
struct ChunkRange {
  size_t offset = 0;
  size_t count = 0;
  size_t end() const { return offset + count; }
  bool operator==(const ChunkRange&) const = default;
};

// Chunk i of `count` elements cut into `parts` chunks whose sizes differ by at most one, the first
// (count % parts) chunks one element larger.
ChunkRange chunk_range(size_t count, int parts, int i);
// The same from count / parts (`base`) and count % parts (`larger`), for a valid chunk `index`.
inline ChunkRange chunk_range_of(size_t base, size_t larger, size_t index) {
  return {index * base + std::min(index, larger), base + (index < larger ? 1 : 0)};
}

// A buffer seen as `parts` chunks cut by chunk_range.
class Chunking {
 public:
  Chunking(const BufferView& data, int parts);
  int parts() const { return parts_; }
  // chunk_range(data.count(), parts, i), with the divisions done once (every step of a ring asks).
  ChunkRange range(int i) const {
    if (i < 0 || i >= parts_) out_of_range(i);
    return chunk_range_of(base_, larger_, static_cast<size_t>(i));
  }
  // Chunk i.
  BufferView chunk(int i) const {
    const ChunkRange r = range(i);
    return data_.slice(r.offset, r.count);
  }
  // Chunks [first, first + n), which are contiguous.
  BufferView chunks(int first, int n) const;
  // Elements in the largest chunk: ceil(count / parts).
  size_t max_count() const;

 private:
  void out_of_range(int i) const;  // range()'s error
  BufferView data_;
  int parts_;
  size_t base_;    // elements in a chunk, at least
  size_t larger_;  // the first `larger_` chunks hold base_ + 1
};

// a mod n in [0, n) for n > 0: a place on a ring of n ranks, whatever the sign of a.
inline int mod(int a, int n) {
  const int r = a % n;  // one division: an integer division's latency is that of tens of additions
  return r < 0 ? r + n : r;
}
// (i - 1) mod n for i in [0, n): a ring's index one step back, without a division.
inline int ring_before(int i, int n) {
  return i == 0 ? n - 1 : i - 1;
}

// ---- Algorithms ----------------------------------------------------------------------------------

// kRing, kTree, kHalvingDoubling and kRecursiveDoubling are bulk-synchronous: every step's messages
// complete before the next step's are sent. kNccl is what NCCL runs (core/collectives/nccl.h): its
// tuning model picks, per call, the pipelined ring or the double binary tree and the channel count.
// kMpiTuned picks, per call, one of kRing, kTree, kHalvingDoubling and kRecursiveDoubling by size and
// rank count (mpi_tuned_choice): an explicit choice, so that no other algorithm's results change.
enum class AllreduceAlgo : uint8_t {
  kRing,
  kTree,
  kHalvingDoubling,
  kRecursiveDoubling,
  kNative,
  kNccl,
  kMpiTuned
};
// "ring", "tree", "halving_doubling", "recursive_doubling", "native", "nccl", "mpi_tuned"
std::string to_string(AllreduceAlgo algo);
// The inverse of to_string; throws ConfigError naming the valid choices.
AllreduceAlgo parse_allreduce_algo(std::string_view name);
std::vector<std::string> allreduce_algo_names();

// Which of NCCL's protocols kNccl runs (core/collectives/nccl.h, "protocol"): kAuto lets NCCL's tuning
// model pick, per call, the (algorithm, protocol) pair of least modelled time among the enabled ones,
// as NCCL does when NCCL_PROTO is unset; kSimple, kLL and kLL128 force one, as NCCL_PROTO=Simple, LL
// or LL128 does. The other algorithms ignore it.
enum class NcclProtocolOption : uint8_t { kAuto, kSimple, kLL, kLL128 };
std::string to_string(NcclProtocolOption option);  // "auto", "simple", "ll", "ll128"
// The inverse of to_string; throws ConfigError naming the valid choices.
NcclProtocolOption parse_nccl_protocol_option(std::string_view name);
std::vector<std::string> nccl_protocol_option_names();

// The switch: what kNccl runs wherever no protocol is named (a config without "protocol", and every
// caller that passes none). kAuto, NCCL's own choice per call (its tuning model over LL, LL128 and
// Simple, with each protocol's step latency charged: nccl.h), is what PyTorch DDP, Horovod and Bagua
// get, none of which sets NCCL_PROTO; "protocol": "simple" forces NCCL's Simple protocol, as results
// computed before LL and LL128 were modelled did.
inline constexpr NcclProtocolOption kDefaultNcclProtocol = NcclProtocolOption::kAuto;

// kMpiTuned's choice for `bytes` on `ranks` ranks. Recursive doubling where Open MPI 4.1's tuned
// component runs its recursive doubling for a commutative operation (allreduce.cc cites and copies
// those switch points); elsewhere the least of steps x alpha + bytes sent x beta over ring, tree and
// halving-doubling (their catalogue entries, core/collectives/cost.h), alpha and beta being our MPI
// transport's cost per message and per byte on shared memory (allreduce.cc cites the measurement);
// ring on a tie.
AllreduceAlgo mpi_tuned_choice(int ranks, size_t bytes);

enum class BroadcastAlgo : uint8_t { kBinomial, kChain };
std::string to_string(BroadcastAlgo algo);  // "binomial", "chain"
BroadcastAlgo parse_broadcast_algo(std::string_view name);

enum class ReduceAlgo : uint8_t { kBinomial, kChain };
std::string to_string(ReduceAlgo algo);  // "binomial", "chain"
ReduceAlgo parse_reduce_algo(std::string_view name);

// ---- Flat collectives ----------------------------------------------------------------------------

// data := op over all ranks of data. kNative asks the transport for its own allreduce and runs kRing
// when it has none. kTree here is unsegmented; tree_allreduce takes a segment size.
// `protocol` is kNccl's (NcclProtocolOption).
void allreduce(Transport& transport, const BufferView& data, ReduceOp op, Tag tag,
               AllreduceAlgo algo = AllreduceAlgo::kRing,
               NcclProtocolOption protocol = kDefaultNcclProtocol);
// data := (sum over all ranks of data) / P. Floating-point dtypes only (ConfigError otherwise).
void allreduce_average(Transport& transport, const BufferView& data, Tag tag,
                       AllreduceAlgo algo = AllreduceAlgo::kRing,
                       NcclProtocolOption protocol = kDefaultNcclProtocol);

// The allreduce algorithms themselves.
void ring_allreduce(Transport& transport, const BufferView& data, ReduceOp op, Tag tag);
// Binomial reduce to rank 0, then binomial broadcast from it, both pipelined in segments of at most
// `segment_elements` elements (0: one segment, the whole buffer).
void tree_allreduce(Transport& transport, const BufferView& data, ReduceOp op, Tag tag,
                    size_t segment_elements = 0);
void halving_doubling_allreduce(Transport& transport, const BufferView& data, ReduceOp op, Tag tag);
// log2 P rounds, each swapping the whole buffer with one peer, the extra ranks of a P that is no power
// of two folded in first and out last; every rank ends with the same bits.
void recursive_doubling_allreduce(Transport& transport, const BufferView& data, ReduceOp op, Tag tag);

// Ring. Afterwards chunk r of rank r's data holds the reduction over all ranks of chunk r; the other
// chunks are left holding partial reductions (scratch).
void reduce_scatter(Transport& transport, const BufferView& data, ReduceOp op, Tag tag);

// How an allgather moves its chunks.
//   kRing  the bulk-synchronous ring (ring.cc): P - 1 sendrecv steps, each waiting for the one before,
//          each paying the slowest hop's latency
//   kNccl  what ncclAllGather runs (nccl_allgather, core/collectives/nccl.h): NCCL's pipelined ring,
//          in slices with credit slots, on the channels its tuner gives the gathered size
enum class AllgatherAlgo : uint8_t { kRing, kNccl };
std::string to_string(AllgatherAlgo algo);  // "ring", "nccl"
// The inverse of to_string; throws ConfigError naming the valid choices.
AllgatherAlgo parse_allgather_algo(std::string_view name);
std::vector<std::string> allgather_algo_names();

// Rank r contributes chunk r of its data; afterwards every rank holds every rank's chunk, the same
// bytes whichever `algo` moves them.
void allgather(Transport& transport, const BufferView& data, Tag tag,
               AllgatherAlgo algo = AllgatherAlgo::kRing);

// Root's data to every rank. kBinomial: a binomial tree; kChain: a pipeline along ranks root, root + 1,
// ... (for large buffers: every rank sends S once, and k segments overlap the P - 1 hops). Both move
// the buffer in segments of at most `segment_elements` elements (0: one segment). Segments do not
// shorten a binomial broadcast (the root still sends ceil(lg P) S, one message at a time); they bound
// the size of a message.
void broadcast(Transport& transport, const BufferView& data, int root, Tag tag,
               BroadcastAlgo algo = BroadcastAlgo::kBinomial, size_t segment_elements = 0);

// Afterwards root's data holds the reduction over all ranks; other ranks' data holds partial reductions
// (scratch). The data moves in segments of at most `segment_elements` elements (0: one segment).
// kBinomial: a binomial tree (a rank needs scratch of one segment per child in the tree, so segments
// also bound its memory). kChain: the mirror of the chain broadcast, a pipeline along ranks root - 1,
// root - 2, ..., root, each rank adding its own data to the segment before passing it on (for large
// buffers: every rank sends S once, and k segments overlap the P - 1 hops; scratch of two segments).
// Both reduce in a fixed order, the same in every run.
void reduce(Transport& transport, const BufferView& data, int root, ReduceOp op, Tag tag,
            size_t segment_elements = 0, ReduceAlgo algo = ReduceAlgo::kBinomial);

// How an alltoall moves its chunks (core/collectives/alltoall.cc).
//   kPairwise  P - 1 sendrecv steps, one peer at a time: bulk-synchronous, a latency per step
//   kNccl      what NCCL runs for the alltoall of Bagua's communicator (ncclSend and ncclRecv to every
//              peer inside one ncclGroupStart / ncclGroupEnd): every transfer posted at once, in waves
//              of at most nccl_p2p_peers_per_wave peers (grouped_alltoall)
enum class AlltoallAlgo : uint8_t { kPairwise, kNccl };
std::string to_string(AlltoallAlgo algo);  // "pairwise", "nccl"
AlltoallAlgo parse_alltoall_algo(std::string_view name);
std::vector<std::string> alltoall_algo_names();

// Chunk i of rank src's `send` lands in chunk src of rank i's `recv`. Both buffers have the same dtype
// and count, the count divisible by P (so that every chunk has one size), and must not overlap
// (ConfigError otherwise). kPairwise: pairwise exchange; kNccl: grouped_alltoall with NCCL's wave size
// for this transport.
void alltoall(Transport& transport, const BufferView& send, const BufferView& recv, Tag tag,
              AlltoallAlgo algo = AlltoallAlgo::kPairwise);
// The same result with every send and receive of a wave posted before any is waited for: the peers in
// NCCL's order of rounds (nccl_p2p_rounds), `peers_per_wave` of them at a time (0: all P - 1 in one
// wave). Throws ConfigError for peers_per_wave < 0.
void grouped_alltoall(Transport& transport, const BufferView& send, const BufferView& recv, Tag tag,
                      int peers_per_wave = 0);
// The peer distances of NCCL's p2p schedule on `ranks` ranks of one rank per node (p2pSchedule in
// src/init.cc: the quadratic sequence (x^2 + x) / 2 mod pow2Up(ranks), kept where below `ranks`,
// distance 0, the rank itself, left out): in round i a rank sends to rank + d_i and receives from
// rank - d_i. Every distance 1 .. ranks - 1 once.
std::vector<int> nccl_p2p_rounds(int ranks);
// How many peers' transfers of one ncclGroupStart / ncclGroupEnd NCCL runs at once on `ranks` ranks
// over `nodes` nodes with `channels` channels (comm->nChannels). addP2pToPlan (src/enqueue.cc):
// maxConcurrent = p2pnChannels / (channels of one transfer) x NCCL_MAX_DEV_WORK_P2P_PER_BATCH (8,
// src/include/device.h); ncclTopoComputeP2pChannels (src/graph/paths.cc): p2pnChannels = pow2Up(
// min(nChannels, NCCL_MAX_P2P_NCHANNELS = MAXCHANNELS)), channels per peer pow2Up of a network peer's
// default 2 (ncclTopoGetNchannels), halved on more than one node while it times ceil(ranks / 8)
// exceeds p2pnChannels. A transfer uses at most the channels per peer, so this is the least number
// of peers in flight. Throws ConfigError for channels < 1.
int nccl_p2p_peers_per_wave(int ranks, int nodes, int channels);

// Ring neighbours (left = rank - 1, right = rank + 1, mod P): `data` to both, the left neighbour's data
// into `from_left`, the right neighbour's into `from_right`. Returns the number of distinct neighbours:
// 2 for P >= 3; 1 for P = 2, where left == right is one rank, whose data is sent and received once,
// into `from_left` (`from_right` untouched); 0 for P = 1 (nothing moves). S here is the size of `data`,
// which may differ from rank to rank (compressed); every rank's `from_left` and `from_right` must hold
// its neighbours' data exactly. Unlike the chunked collectives, an empty `data` is still exchanged (as
// zero-byte messages), as the decentralized primitives always did.
int neighbour_exchange(Transport& transport, const BufferView& data, const BufferView& from_left,
                       const BufferView& from_right, Tag tag);

// ---- Hierarchical (two-level) collectives --------------------------------------------------------

// How the two-level collectives reduce onto a host's leader and broadcast from it.
//   kChain     pipelined chains (ReduceAlgo::kChain, BroadcastAlgo::kChain) in segments of `segment`
//              bytes, one segment in flight per rank at a time: the shape in which NCCL runs
//              ncclReduce and ncclBroadcast (its ring algorithm), the two calls of Bagua's
//              hierarchical mode for its intra-host phases, without NCCL's slots (kNccl has them).
//   kBinomial  binomial trees, unsegmented: lg Q steps of the whole buffer, but fewer latencies, so
//              better for small buffers.
//   kAuto      by size, the idea of NCCL's tuner, which picks tree or ring per call as the one of least
//              predicted time for the message size (ncclTopoGetAlgoTime in src/graph/tuning.cc, latency
//              + bytes / bandwidth): a chain when the host has Q >= 3 ranks and the buffer fills at
//              least Q segments (S >= Q x segment, so k >= Q), binomial trees otherwise. At k = Q the
//              chain moves 2Q - 2 segments = (2 - 2/Q) S along its critical path, while ceil(lg Q) S
//              crosses the root's link in a binomial tree (a binomial reduce's root receives it, a
//              binomial broadcast's root sends it): the chain wins on bandwidth from Q = 3 on, and on
//              two ranks it is only the same hop cut in pieces.
//              docs/algorithms.md, "Intra-host phases", works the rule out on the paper's NVLink hosts.
//   kNccl      what ncclReduce and ncclBroadcast run (core/collectives/nccl.h): NCCL's pipelined chain
//              (pipelined_reduce, pipelined_broadcast) in slices of `segment` bytes, at most NCCL_STEPS
//              = 8 slices in flight per peer per channel, a rank forwarding a slice as soon as it has
//              it, on `channels` channels, or as many as NCCL's tuner gives the host's ranks and the
//              buffer (nccl_channels for the ring on nccl_topology of the host's group). NCCL runs
//              both calls with its ring algorithm whatever the size (ncclTopoTuneModel in
//              src/graph/tuning.cc skips every other algorithm for ncclFuncBroadcast and
//              ncclFuncReduce); only the Simple protocol is modelled.
enum class IntraHostAlgo : uint8_t { kAuto, kBinomial, kChain, kNccl };
std::string to_string(IntraHostAlgo algo);  // "auto", "binomial", "chain", "nccl"
IntraHostAlgo parse_intra_host_algo(std::string_view name);

struct IntraHostOptions {
  IntraHostAlgo algo = IntraHostAlgo::kAuto;
  // The chains' segment: NCCL's step for its Simple protocol, NCCL_BUFFSIZE / NCCL_STEPS = 4 MiB / 8 =
  // 512 KiB (DEFAULT_BUFFSIZE (1 << 22) in src/init.cc; NCCL_STEPS 8 in src/include/device.h;
  // stepSize = buffSize / NCCL_STEPS in src/enqueue.cc), and its ring reduce and broadcast move one
  // step per chunk (REDUCE_CHUNKSTEPS = BROADCAST_CHUNKSTEPS = 1 in src/include/collectives.h).
  // Rounded down to whole elements (at least one). Must be > 0. For kNccl, the slice: NCCL's
  // stepSize x BROADCAST_SLICESTEPS (= REDUCE_SLICESTEPS = 1), the same 512 KiB.
  Bytes segment = Bytes(int64_t{512} * 1024);
  // kNccl only: the channel count; 0 takes NCCL's tuner's (see kNccl). Must be >= 0.
  int channels = 0;
};

// What an intra-host phase runs for `count` elements of `element_bytes` bytes each on a host of
// `ranks` ranks: a chain in `segments` segments of `segment_elements` elements, or (chain false)
// binomial trees, unsegmented (segment_elements 0, segments 1); for kNccl, NCCL's pipelined chain
// (nccl true, chain false) in slices of `segment_elements`, whose channel count is settled where the
// phase runs (intra_host_channels). Throws ConfigError for a segment of 0 bytes or less, or channels
// below 0.
struct IntraHostPlan {
  bool chain = false;
  size_t segment_elements = 0;
  int64_t segments = 1;
  bool nccl = false;
  bool operator==(const IntraHostPlan&) const = default;
};
IntraHostPlan plan_intra_host(const IntraHostOptions& options, int ranks, size_t count,
                              size_t element_bytes);

// The two groups of a two-level collective, built once from a world and reused: the ranks of this
// rank's host (intra; its rank 0, the lowest world rank on the host, is the host's *leader*) and the
// leaders of all hosts (leaders, numbered by host; null on ranks that are not leaders). Building it is
// collective: every rank of the world constructs one, in the same order relative to its other subgroup
// calls. Hosts may hold different numbers of ranks. `intra_host` says how the intra-host phases run
// (validated here: ConfigError for a segment <= 0); it may be changed between calls, the same on every
// rank.
struct HierarchicalGroups {
  explicit HierarchicalGroups(Transport& world, IntraHostOptions intra_host = {});
  HierarchicalGroups(HierarchicalGroups&&) noexcept = default;
  HierarchicalGroups& operator=(HierarchicalGroups&&) noexcept = default;

  bool is_leader() const { return leaders != nullptr; }
  int hosts() const { return static_cast<int>(layout.hosts.size()); }

  HostLayout layout;  // world ranks by host
  int world_size = 1;
  int world_rank = 0;
  std::unique_ptr<Transport> intra;
  std::unique_ptr<Transport> leaders;
  IntraHostOptions intra_host;
};

// The channels a kNccl intra-host phase of `bytes` runs on over `intra` (a host's group):
// options.channels if > 0, else nccl_channels(nccl_topology(intra), NcclAlgo::kRing, bytes).
int intra_host_channels(const IntraHostOptions& options, const Transport& intra, Bytes bytes);

// The intra-host phases on their own, as plan_intra_host picks them from groups.intra_host for this
// host's ranks and the buffer's size. Reduce onto the host's leader (the other ranks' data is left
// holding partial reductions), and broadcast the leader's data over the host.
void intra_host_reduce(HierarchicalGroups& groups, const BufferView& data, ReduceOp op, Tag tag);
void intra_host_broadcast(HierarchicalGroups& groups, const BufferView& data, Tag tag);

// Intra-host reduce to the leader, flat `algo` allreduce among leaders, intra-host broadcast.
// The intra-host phases of all four two-level forms are intra_host_reduce and intra_host_broadcast.
void hierarchical_allreduce(HierarchicalGroups& groups, const BufferView& data, ReduceOp op, Tag tag,
                            AllreduceAlgo algo = AllreduceAlgo::kRing,
                            NcclProtocolOption protocol = kDefaultNcclProtocol);
void hierarchical_allreduce_average(HierarchicalGroups& groups, const BufferView& data, Tag tag,
                                    AllreduceAlgo algo = AllreduceAlgo::kRing,
                                    NcclProtocolOption protocol = kDefaultNcclProtocol);
// The flat results (chunk r of world rank r, world chunking) by two levels: intra-host reduce to the
// leader, a ring among leaders over host blocks (a host's block = the chunks of its ranks), and the
// leader handing each local rank its chunk.
void hierarchical_reduce_scatter(HierarchicalGroups& groups, const BufferView& data, ReduceOp op,
                                 Tag tag);
// Local ranks hand their chunks to the leader, a ring among leaders over host blocks, intra-host
// broadcast.
void hierarchical_allgather(HierarchicalGroups& groups, const BufferView& data, Tag tag);
// `root` is a world rank. A root that is not its host's leader first sends the data to that leader; the
// leaders broadcast from root's host (binomial), then every leader broadcasts over its host.
void hierarchical_broadcast(HierarchicalGroups& groups, const BufferView& data, int root, Tag tag);

}  // namespace bagua::collectives
