// The abort of a run on every rank of an Open MPI job: a rank whose body failed tells every other rank,
// and their transports' waits stop with Aborted instead of waiting for a rank that will never send,
// so that every rank reaches the end of the run (MpiWorld::run) and the ranks agree there on how it
// ended. After the threads runtime's Mailbox::abort (runtime/threads/transport.h), across processes.
//
// Terms:
//   notice   one int (the raising rank) sent to every other rank on the signal's own communicator
//            (a duplicate of the world's, nothing else is sent on it), tag kNoticeTag
//   armed    a receive of the next notice (any source) posted at all times between runs and during
//            one; a wait polls it (MPI_Test) between polls of its own request
//   raise    this rank failed: it sends its notice to every other rank (non-blocking) and is aborted
//   aborted  this rank raised, or a notice arrived: every wait of the transports built with this
//            signal throws Aborted from then on, until the run's end settles the signal
//   settle   at the end of a run, once every rank knows how many ranks raised (MpiWorld::run's
//            agreement): receives exactly the notices sent to this rank, completes its own sends and
//            arms again, so that no notice of one run reaches the next
//   retired  the communicators of the transports built with this signal and destroyed since the last
//            settle: an aborted run may leave messages on them that no receive will ever match (a
//            send to a rank that stopped waiting). Open MPI delivers a message for a freed
//            communicator to the next communicator that reuses its context id, so they are freed at
//            the settle of a run that ended well, and kept until the signal is destroyed (the end of
//            the job) after one that failed
//
// A wait inside an MPI collective (MPI_Allreduce of native_allreduce, MPI_Barrier) is not polled: a
// rank that waits there for a failed rank is ended by the watchdog (runtime/common/watchdog.h).
#pragma once

#include <mpi.h>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace bagua::runtime::mpi {

// A wait stopped because another rank (or this one) failed in the same run.
class Aborted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class AbortSignal {
 public:
  static constexpr int kNoticeTag = 0;

  // Collective over `comm`: duplicates it and arms.
  explicit AbortSignal(MPI_Comm comm);
  ~AbortSignal();  // cancels the armed receive, frees the communicator
  AbortSignal(const AbortSignal&) = delete;
  AbortSignal& operator=(const AbortSignal&) = delete;

  // Sends this rank's notice to every other rank; at most once between two settles.
  void raise();
  // Whether this run is aborted (polls the armed receive; callable from any thread).
  bool aborted();
  // Throws Aborted naming the first rank known to have raised, if aborted().
  void throw_if_aborted();
  // See the terms; `raisers` ranks raised in this run, this one among them when `raised_here`.
  void settle(int raisers, bool raised_here);
  // Takes `comm` (a transport's, no longer used) to free it at the next settle (see retired).
  void retire(MPI_Comm comm);

 private:
  void arm();

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  std::mutex mu_;  // the armed receive and the sends
  MPI_Request armed_ = MPI_REQUEST_NULL;
  bool armed_arrived_ = false;    // the armed receive completed: one notice received, none armed
  int notice_ = -1;               // the armed receive's buffer
  std::vector<int> sent_notice_;  // the buffer of this rank's sends (its rank)
  std::vector<MPI_Request> sends_;
  std::vector<MPI_Comm> retired_;  // since the last settle
  std::vector<MPI_Comm> kept_;     // retired during runs that failed: freed with the signal
  bool raised_ = false;
  std::atomic<bool> aborted_{false};
  std::atomic<int> first_raiser_{-1};
};

}  // namespace bagua::runtime::mpi
