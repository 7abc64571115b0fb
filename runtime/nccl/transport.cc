#include "runtime/nccl/transport.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "runtime/common/watchdog.h"
#include "runtime/mpi/transport.h"
#include "runtime/nccl/check.h"
#include "runtime/nccl/space.h"

namespace bagua::runtime::nccl {

void LaneSelector::set_compute_thread(std::thread::id id) {
  std::lock_guard<std::mutex> lock(mu_);
  compute_thread_ = id;
}

int LaneSelector::lane_of_calling_thread() const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::this_thread::get_id() == compute_thread_ ? 0 : 1;
}

namespace {

constexpr Tag kBootstrapTag = 0;  // the bootstrap transport carries nothing but the unique ids

// A CUDA event without timing (cheaper to record and query).
class CudaEvent {
 public:
  CudaEvent() { BAGUA_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming)); }
  ~CudaEvent() {
    if (event_) BAGUA_CUDA_WARN(cudaEventDestroy(event_));
  }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

// Ends an NCCL group on every path out of a scope (errors of an abandoned group are only reported).
class GroupScope {
 public:
  GroupScope() { BAGUA_NCCL_CHECK(ncclGroupStart()); }
  ~GroupScope() {
    if (open_) BAGUA_NCCL_WARN(ncclGroupEnd());
  }
  GroupScope(const GroupScope&) = delete;
  GroupScope& operator=(const GroupScope&) = delete;
  void end() {
    open_ = false;
    BAGUA_NCCL_CHECK(ncclGroupEnd());
  }

 private:
  bool open_ = true;
};

std::string rank_text(int rank) {
  return "rank " + std::to_string(rank);
}

}  // namespace

struct NcclTransport::State {
  // One posted send or receive.
  struct Operation {
    bool send = false;
    int peer = 0;
    Tag tag = 0;
    size_t bytes = 0;
    bool meta = false;                 // moves the lane's scratch
    void* device_bytes = nullptr;      // what NCCL moves (unless meta)
    void* host_destination = nullptr;  // a host receive's bytes, copied when its request completes
    DeviceAllocation staging;          // device copy of a host view, freed on the lane's stream
    std::shared_ptr<CudaEvent> done;   // the group's event once launched (guarded by the lane's mutex)
    std::string error;                 // why the launch failed, if it did (guarded likewise)
  };

  struct Lane {
    int index = 0;
    ncclComm_t comm = nullptr;
    cudaStream_t stream = nullptr;
    std::mutex mu;  // guards everything below, and serializes NCCL calls on `comm`
    std::vector<std::shared_ptr<Operation>> pending;
    std::thread::id poster;  // the thread whose operations are pending
    DeviceAllocation scratch;
  };

  State(std::unique_ptr<Transport> bootstrap_, int device_, std::shared_ptr<LaneSelector> selector_)
      : device(device_),
        rank(bootstrap_->rank()),
        size(bootstrap_->size()),
        bootstrap(std::move(bootstrap_)),
        selector(std::move(selector_)) {}

  // Collective: the lanes' streams and communicators. A failure leaves the state partly built, which
  // the destructor tears down.
  void connect() {
    use_device(device);
    std::array<ncclUniqueId, kLanes> ids{};
    const BufferView id_bytes(ids.data(), sizeof ids, DType::kU8, &host_space());
    if (rank == 0) {
      for (ncclUniqueId& id : ids)
        BAGUA_NCCL_CHECK(ncclGetUniqueId(&id));
      std::vector<RequestPtr> sent;
      for (int r = 1; r < size; ++r)
        sent.push_back(bootstrap->isend(id_bytes, r, kBootstrapTag));
      wait_all(sent);
    } else {
      bootstrap->recv(id_bytes, 0, kBootstrapTag);
    }
    for (int l = 0; l < kLanes; ++l) {
      Lane& lane = lanes[static_cast<size_t>(l)];
      lane.index = l;
      BAGUA_CUDA_CHECK(cudaStreamCreateWithFlags(&lane.stream, cudaStreamNonBlocking));
      // Every rank joins lane 0's communicator, then lane 1's: the same order everywhere.
      BAGUA_NCCL_CHECK(ncclCommInitRank(&lane.comm, size, ids[static_cast<size_t>(l)], rank));
    }
  }

  ~State() {
    if (cudaSetDevice(device) != cudaSuccess) return;  // no device: nothing was created
    for (Lane& lane : lanes) {
      // A communicator that failed asynchronously (a peer died, a network error) is aborted, not
      // waited for: its kernels stop only once NCCL's abort flag is set, so synchronizing its stream or
      // destroying it (which synchronizes too) would wait for ever (NCCL user guide, "Creating a
      // Communicator", "Error handling and communicator abort"; ncclCommAbort came with
      // ncclCommGetAsyncError in NCCL 2.4.2 "to properly handle network errors").
      ncclResult_t async = ncclSuccess;
      if (lane.comm && (ncclCommGetAsyncError(lane.comm, &async) != ncclSuccess ||
                        (async != ncclSuccess && async != ncclInProgress))) {
        BAGUA_NCCL_WARN(ncclCommAbort(lane.comm));
        lane.comm = nullptr;
      }
      if (lane.comm) {
        try {
          std::lock_guard<std::mutex> lock(lane.mu);
          launch_locked(lane);  // dropped requests' operations: their peers wait for them
        } catch (const std::exception& e) {
          std::fprintf(stderr, "%s\n", e.what());
        }
      }
      if (lane.stream) BAGUA_CUDA_WARN(cudaStreamSynchronize(lane.stream));
      lane.scratch = DeviceAllocation();
      if (lane.comm) BAGUA_NCCL_WARN(ncclCommDestroy(lane.comm));
      if (lane.stream) BAGUA_CUDA_WARN(cudaStreamDestroy(lane.stream));
      lane.comm = nullptr;
      lane.stream = nullptr;
    }
  }

  State(const State&) = delete;
  State& operator=(const State&) = delete;

  int calling_lane() const { return selector->lane_of_calling_thread(); }
  Lane& lane(int index) { return lanes[static_cast<size_t>(index)]; }

  // Queues `op` on `lane` for the calling thread.
  void post(Lane& lane, std::shared_ptr<Operation> op) {
    std::lock_guard<std::mutex> lock(lane.mu);
    claim_locked(lane);
    lane.pending.push_back(std::move(op));
  }

  // The calling thread is about to put operations on `lane`: no other thread may have some pending
  // there.
  void claim_locked(Lane& lane) {
    const std::thread::id me = std::this_thread::get_id();
    if (!lane.pending.empty() && lane.poster != me)
      throw ConfigError(
          "nccl transport: " + rank_text(rank) + ": two threads besides the compute thread " +
          "communicate at once on lane " + std::to_string(lane.index) + "; a rank may " +
          "communicate from its compute thread and one other thread (its communication stream)");
    lane.poster = me;
  }

  // The lane's scratch, at least `bytes` long. A smaller one is freed on the lane's stream, after the
  // groups already launched there that use it.
  void* scratch_locked(Lane& lane, size_t bytes) {
    if (lane.scratch.size() < bytes)
      lane.scratch = DeviceAllocation(device, std::max(bytes, 2 * lane.scratch.size()), lane.stream);
    return lane.scratch.data();
  }

  // Launches every pending operation of `lane` as one NCCL group, followed by one event.
  void launch_locked(Lane& lane) {
    if (lane.pending.empty()) return;
    use_device(device);
    std::vector<std::shared_ptr<Operation>> group;
    group.swap(lane.pending);
    try {
      size_t meta_bytes = 0;
      for (const auto& op : group)
        if (op->meta) meta_bytes = std::max(meta_bytes, op->bytes);
      void* scratch = meta_bytes > 0 ? scratch_locked(lane, meta_bytes) : nullptr;
      {
        GroupScope scope;
        for (const auto& op : group) {
          void* bytes = op->meta ? scratch : op->device_bytes;
          if (op->send) {
            BAGUA_NCCL_CHECK(ncclSend(bytes, op->bytes, ncclUint8, op->peer, lane.comm, lane.stream));
          } else {
            BAGUA_NCCL_CHECK(ncclRecv(bytes, op->bytes, ncclUint8, op->peer, lane.comm, lane.stream));
          }
        }
        scope.end();
      }
      auto done = std::make_shared<CudaEvent>();
      BAGUA_CUDA_CHECK(cudaEventRecord(done->get(), lane.stream));
      for (const auto& op : group)
        op->done = done;
    } catch (const std::exception& e) {
      for (const auto& op : group)
        op->error = e.what();
      throw;
    }
    // `group` releases the operations of dropped requests here; their staging memory is freed on the
    // lane's stream, after the group.
  }

  // The event of `op`'s group, launching the lane's pending operations if `op` is among them.
  std::shared_ptr<CudaEvent> launched(Lane& lane, Operation& op) {
    std::lock_guard<std::mutex> lock(lane.mu);
    if (!op.done && op.error.empty()) launch_locked(lane);
    if (!op.error.empty()) throw NcclError(op.error);
    BAGUA_CHECK(op.done != nullptr,
                rank_text(rank) + ": an operation was not launched with its lane's group");
    return op.done;
  }

  // Throws if the lane's communicator has failed asynchronously (a peer died, a network error).
  void check_async(Lane& lane) const {
    ncclResult_t async = ncclSuccess;
    BAGUA_NCCL_CHECK(ncclCommGetAsyncError(lane.comm, &async));
    if (async != ncclSuccess && async != ncclInProgress)
      detail::nccl_call_failed("ncclCommGetAsyncError (an asynchronous error of the communicator)",
                               async, __FILE__, __LINE__);
  }

  // A watched wait of this rank for `peer` (this group's numbering, or Watchdog::kEveryPeer), by the
  // watchdog of the bootstrap MPI transport, in MPI_COMM_WORLD's numbering; nothing without one.
  Watchdog::Watch watch(int peer, const char* what, Tag tag, bool has_tag = true) const {
    const auto* mpi = dynamic_cast<const mpi::MpiTransport*>(bootstrap.get());
    if (!mpi || !mpi->watchdog()) return {};
    return mpi->watchdog()->watch(
        {.rank = mpi->world_rank_of(rank),
         .peer = peer == Watchdog::kEveryPeer ? peer : mpi->world_rank_of(peer),
         .what = what,
         .tag = tag,
         .has_tag = has_tag});
  }

  // Polls `done` until it has completed, watching the communicator for asynchronous errors (a plain
  // cudaEventSynchronize would wait forever for a peer that failed).
  void wait_for(Lane& lane, const CudaEvent& done) const {
    use_device(device);
    for (;;) {
      const cudaError_t status = cudaEventQuery(done.get());
      if (status == cudaSuccess) return;
      if (status != cudaErrorNotReady)
        detail::cuda_call_failed("cudaEventQuery", status, __FILE__, __LINE__);
      check_async(lane);
      std::this_thread::yield();
    }
  }

  int device;
  int rank;
  int size;
  std::unique_ptr<Transport> bootstrap;
  std::shared_ptr<LaneSelector> selector;
  std::array<Lane, kLanes> lanes;
};

namespace {

using Operation = NcclTransport::State::Operation;

class NcclRequest final : public Request {
 public:
  // An operation that needs no communication (zero bytes): complete from the start.
  NcclRequest() = default;
  NcclRequest(std::shared_ptr<NcclTransport::State> state, int lane, std::shared_ptr<Operation> op)
      : state_(std::move(state)), lane_(lane), op_(std::move(op)) {}

  bool test() override {
    if (!op_) return true;
    NcclTransport::State::Lane& lane = state_->lane(lane_);
    const std::shared_ptr<CudaEvent> done = state_->launched(lane, *op_);
    use_device(state_->device);
    const cudaError_t status = cudaEventQuery(done->get());
    if (status == cudaErrorNotReady) {
      state_->check_async(lane);
      return false;
    }
    if (status != cudaSuccess) detail::cuda_call_failed("cudaEventQuery", status, __FILE__, __LINE__);
    complete();
    return true;
  }

  void wait() override {
    if (!op_) return;
    NcclTransport::State::Lane& lane = state_->lane(lane_);
    const std::shared_ptr<CudaEvent> done = state_->launched(lane, *op_);
    {
      const Watchdog::Watch watched = state_->watch(op_->peer, op_->send ? "send" : "recv", op_->tag);
      state_->wait_for(lane, *done);
    }
    complete();
  }

 private:
  void complete() {
    if (op_->host_destination)
      copy_bytes(state_->device, op_->host_destination, op_->staging.data(), op_->bytes);
    op_.reset();
  }

  std::shared_ptr<NcclTransport::State> state_;
  int lane_ = 0;
  std::shared_ptr<Operation> op_;  // null once complete
};

}  // namespace

NcclTransport::NcclTransport(std::unique_ptr<Transport> bootstrap, int device,
                             std::shared_ptr<LaneSelector> lanes) {
  BAGUA_CHECK(bootstrap != nullptr, "nccl transport: no bootstrap transport");
  if (!lanes) lanes = std::make_shared<LaneSelector>();
  state_ = std::make_shared<State>(std::move(bootstrap), device, std::move(lanes));
  state_->connect();
}

NcclTransport::~NcclTransport() = default;

int NcclTransport::rank() const {
  return state_->rank;
}

int NcclTransport::size() const {
  return state_->size;
}

int NcclTransport::host_of(int rank) const {
  check_peer(rank, "host_of");
  return state_->bootstrap->host_of(rank);
}

int NcclTransport::device() const {
  return state_->device;
}

ncclComm_t NcclTransport::comm(int lane) const {
  BAGUA_CHECK(lane >= 0 && lane < kLanes,
              "nccl transport: lane " + std::to_string(lane) + " of " + std::to_string(kLanes));
  return state_->lanes[static_cast<size_t>(lane)].comm;
}

void NcclTransport::check_peer(int peer, const char* what) const {
  BAGUA_CHECK(peer >= 0 && peer < size(), rank_text(rank()) + ": " + what + ": rank " +
                                              std::to_string(peer) + " outside a group of " +
                                              std::to_string(size()));
}

RequestPtr NcclTransport::isend(const BufferView& data, int dst, Tag tag) {
  check_peer(dst, "isend");
  return post(data, dst, tag, /*send=*/true);
}

RequestPtr NcclTransport::irecv(const BufferView& data, int src, Tag tag) {
  check_peer(src, "irecv");
  return post(data, src, tag, /*send=*/false);
}

namespace {

// Device views must be this device's memory (NCCL moves them in place).
void check_device_view(const BufferView& data, int device, int rank, const char* what) {
  if (const auto* cuda = dynamic_cast<const CudaSpace*>(&data.space());
      cuda && cuda->device() != device)
    throw ConfigError("nccl transport: " + rank_text(rank) + ": " + what + " of a buffer on " +
                      cuda->name() + "; this rank's transport runs on cuda:" + std::to_string(device));
}

}  // namespace

RequestPtr NcclTransport::post(const BufferView& data, int peer, Tag tag, bool send) {
  const size_t bytes = static_cast<size_t>(data.bytes().count());
  if (bytes == 0) return std::make_unique<NcclRequest>();
  State& s = *state_;
  const int lane_index = s.calling_lane();
  State::Lane& lane = s.lane(lane_index);
  use_device(s.device);

  auto op = std::make_shared<Operation>();
  op->send = send;
  op->peer = peer;
  op->tag = tag;
  op->bytes = bytes;
  switch (data.memory()) {
    case Memory::kDevice:
      check_device_view(data, s.device, s.rank, send ? "isend" : "irecv");
      op->device_bytes = data.data();
      break;
    case Memory::kMeta:
      op->meta = true;
      break;
    case Memory::kHost:
      op->staging = DeviceAllocation(s.device, bytes, lane.stream);
      op->device_bytes = op->staging.data();
      if (send) {
        copy_bytes(s.device, op->device_bytes, data.data(), bytes);
      } else {
        op->host_destination = data.data();
      }
      break;
  }
  s.post(lane, op);
  return std::make_unique<NcclRequest>(state_, lane_index, std::move(op));
}

std::unique_ptr<Transport> NcclTransport::make_subgroup(std::span<const int> ranks) {
  subgroup_position(*this, ranks, rank_text(rank()) + ": ");
  std::unique_ptr<Transport> bootstrap = state_->bootstrap->subgroup(ranks);
  return std::make_unique<NcclTransport>(std::move(bootstrap), state_->device, state_->selector);
}

bool NcclTransport::native_allreduce(const BufferView& data, ReduceOp op) {
  ncclDataType_t type = ncclFloat32;
  switch (data.dtype()) {
    case DType::kF32:
      type = ncclFloat32;
      break;
    case DType::kF64:
      type = ncclFloat64;
      break;
    case DType::kI32:
      type = ncclInt32;
      break;
    case DType::kI64:
      type = ncclInt64;
      break;
    default:
      return false;
  }
  ncclRedOp_t reduction = ncclSum;
  switch (op) {
    case ReduceOp::kSum:
      reduction = ncclSum;
      break;
    case ReduceOp::kMin:
      reduction = ncclMin;
      break;
    case ReduceOp::kMax:
      reduction = ncclMax;
      break;
  }
  if (data.count() == 0) return true;

  State& s = *state_;
  State::Lane& lane = s.lane(s.calling_lane());
  use_device(s.device);
  const size_t bytes = static_cast<size_t>(data.bytes().count());
  DeviceAllocation staging;
  void* elements = nullptr;
  if (data.memory() == Memory::kDevice) {
    check_device_view(data, s.device, s.rank, "native_allreduce");
    elements = data.data();
  } else if (data.memory() == Memory::kHost) {
    staging = DeviceAllocation(s.device, bytes, lane.stream);
    copy_bytes(s.device, staging.data(), data.data(), bytes);
    elements = staging.data();
  }

  std::shared_ptr<CudaEvent> done;
  {
    std::lock_guard<std::mutex> lock(lane.mu);
    s.claim_locked(lane);
    s.launch_locked(lane);  // operations posted earlier go first, in their own group
    if (data.is_meta()) elements = s.scratch_locked(lane, bytes);
    BAGUA_NCCL_CHECK(
        ncclAllReduce(elements, elements, data.count(), type, reduction, lane.comm, lane.stream));
    done = std::make_shared<CudaEvent>();
    BAGUA_CUDA_CHECK(cudaEventRecord(done->get(), lane.stream));
  }
  {
    const Watchdog::Watch watched =
        s.watch(Watchdog::kEveryPeer, "ncclAllReduce", 0, /*has_tag=*/false);
    s.wait_for(lane, *done);
  }
  if (data.memory() == Memory::kHost) copy_bytes(s.device, data.data(), staging.data(), bytes);
  return true;
}

}  // namespace bagua::runtime::nccl
