// Open MPI transport: every rank is a process started by mpirun; messages are MPI point-to-point
// messages of bytes (MPI_BYTE) on a communicator private to this transport.
//
// Terms:
//   communicator  the transport's own duplicate of the communicator it was built over, so that its
//                 messages never match anyone else's; a subgroup owns a communicator of its members
//   scratch       host bytes standing in for a meta view: a meta buffer has no storage, yet on a real
//                 runtime its full size must cross the wire so that the communication pattern is
//                 measured for real. Each in-flight request owns its own scratch, drawn from a pool.
//   detached      a request destroyed before it completed: the transport keeps it (and its scratch)
//                 alive and completes it later, so dropping a handle never frees scratch MPI still
//                 uses. The caller's own buffer of a dropped send must live until the send completes,
//                 at the latest when the transport is destroyed (which waits for dropped sends and
//                 cancels dropped receives).
//
// Matching: MPI matches messages by (communicator, source, tag) in posting order, which is exactly the
// Transport contract. A receive must name exactly as many bytes as the matching send carries; a shorter
// message is caught when the receive completes (BAGUA_CHECK), a longer one is MPI's truncation error.
// A meta send matched by a host receive delivers unspecified bytes (the sender's scratch).
//
// Abort (runtime/mpi/abort.h): with a signal, a wait polls its request (MPI_Test) and the signal in
// turn, yielding between polls, and throws Aborted once the run is aborted (a receive cancelled first:
// its buffer goes with the caller's stack). A receive dropped unfinished while the run is aborted, or
// while an exception unwinds the stack, is cancelled at once for the same reason. A transport or
// subgroup destroyed then does not wait for its dropped sends (their peer may never receive them):
// it frees them (MPI_Request_free). With a signal, a destroyed transport's communicator is retired
// to the signal rather than freed (abort.h: a message of an aborted run must never reach a later
// communicator). renew() gives the
// transport a fresh communicator after such a run, so that a message of the aborted run never matches
// a receive of the next.
//
// Threads: the library must provide MPI_THREAD_MULTIPLE (MpiWorld checks), so that the compute and the
// communication stream of one rank may post and wait concurrently. native_allreduce is an MPI
// collective: every rank must call it in the same order, one stream at a time.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/transport.h"
#include "runtime/common/watchdog.h"
#include "runtime/mpi/abort.h"

namespace bagua::runtime::mpi {

// An MPI call failed. The message names the call, MPI's error string and the rank.
class MpiError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
[[noreturn]] void mpi_call_failed(const char* call, int error, const char* file, int line);
// This process's rank in MPI_COMM_WORLD as text; "?" before MPI_Init or after MPI_Finalize.
std::string world_rank_text();
}  // namespace detail

// Wraps every MPI call: throws MpiError unless it returned MPI_SUCCESS. Communicators made here use
// MPI_ERRORS_RETURN, so that errors reach this check instead of aborting the job.
#define BAGUA_MPI_CHECK(call)                                                                      \
  do {                                                                                             \
    const int bagua_mpi_error_ = (call);                                                           \
    if (bagua_mpi_error_ != MPI_SUCCESS)                                                           \
      ::bagua::runtime::mpi::detail::mpi_call_failed(#call, bagua_mpi_error_, __FILE__, __LINE__); \
  } while (0)

class MpiTransport final : public Transport {
 public:
  // A transport over a duplicate of `comm` (collective over `comm`). Rank r's host is
  // r / ranks_per_host when ranks_per_host > 0 (one machine emulating several hosts), otherwise the
  // shared-memory node MPI places it on (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED), hosts being
  // numbered in the order of their lowest rank. Waits (a request's wait, native_allreduce) are watched
  // by `watchdog` when it is given, and a request's wait stops when `abort` is raised (see above), in
  // this transport and its subgroups.
  explicit MpiTransport(MPI_Comm comm, int ranks_per_host = 0,
                        std::shared_ptr<Watchdog> watchdog = nullptr,
                        std::shared_ptr<AbortSignal> abort = nullptr);
  ~MpiTransport() override;
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(hosts_.size()); }
  int host_of(int rank) const override;

  RequestPtr isend(const BufferView& data, int dst, Tag tag) override;
  RequestPtr irecv(const BufferView& data, int src, Tag tag) override;
  // MPI_Group_incl + MPI_Comm_create_group: collective over the members only.
  std::unique_ptr<Transport> make_subgroup(std::span<const int> ranks) override;
  // MPI_Allreduce in place (f32, f64, i32, i64; sum, min, max); a meta view reduces scratch of its
  // size. Returns false for other dtypes.
  bool native_allreduce(const BufferView& data, ReduceOp op) override;

  // Collective over this transport's ranks: replaces its communicator with a fresh duplicate (the old
  // one is dropped as by an aborted run, see above). Subgroups made before keep their own.
  void renew();
  // The transport's own communicator (for tests and diagnostics; do not send on it).
  MPI_Comm comm() const;
  // The largest tag MPI accepts on this communicator (MPI_TAG_UB).
  Tag max_tag() const;
  // The watchdog of this transport's waits (null: none).
  Watchdog* watchdog() const;
  // Rank `rank` of this group's number in MPI_COMM_WORLD.
  int world_rank_of(int rank) const;

  struct State;  // communicator, tag bound, scratch pool, detached requests, watchdog; shared with
                 // requests

 private:
  MpiTransport(std::shared_ptr<State> state, std::vector<int> hosts);
  void check_peer(int peer, const char* what) const;
  void* wire_buffer(const BufferView& data, const char* what, std::vector<uint8_t>& scratch) const;

  std::shared_ptr<State> state_;
  std::vector<int> hosts_;  // hosts_[r] = host of rank r of this group
  int rank_ = 0;
};

}  // namespace bagua::runtime::mpi
