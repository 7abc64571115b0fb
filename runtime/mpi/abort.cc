#include "runtime/mpi/abort.h"

#include <string>

#include "core/check.h"
#include "runtime/mpi/transport.h"

namespace bagua::runtime::mpi {

AbortSignal::AbortSignal(MPI_Comm comm) {
  BAGUA_MPI_CHECK(MPI_Comm_dup(comm, &comm_));
  BAGUA_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  BAGUA_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  BAGUA_MPI_CHECK(MPI_Comm_size(comm_, &size_));
  arm();
}

AbortSignal::~AbortSignal() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  // Errors cannot be reported from here and are ignored.
  if (armed_ != MPI_REQUEST_NULL) {
    MPI_Cancel(&armed_);
    MPI_Wait(&armed_, MPI_STATUS_IGNORE);
  }
  for (MPI_Request& r : sends_)
    if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
  for (std::vector<MPI_Comm>* comms : {&retired_, &kept_})
    for (MPI_Comm& c : *comms)
      MPI_Comm_free(&c);
  MPI_Comm_free(&comm_);
}

void AbortSignal::arm() {
  armed_arrived_ = false;
  BAGUA_MPI_CHECK(MPI_Irecv(&notice_, 1, MPI_INT, MPI_ANY_SOURCE, kNoticeTag, comm_, &armed_));
}

void AbortSignal::raise() {
  std::lock_guard<std::mutex> lock(mu_);
  if (raised_) return;
  raised_ = true;
  int expected = -1;
  first_raiser_.compare_exchange_strong(expected, rank_);
  aborted_ = true;
  sent_notice_.assign(1, rank_);
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    MPI_Request request = MPI_REQUEST_NULL;
    BAGUA_MPI_CHECK(MPI_Isend(sent_notice_.data(), 1, MPI_INT, r, kNoticeTag, comm_, &request));
    sends_.push_back(request);
  }
}

bool AbortSignal::aborted() {
  if (aborted_) return true;
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  if (!lock.owns_lock() || armed_arrived_) return aborted_;
  int arrived = 0;
  BAGUA_MPI_CHECK(MPI_Test(&armed_, &arrived, MPI_STATUS_IGNORE));
  if (arrived) {
    armed_arrived_ = true;
    int expected = -1;
    first_raiser_.compare_exchange_strong(expected, notice_);
    aborted_ = true;
  }
  return aborted_;
}

void AbortSignal::throw_if_aborted() {
  if (!aborted()) return;
  throw Aborted("aborted: rank " + std::to_string(first_raiser_.load()) + " failed");
}

void AbortSignal::retire(MPI_Comm comm) {
  std::lock_guard<std::mutex> lock(mu_);
  retired_.push_back(comm);
}

void AbortSignal::settle(int raisers, bool raised_here) {
  std::lock_guard<std::mutex> lock(mu_);
  BAGUA_CHECK(raised_here == raised_, "settle: this rank raised, or not, as the agreement says");
  const int to_receive = raisers - (raised_here ? 1 : 0);
  BAGUA_CHECK(
      to_receive >= 0 && to_receive < size_,
      "settle: " + std::to_string(raisers) + " ranks raised, " + std::to_string(size_) + " ranks");
  // Every notice of this run was sent before its sender joined the agreement, which has completed.
  int received = 0;
  if (to_receive > 0) {
    if (!armed_arrived_) BAGUA_MPI_CHECK(MPI_Wait(&armed_, MPI_STATUS_IGNORE));
    armed_arrived_ = true;
    received = 1;
  }
  for (; received < to_receive; ++received) {
    int notice = -1;
    BAGUA_MPI_CHECK(
        MPI_Recv(&notice, 1, MPI_INT, MPI_ANY_SOURCE, kNoticeTag, comm_, MPI_STATUS_IGNORE));
  }
  if (!sends_.empty()) {
    BAGUA_MPI_CHECK(MPI_Waitall(static_cast<int>(sends_.size()), sends_.data(), MPI_STATUSES_IGNORE));
  }
  sends_.clear();
  if (raisers == 0) {
    for (MPI_Comm& c : retired_)
      BAGUA_MPI_CHECK(MPI_Comm_free(&c));
  } else {
    kept_.insert(kept_.end(), retired_.begin(), retired_.end());
  }
  retired_.clear();
  raised_ = false;
  aborted_ = false;
  first_raiser_ = -1;
  if (armed_arrived_) arm();  // else the armed receive of this run is still posted: it stays armed
}

}  // namespace bagua::runtime::mpi
