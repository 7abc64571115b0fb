#include "runtime/mpi/transport.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>

#include "core/check.h"
#include "core/operation.h"

namespace bagua::runtime::mpi {

namespace detail {

std::string world_rank_text() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  int r = -1;
  if (initialized && !finalized && MPI_Comm_rank(MPI_COMM_WORLD, &r) == MPI_SUCCESS)
    return std::to_string(r);
  return "?";
}

void mpi_call_failed(const char* call, int error, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(error, text, &length) != MPI_SUCCESS) length = 0;
  const char* operation = current_operation();
  throw MpiError(std::string(file) + ":" + std::to_string(line) + ": rank " + world_rank_text() + ": " +
                 call + (operation ? std::string(" in ") + operation : std::string()) + " failed: " +
                 (length > 0 ? std::string(text, static_cast<size_t>(length))
                             : "MPI error " + std::to_string(error)));
}

}  // namespace detail

namespace {

// Frees a communicator when it goes out of scope (skipped once MPI is finalized, when freeing is
// neither possible nor needed).
void free_comm(MPI_Comm& comm) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm);
  comm = MPI_COMM_NULL;
}

struct CommGuard {
  MPI_Comm comm = MPI_COMM_NULL;
  ~CommGuard() { free_comm(comm); }
};

struct GroupGuard {
  MPI_Group group = MPI_GROUP_NULL;
  ~GroupGuard() {
    if (group != MPI_GROUP_NULL) MPI_Group_free(&group);
  }
};

// A tag for MPI_Comm_create_group that every member derives alone from the member list, so that
// concurrent creations of different subgroups over one parent are kept apart.
int subgroup_tag(std::span<const int> ranks, Tag tag_ub) {
  return static_cast<int>(subgroup_id(0, ranks) % (static_cast<uint64_t>(tag_ub) + 1));
}

// Host index of every rank of `comm`: ranks that share a node (MPI_COMM_TYPE_SHARED) share a host;
// hosts are numbered in the order of their lowest rank.
std::vector<int> detect_hosts(MPI_Comm comm, int rank, int size) {
  int lowest = rank;  // the lowest rank on this rank's node
  {
    CommGuard node;
    BAGUA_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node.comm));
    BAGUA_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &lowest, 1, MPI_INT, MPI_MIN, node.comm));
  }
  std::vector<int> lowest_of(static_cast<size_t>(size));
  BAGUA_MPI_CHECK(MPI_Allgather(&lowest, 1, MPI_INT, lowest_of.data(), 1, MPI_INT, comm));
  std::vector<int> leaders = lowest_of;
  std::sort(leaders.begin(), leaders.end());
  leaders.erase(std::unique(leaders.begin(), leaders.end()), leaders.end());
  std::vector<int> hosts;
  hosts.reserve(lowest_of.size());
  for (int l : lowest_of)
    hosts.push_back(
        static_cast<int>(std::lower_bound(leaders.begin(), leaders.end(), l) - leaders.begin()));
  return hosts;
}

}  // namespace

struct MpiTransport::State {
  State(MPI_Comm owned, std::shared_ptr<Watchdog> watching, std::shared_ptr<AbortSignal> aborting)
      : comm(owned), watchdog(std::move(watching)), abort(std::move(aborting)) {
    BAGUA_MPI_CHECK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
    BAGUA_MPI_CHECK(MPI_Comm_rank(comm, &rank));
    BAGUA_MPI_CHECK(MPI_Comm_size(comm, &size));
    // Every rank's number in MPI_COMM_WORLD, for the watchdog's line (a subgroup numbers its own).
    GroupGuard mine, world;
    BAGUA_MPI_CHECK(MPI_Comm_group(comm, &mine.group));
    BAGUA_MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world.group));
    std::vector<int> ranks(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r)
      ranks[static_cast<size_t>(r)] = r;
    world_ranks.resize(ranks.size());
    BAGUA_MPI_CHECK(
        MPI_Group_translate_ranks(mine.group, size, ranks.data(), world.group, world_ranks.data()));
    // MPI_TAG_UB is an attribute of MPI_COMM_WORLD and holds for every communicator.
    int* ub = nullptr;
    int found = 0;
    BAGUA_MPI_CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found));
    BAGUA_CHECK(found && ub && *ub > 0, "MPI_TAG_UB is not set on MPI_COMM_WORLD");
    tag_ub = static_cast<Tag>(*ub);
  }

  ~State() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    // Complete what was dropped unfinished: a receive nobody waits for is cancelled, a send completes
    // (its peer receives it), unless the run is aborted or unwinding: then the peer may never receive
    // it, and the send is freed instead (see the header). Errors cannot be reported from here and are
    // ignored.
    const bool abandoned = abandoning();
    for (Detached& d : detached) {
      if (d.receive) {
        cancel(&d.request);
      } else if (abandoned) {
        MPI_Request_free(&d.request);
      } else {
        MPI_Wait(&d.request, MPI_STATUS_IGNORE);
      }
    }
    if (abort) {
      abort->retire(comm);  // freed at the end of the run, if it ends well (abort.h: retired)
    } else {
      free_comm(comm);
    }
  }

  State(const State&) = delete;
  State& operator=(const State&) = delete;

  // Scratch of `bytes` bytes, owned by the caller until given back.
  std::vector<uint8_t> take_scratch(size_t bytes) {
    std::vector<uint8_t> s;
    {
      std::lock_guard<std::mutex> lock(mu);
      // The smallest free scratch that fits, else the largest (grown below).
      auto best = free_scratch.end();
      for (auto it = free_scratch.begin(); it != free_scratch.end(); ++it) {
        if (best == free_scratch.end()) {
          best = it;
          continue;
        }
        const bool it_fits = it->capacity() >= bytes;
        const bool best_fits = best->capacity() >= bytes;
        if (it_fits != best_fits) {
          if (it_fits) best = it;
        } else if (it_fits ? it->capacity() < best->capacity() : it->capacity() > best->capacity()) {
          best = it;
        }
      }
      if (best != free_scratch.end()) {
        s = std::move(*best);
        free_scratch.erase(best);
      }
    }
    s.resize(bytes);
    return s;
  }

  void give_back(std::vector<uint8_t> s) {
    if (s.capacity() == 0) return;
    std::lock_guard<std::mutex> lock(mu);
    free_scratch.push_back(std::move(s));
  }

  void detach(MPI_Request request, bool receive, std::vector<uint8_t> scratch) {
    std::lock_guard<std::mutex> lock(mu);
    detached.push_back({request, receive, std::move(scratch)});
    detached_count.store(detached.size(), std::memory_order_release);
  }

  // Retires detached requests that have completed (their errors have nobody to go to). Every send
  // and receive calls it, and almost always nothing is detached: that case takes no lock.
  void reap() {
    if (detached_count.load(std::memory_order_acquire) == 0) return;
    std::lock_guard<std::mutex> lock(mu);
    for (size_t i = 0; i < detached.size();) {
      int flag = 0;
      const int error = MPI_Test(&detached[i].request, &flag, MPI_STATUS_IGNORE);
      if (flag || error != MPI_SUCCESS) {
        if (detached[i].scratch.capacity() > 0) free_scratch.push_back(std::move(detached[i].scratch));
        detached[i] = std::move(detached.back());
        detached.pop_back();
      } else {
        ++i;
      }
    }
    detached_count.store(detached.size(), std::memory_order_release);
  }

  struct Detached {
    MPI_Request request;
    bool receive;
    std::vector<uint8_t> scratch;
  };

  // A watched wait of this rank for `peer` (this communicator's numbering, or Watchdog::kEveryPeer).
  Watchdog::Watch watch(int peer, const char* what, Tag tag, bool has_tag = true) const {
    return runtime::watch(
        watchdog.get(),
        {.rank = world_ranks[static_cast<size_t>(rank)],
         .peer = peer == Watchdog::kEveryPeer ? peer : world_ranks[static_cast<size_t>(peer)],
         .what = what,
         .tag = tag,
         .has_tag = has_tag});
  }

  // Waits for `request` to complete: MPI_Wait, or without a signal; with one, polls the request and
  // the signal in turn (Aborted once the run is aborted; a receive is cancelled first, since its
  // buffer goes with the caller's stack).
  void complete(MPI_Request* request, bool receive, MPI_Status* status) const {
    if (!abort) {
      BAGUA_MPI_CHECK(MPI_Wait(request, status));
      return;
    }
    for (;;) {
      int flag = 0;
      BAGUA_MPI_CHECK(MPI_Test(request, &flag, status));
      if (flag) return;
      if (abort->aborted()) {
        if (receive) cancel(request);
        abort->throw_if_aborted();
      }
      std::this_thread::yield();
    }
  }

  // Whether a request dropped now may never complete: the run is aborted, or an exception unwinds.
  bool abandoning() const { return std::uncaught_exceptions() > 0 || (abort && abort->aborted()); }

  // Cancels a receive and waits until it is cancelled or (matched already) complete.
  static void cancel(MPI_Request* request) {
    MPI_Cancel(request);
    MPI_Wait(request, MPI_STATUS_IGNORE);
  }

  MPI_Comm comm = MPI_COMM_NULL;
  std::shared_ptr<Watchdog> watchdog;
  std::shared_ptr<AbortSignal> abort;
  int rank = 0;
  int size = 0;
  std::vector<int> world_ranks;  // world_ranks[r] = rank r's number in MPI_COMM_WORLD
  Tag tag_ub = 0;
  std::mutex mu;  // guards free_scratch and detached
  std::vector<std::vector<uint8_t>> free_scratch;
  std::vector<Detached> detached;
  std::atomic<size_t> detached_count{0};  // detached.size(), readable without the lock
};

namespace {

class MpiRequest final : public Request {
 public:
  // `receive_bytes` is the size the receive named (unused for sends).
  MpiRequest(std::shared_ptr<MpiTransport::State> state, MPI_Request request, bool receive,
             int receive_bytes, int peer, Tag tag, std::vector<uint8_t> scratch)
      : state_(std::move(state)),
        request_(request),
        receive_(receive),
        receive_bytes_(receive_bytes),
        peer_(peer),
        tag_(tag),
        scratch_(std::move(scratch)) {}

  ~MpiRequest() override {
    // A receive dropped unfinished while the run is abandoned is cancelled at once: the caller's
    // buffer it would write into is about to go.
    if (!done_ && receive_ && request_ != MPI_REQUEST_NULL && state_->abandoning())
      MpiTransport::State::cancel(&request_);
    if (!done_ && request_ != MPI_REQUEST_NULL) {
      state_->detach(request_, receive_, std::move(scratch_));
    } else {
      state_->give_back(std::move(scratch_));
    }
  }
  MpiRequest(const MpiRequest&) = delete;
  MpiRequest& operator=(const MpiRequest&) = delete;

  bool test() override {
    if (done_) return true;
    int flag = 0;
    MPI_Status status;
    BAGUA_MPI_CHECK(MPI_Test(&request_, &flag, &status));
    if (flag) finish(status);
    return done_;
  }

  void wait() override {
    if (done_) return;
    MPI_Status status;
    // A small message has often completed by the time its wait starts (an eager send is done when
    // MPI_Isend returns): one MPI_Test, which returns at once for a completed request, spares such
    // waits the watchdog's bookkeeping (a lock and a map entry on entry and exit, a good part of a
    // small message's time on shared memory). Only one: every further test is a progress pass that
    // may yield the processor (mpi_yield_when_idle, set when oversubscribed) before the wait is
    // watched, and the watchdog must see each wait from about its start (the oldest wait of a
    // stalled job names the stalled rank).
    {
      int flag = 0;
      BAGUA_MPI_CHECK(MPI_Test(&request_, &flag, &status));
      if (flag) {
        finish(status);
        return;
      }
    }
    {
      const Watchdog::Watch watched = state_->watch(peer_, receive_ ? "recv" : "send", tag_);
      state_->complete(&request_, receive_, &status);
    }
    finish(status);
  }

 private:
  void finish(const MPI_Status& status) {
    done_ = true;
    state_->give_back(std::move(scratch_));
    if (!receive_) return;
    int received = 0;
    BAGUA_MPI_CHECK(MPI_Get_count(&status, MPI_BYTE, &received));
    BAGUA_CHECK(received == receive_bytes_, "rank " + std::to_string(state_->rank) + ": receive of " +
                                                std::to_string(receive_bytes_) + " bytes from rank " +
                                                std::to_string(peer_) + " (tag " +
                                                std::to_string(tag_) + ") matched a send of " +
                                                std::to_string(received) + " bytes");
  }

  std::shared_ptr<MpiTransport::State> state_;
  MPI_Request request_;
  bool receive_;
  int receive_bytes_;
  int peer_;
  Tag tag_;
  std::vector<uint8_t> scratch_;
  bool done_ = false;
};

// MPI counts are ints: one message carries at most INT_MAX bytes.
int wire_count(const BufferView& data, int rank, const char* what) {
  const int64_t bytes = data.bytes().count();
  if (bytes > INT_MAX)
    throw ConfigError(std::string("mpi transport: rank ") + std::to_string(rank) + ": " + what +
                      " of " + std::to_string(bytes) + " bytes exceeds MPI's " +
                      std::to_string(INT_MAX) + " bytes per message; use smaller buckets");
  return static_cast<int>(bytes);
}

}  // namespace

MpiTransport::MpiTransport(MPI_Comm comm, int ranks_per_host, std::shared_ptr<Watchdog> watchdog,
                           std::shared_ptr<AbortSignal> abort) {
  if (ranks_per_host < 0)
    throw ConfigError("mpi transport: ranks_per_host must be >= 0 (0 = detect), got " +
                      std::to_string(ranks_per_host));
  MPI_Comm own = MPI_COMM_NULL;
  BAGUA_MPI_CHECK(MPI_Comm_dup(comm, &own));
  try {
    state_ = std::make_shared<State>(own, std::move(watchdog), std::move(abort));
  } catch (...) {
    free_comm(own);
    throw;
  }
  rank_ = state_->rank;
  if (ranks_per_host > 0) {
    for (int r = 0; r < state_->size; ++r)
      hosts_.push_back(r / ranks_per_host);
  } else {
    hosts_ = detect_hosts(state_->comm, state_->rank, state_->size);
  }
}

MpiTransport::MpiTransport(std::shared_ptr<State> state, std::vector<int> hosts)
    : state_(std::move(state)), hosts_(std::move(hosts)), rank_(state_->rank) {
  BAGUA_CHECK_EQ(static_cast<int>(hosts_.size()), state_->size,
                 "subgroup host list vs communicator size");
}

MpiTransport::~MpiTransport() = default;

void MpiTransport::renew() {
  MPI_Comm own = MPI_COMM_NULL;
  BAGUA_MPI_CHECK(MPI_Comm_dup(state_->comm, &own));
  std::shared_ptr<State> fresh;
  try {
    fresh = std::make_shared<State>(own, state_->watchdog, state_->abort);
  } catch (...) {
    free_comm(own);
    throw;
  }
  state_ = std::move(fresh);
}

MPI_Comm MpiTransport::comm() const {
  return state_->comm;
}

Tag MpiTransport::max_tag() const {
  return state_->tag_ub;
}

Watchdog* MpiTransport::watchdog() const {
  return state_->watchdog.get();
}

int MpiTransport::world_rank_of(int rank) const {
  check_peer(rank, "world_rank_of");
  return state_->world_ranks[static_cast<size_t>(rank)];
}

int MpiTransport::host_of(int rank) const {
  check_peer(rank, "host_of");
  return hosts_[static_cast<size_t>(rank)];
}

void MpiTransport::check_peer(int peer, const char* what) const {
  BAGUA_CHECK(peer >= 0 && peer < size(), "rank " + std::to_string(rank_) + ": " + what + ": rank " +
                                              std::to_string(peer) + " outside a group of " +
                                              std::to_string(size()));
}

void* MpiTransport::wire_buffer(const BufferView& data, const char* what,
                                std::vector<uint8_t>& scratch) const {
  switch (data.memory()) {
    case Memory::kHost:
      return data.data();
    case Memory::kMeta:
      scratch = state_->take_scratch(static_cast<size_t>(data.bytes().count()));
      return scratch.data();
    case Memory::kDevice:
      break;
  }
  throw ConfigError(
      std::string("mpi transport: rank ") + std::to_string(rank_) + ": " + what + " of a device (" +
      data.space().name() +
      ") buffer; the MPI runtime moves host and meta buffers only (device buffers need the "
      "nccl runtime)");
}

RequestPtr MpiTransport::isend(const BufferView& data, int dst, Tag tag) {
  check_peer(dst, "isend");
  BAGUA_CHECK(tag <= state_->tag_ub, "rank " + std::to_string(rank_) + ": isend tag " +
                                         std::to_string(tag) + " exceeds MPI_TAG_UB " +
                                         std::to_string(state_->tag_ub));
  const int count = wire_count(data, rank_, "isend");
  state_->reap();
  std::vector<uint8_t> scratch;
  void* bytes = wire_buffer(data, "isend", scratch);
  MPI_Request request = MPI_REQUEST_NULL;
  BAGUA_MPI_CHECK(
      MPI_Isend(bytes, count, MPI_BYTE, dst, static_cast<int>(tag), state_->comm, &request));
  return std::make_unique<MpiRequest>(state_, request, /*receive=*/false, 0, dst, tag,
                                      std::move(scratch));
}

RequestPtr MpiTransport::irecv(const BufferView& data, int src, Tag tag) {
  check_peer(src, "irecv");
  BAGUA_CHECK(tag <= state_->tag_ub, "rank " + std::to_string(rank_) + ": irecv tag " +
                                         std::to_string(tag) + " exceeds MPI_TAG_UB " +
                                         std::to_string(state_->tag_ub));
  const int count = wire_count(data, rank_, "irecv");
  state_->reap();
  std::vector<uint8_t> scratch;
  void* bytes = wire_buffer(data, "irecv", scratch);
  MPI_Request request = MPI_REQUEST_NULL;
  BAGUA_MPI_CHECK(
      MPI_Irecv(bytes, count, MPI_BYTE, src, static_cast<int>(tag), state_->comm, &request));
  return std::make_unique<MpiRequest>(state_, request, /*receive=*/true, count, src, tag,
                                      std::move(scratch));
}

std::unique_ptr<Transport> MpiTransport::make_subgroup(std::span<const int> ranks) {
  subgroup_position(*this, ranks, "rank " + std::to_string(rank_) + ": ");
  std::vector<int> hosts;
  for (int r : ranks)
    hosts.push_back(hosts_[static_cast<size_t>(r)]);

  GroupGuard parent, group;
  BAGUA_MPI_CHECK(MPI_Comm_group(state_->comm, &parent.group));
  BAGUA_MPI_CHECK(
      MPI_Group_incl(parent.group, static_cast<int>(ranks.size()), ranks.data(), &group.group));
  MPI_Comm comm = MPI_COMM_NULL;
  BAGUA_MPI_CHECK(
      MPI_Comm_create_group(state_->comm, group.group, subgroup_tag(ranks, state_->tag_ub), &comm));
  std::shared_ptr<State> state;
  try {
    state = std::make_shared<State>(comm, state_->watchdog, state_->abort);
  } catch (...) {
    free_comm(comm);
    throw;
  }
  return std::unique_ptr<Transport>(new MpiTransport(std::move(state), std::move(hosts)));
}

bool MpiTransport::native_allreduce(const BufferView& data, ReduceOp op) {
  static_assert(sizeof(long) == sizeof(int64_t), "i64 is reduced as MPI_LONG");
  MPI_Datatype type = MPI_DATATYPE_NULL;
  switch (data.dtype()) {
    case DType::kF32:
      type = MPI_FLOAT;
      break;
    case DType::kF64:
      type = MPI_DOUBLE;
      break;
    case DType::kI32:
      type = MPI_INT;
      break;
    case DType::kI64:
      type = MPI_LONG;
      break;
    default:
      return false;
  }
  MPI_Op mpi_op = MPI_SUM;
  switch (op) {
    case ReduceOp::kSum:
      mpi_op = MPI_SUM;
      break;
    case ReduceOp::kMin:
      mpi_op = MPI_MIN;
      break;
    case ReduceOp::kMax:
      mpi_op = MPI_MAX;
      break;
  }
  wire_count(data, rank_, "native_allreduce");
  BAGUA_CHECK(data.count() <= static_cast<size_t>(INT_MAX),
              "native_allreduce: element count over INT_MAX");
  std::vector<uint8_t> scratch;
  void* elements = wire_buffer(data, "native_allreduce", scratch);
  {
    const Watchdog::Watch watched =
        state_->watch(Watchdog::kEveryPeer, "MPI_Allreduce", 0, /*has_tag=*/false);
    BAGUA_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, elements, static_cast<int>(data.count()), type, mpi_op,
                                  state_->comm));
  }
  state_->give_back(std::move(scratch));
  return true;
}

}  // namespace bagua::runtime::mpi
