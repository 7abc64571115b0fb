// Byte messages between the processes of the job mpirun started, for work that is not a training run:
// handing a sweep's simulated points out to the job's processes and their results back to rank 0
// (experiments/distribute.h).
//
// Terms:
//   message  a whole byte string from one process to another, with a tag; messages between the same
//            pair with the same tag arrive in the order they were sent; one thread at a time sends
//            (and one receives) on a given peer and tag, since a message may go in several pieces
//   poll     a wait checks its request (MPI_Test) and sleeps kPollInterval between checks
//
// Why not MpiTransport: a wait here may last as long as a point runs (hours for a paper-scale point),
// so it polls instead of spinning in MPI_Wait (Open MPI's blocking wait keeps a core busy, and a
// process that waits for its next point would take that core from the simulation), and it is no
// training operation for a watchdog to judge. The channel has its own communicator (a duplicate of
// MPI_COMM_WORLD), so its messages never match a training run's.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

namespace bagua::runtime::mpi {

class MpiChannel {
 public:
  // Between two checks of a waiting request: messages here announce whole simulated points (tens of
  // milliseconds at least), so a millisecond of delay is noise, and 1000 MPI_Test calls a second cost
  // no measurable CPU.
  static constexpr std::chrono::microseconds kPollInterval{1000};

  // Duplicates `comm` (collective over it). MPI must be initialized with MPI_THREAD_MULTIPLE when
  // several threads use the channel at once.
  explicit MpiChannel(MPI_Comm comm);
  ~MpiChannel();
  MpiChannel(const MpiChannel&) = delete;
  MpiChannel& operator=(const MpiChannel&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // The number of this communicator's processes on this process's node (MPI_COMM_TYPE_SHARED).
  int local_size() const { return local_size_; }

  // Sends `bytes` to `dst` and returns when the channel has taken them. Any size: a message longer
  // than MPI's int count goes in pieces.
  void send(std::span<const uint8_t> bytes, int dst, int tag);
  // Waits (polling) for the next message from `src` with `tag`.
  std::vector<uint8_t> receive(int src, int tag);

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 0;
  int local_size_ = 1;
};

}  // namespace bagua::runtime::mpi
