// NCCL transport: every rank is a process with one GPU (started by mpirun, see world.h); messages are
// NCCL point-to-point transfers of bytes (ncclSend / ncclRecv of ncclUint8) between GPUs, issued on
// CUDA streams; a request is a CUDA event (test = cudaEventQuery, wait = polling it).
//
// Terms:
//   lane        one NCCL communicator plus one CUDA stream of the transport. A transport has kLanes = 2
//               lanes, all created collectively when it is built. Lane 0 carries the operations of the
//               rank's *compute thread* (the thread that runs the world's body; see LaneSelector), lane
//               1 those of any other thread — the communication stream's. The two streams of a rank
//               thus never interleave operations on one communicator, and a peer's matching operations
//               land on the same lane because its threads play the same roles.
//   pending     operations posted (isend, irecv) but not yet given to NCCL. An NCCL point-to-point call
//               blocks its CUDA stream until the peer posts the matching call, so launching calls one
//               by one deadlocks a ring step (send right, then receive left: every rank's send waits
//               for a receive queued behind its neighbour's send). So a lane launches *all* its pending
//               operations together, in one ncclGroupStart / ncclGroupEnd, when one of its requests is
//               first tested or waited on, or when native_allreduce runs on the lane.
//   group       the operations launched together: they progress concurrently and complete together
//               (one CUDA event, recorded after the group, stands for all of them).
//   scratch     device memory standing in for a view that is not device memory. A meta view sends
//               (receives) real bytes of its full size from (into) its lane's scratch buffer, whose
//               content is unspecified, so profile workloads put real bytes on the wire. A host view is
//               staged through device memory of its own: a send copies the host bytes at isend, a
//               receive copies them to the host when its request completes (in test() or wait()).
//
// Matching guarantee. NCCL has no tags. Operations between two ranks on one lane are matched in posting
// order, per pair of ranks (an NCCL guarantee per communicator and peer). This is the Transport
// contract (order per pair and tag) for programs in which both ranks of a pair post their operations to
// each other, on each lane, in the same order — as every collective of core/collectives does, being a
// fixed sequence of steps. Tags are accepted and ignored: neither sent nor checked. A receive must name
// as many bytes as the matching send; NCCL does not check this (a mismatch hangs or corrupts).
//
// Consequences of grouping, to keep in mind when writing a new communication pattern:
//   - Waiting on a request waits for its whole group (everything that was pending on the lane). A
//     pattern whose un-waited operations can only complete after this rank does something more after
//     the wait deadlocks here, where MPI would not. Blocking send/recv and sendrecv are always safe.
//   - The groups of one lane run on the device in launch order: a launched group whose peer has not
//     posted yet holds back the later groups of that lane.
//   - test() launches the pending group; the first time two ranks talk, NCCL connects them inside
//     ncclGroupEnd, which then blocks until the peer launches its side too.
//   - A request destroyed before completing: its operation still happens (a pending one goes with its
//     lane's next group, or at the latest when the transport is destroyed); a host receive's bytes are
//     then not copied back.
//   - Zero-byte operations complete at once and move nothing (both sides skip them alike).
//
// Threads. The compute thread and one other thread may use a transport at the same time. A second
// non-compute thread posting while a first one's operations are still pending is a ConfigError (a
// best-effort check: it catches the overlap only when it happens while operations are pending); the
// world's context (world.cc) refuses a second stream as it is made, so that no algorithm gets that far.
// native_allreduce is an NCCL collective on the caller's lane: every rank calls it from the same kind
// of thread, in the same order relative to its other operations on that lane.
//
// Why two communicators rather than one shared by both threads: NCCL matches by posting order per
// communicator, and the two threads of a rank post in an order that differs from rank to rank, so one
// communicator would pair one rank's compute-thread message with another's communication-thread
// message. The price is NCCL's documented caveat on concurrent communicators: kernels of the two lanes
// wait for peers on the GPU at the same time, which works as long as both fit on the device at once
// (NCCL's kernels use a few blocks each), and must not be separated by a device-wide synchronization —
// hence device memory here comes from the stream-ordered pool (space.h), whose frees never wait for
// the device.
//
// Subgroups are new transports with their own lanes: their members exchange fresh ncclUniqueIds over an
// MPI subgroup of the bootstrap transport and call ncclCommInitRank (ncclCommSplit would need every
// rank of the parent, while a subgroup is built by its members only).
#pragma once

#include <nccl.h>

#include <memory>
#include <mutex>
#include <span>
#include <thread>

#include "core/transport.h"

namespace bagua::runtime::nccl {

// Which lane the calling thread uses: 0 for the rank's compute thread, 1 for any other thread. Shared
// by a transport and all its subgroups.
class LaneSelector {
 public:
  explicit LaneSelector(std::thread::id compute_thread = std::this_thread::get_id())
      : compute_thread_(compute_thread) {}
  void set_compute_thread(std::thread::id id);
  int lane_of_calling_thread() const;

 private:
  mutable std::mutex mu_;
  std::thread::id compute_thread_;
};

class NcclTransport final : public Transport {
 public:
  static constexpr int kLanes = 2;

  // Collective over `bootstrap`'s group (an MPI transport, also used for host_of and for building
  // subgroups): its rank 0 draws one ncclUniqueId per lane and sends them to the others, then every
  // rank joins each lane's communicator with ncclCommInitRank on `device`.
  NcclTransport(std::unique_ptr<Transport> bootstrap, int device, std::shared_ptr<LaneSelector> lanes);
  // Launches what is still pending, waits for the lanes' streams, and destroys the communicators.
  ~NcclTransport() override;
  NcclTransport(const NcclTransport&) = delete;
  NcclTransport& operator=(const NcclTransport&) = delete;

  int rank() const override;
  int size() const override;
  int host_of(int rank) const override;

  // Device views are sent in place (they must be memory of this transport's device); meta and host
  // views as described above.
  RequestPtr isend(const BufferView& data, int dst, Tag tag) override;
  RequestPtr irecv(const BufferView& data, int src, Tag tag) override;
  // A transport over `ranks` with its own lanes (collective over the members only).
  std::unique_ptr<Transport> make_subgroup(std::span<const int> ranks) override;
  // ncclAllReduce in place on the caller's lane (f32, f64, i32, i64; sum, min, max), after the lane's
  // pending operations; a host view is staged through device memory, a meta view reduces scratch of its
  // size. Returns false for other dtypes.
  bool native_allreduce(const BufferView& data, ReduceOp op) override;

  int device() const;
  // Lane `lane`'s communicator (for tests and diagnostics; do not communicate on it).
  ncclComm_t comm(int lane) const;

  struct State;  // lanes, bootstrap transport; shared with requests

 private:
  RequestPtr post(const BufferView& data, int peer, Tag tag, bool send);
  void check_peer(int peer, const char* what) const;
  std::shared_ptr<State> state_;
};

}  // namespace bagua::runtime::nccl
