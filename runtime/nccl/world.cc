#include "runtime/nccl/world.h"

#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/check.h"
#include "runtime/common/real_clock.h"
#include "runtime/common/thread_stream.h"
#include "runtime/mpi/transport.h"
#include "runtime/mpi/world.h"
#include "runtime/nccl/check.h"
#include "runtime/nccl/space.h"
#include "runtime/nccl/transport.h"

namespace bagua::runtime::nccl {

namespace {

// This rank's position among the ranks of its node, and their number.
struct NodePlace {
  int local_rank = 0;
  int local_size = 1;
};
// The communicator of this rank's node (MPI_COMM_TYPE_SHARED), collective; the caller frees it.
MPI_Comm node_communicator() {
  MPI_Comm node = MPI_COMM_NULL;
  int world_rank = 0;
  BAGUA_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
  BAGUA_MPI_CHECK(
      MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL, &node));
  return node;
}

NodePlace node_place() {
  MPI_Comm node = node_communicator();
  NodePlace place;
  int error = MPI_Comm_rank(node, &place.local_rank);
  if (error == MPI_SUCCESS) error = MPI_Comm_size(node, &place.local_size);
  MPI_Comm_free(&node);
  BAGUA_MPI_CHECK(error);
  return place;
}

int visible_devices() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // no driver or no device: an answer, not an error
    return 0;
  }
  return count;
}

// Collective over the ranks of this rank's node: the number of other ranks there whose device has the
// PCI bus id of this rank's `device` (-1: none). The bus id names the physical GPU whatever numbering
// CUDA_VISIBLE_DEVICES gives each process, so that ranks bound to a GPU each by their launcher (one
// visible device per process) are told apart from ranks that share one.
int ranks_sharing_device(int device) {
  constexpr int kIdBytes = 32;  // "dddd:bb:dd.f" and its terminator, with room to spare
  std::array<char, kIdBytes> mine{};
  if (device >= 0 && cudaDeviceGetPCIBusId(mine.data(), kIdBytes, device) != cudaSuccess) {
    cudaGetLastError();
    mine.fill('\0');  // unknown: shared with nobody
  }
  MPI_Comm node = node_communicator();
  int size = 1, rank = 0;
  int error = MPI_Comm_size(node, &size);
  if (error == MPI_SUCCESS) error = MPI_Comm_rank(node, &rank);
  std::vector<char> all(static_cast<size_t>(size) * kIdBytes);
  if (error == MPI_SUCCESS)
    error = MPI_Allgather(mine.data(), kIdBytes, MPI_CHAR, all.data(), kIdBytes, MPI_CHAR, node);
  MPI_Comm_free(&node);
  BAGUA_MPI_CHECK(error);
  int sharing = 0;
  for (int r = 0; r < size; ++r)
    if (r != rank && mine[0] != '\0' &&
        std::equal(mine.begin(), mine.end(), all.begin() + static_cast<ptrdiff_t>(r) * kIdBytes))
      ++sharing;
  return sharing;
}

}  // namespace

namespace {

// The streams a rank's context has made and not yet destroyed: at most one at a time. The transport
// carries the compute thread's operations on lane 0 and every other thread's on lane 1, whose NCCL
// communicator matches them by posting order (transport.h, "Threads"); two streams posting at once
// would post in an order that differs from rank to rank. So a second stream is refused when it is
// made (byteps, whose push, pull and server streams communicate at once, is the algorithm that asks
// for one), rather than pairing the wrong messages when it runs.
class StreamSlot {
 public:
  // Throws ConfigError naming `name` and the stream that holds the slot.
  void take(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    if (holder_)
      throw ConfigError("nccl runtime: stream \"" + name + "\": a rank communicates from its compute " +
                        "thread and one stream at a time, and \"" + *holder_ +
                        "\" is that stream (an algorithm with several communicating streams, such " +
                        "as byteps, runs on the mpi, threads and sim runtimes)");
    holder_ = name;
  }
  void give_back() {
    std::lock_guard<std::mutex> lock(mu_);
    holder_.reset();
  }

 private:
  std::mutex mu_;
  std::optional<std::string> holder_;
};

// A ThreadStream holding the slot until it is destroyed (its thread joined).
class SlottedStream final : public Stream {
 public:
  SlottedStream(std::string name, std::shared_ptr<StreamSlot> slot) : slot_(std::move(slot)) {
    slot_->take(name);
    inner_ = std::make_unique<ThreadStream>(std::move(name));
  }
  ~SlottedStream() override {
    inner_.reset();
    slot_->give_back();
  }
  SlottedStream(const SlottedStream&) = delete;
  SlottedStream& operator=(const SlottedStream&) = delete;
  const std::string& name() const override { return inner_->name(); }
  EventPtr submit(std::function<void()> task) override { return inner_->submit(std::move(task)); }
  void synchronize() override { inner_->synchronize(); }

 private:
  std::shared_ptr<StreamSlot> slot_;
  std::unique_ptr<ThreadStream> inner_;
};

}  // namespace

class NcclWorld::Context final : public RankContext {
 public:
  Context(int device, std::unique_ptr<NcclTransport> transport, std::shared_ptr<LaneSelector> lanes)
      : space_(device), transport_(std::move(transport)), lanes_(std::move(lanes)) {
    // Every rank takes its clock's origin right after the same barrier.
    BAGUA_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    clock_ = RealClock(RealClock::Steady::now());
  }
  Transport& transport() override { return *transport_; }
  NcclTransport& nccl_transport() { return *transport_; }
  Clock& clock() override { return clock_; }
  std::unique_ptr<Stream> make_stream(std::string name) override {
    return std::make_unique<SlottedStream>(std::move(name), stream_slot_);
  }
  EventPtr make_event() override { return std::make_shared<ThreadEvent>(); }
  const Space& space() const override { return space_; }
  const CudaSpace& cuda_space() const { return space_; }
  LaneSelector& lanes() { return *lanes_; }

 private:
  std::shared_ptr<StreamSlot> stream_slot_ = std::make_shared<StreamSlot>();
  CudaSpace space_;
  std::unique_ptr<NcclTransport> transport_;
  std::shared_ptr<LaneSelector> lanes_;
  RealClock clock_;
};

NcclWorld::NcclWorld(int* argc, char*** argv, int ranks_per_host, Time watchdog)
    : mpi_(std::make_unique<mpi::MpiWorld>(argc, argv, ranks_per_host, watchdog)) {
  // Every rank needs a GPU of its own: NCCL refuses two ranks of one communicator on one GPU. Decided
  // collectively, so that all ranks throw together rather than some waiting in ncclCommInitRank.
  const int devices = visible_devices();
  const NodePlace place = node_place();
  const int device = devices > 0 ? place.local_rank % devices : -1;
  const int sharing = ranks_sharing_device(device);  // collective: every rank of the node calls it
  std::string problem;
  if (devices == 0) {
    problem = "sees no CUDA device; run it on GPUs, or use the mpi runtime";
  } else if (sharing > 0) {
    problem = "shares its CUDA device with " + std::to_string(sharing) +
              " other rank(s) of its node (" + std::to_string(place.local_size) + " ranks, " +
              std::to_string(devices) +
              " device(s) visible to this one); NCCL needs one device per rank (start at most as " +
              "many ranks per node as it has GPUs)";
  }
  int usable = problem.empty() ? 1 : 0;
  BAGUA_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &usable, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
  if (!problem.empty())
    throw ConfigError("nccl runtime: rank " + std::to_string(mpi_->rank()) + " " + problem);
  if (!usable)
    throw ConfigError("nccl runtime: rank " + std::to_string(mpi_->rank()) +
                      ": another rank has no CUDA device of its own (see its message)");
  use_device(device);

  // Keep pool memory for reuse instead of releasing it at every synchronization, and never reuse a
  // block whose free waits on another stream (see world.h).
  cudaMemPool_t pool = nullptr;
  BAGUA_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  uint64_t threshold = std::numeric_limits<uint64_t>::max();
  BAGUA_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  int cross_stream_reuse = 0;
  BAGUA_CUDA_CHECK(
      cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowInternalDependencies, &cross_stream_reuse));

  auto lanes = std::make_shared<LaneSelector>(std::this_thread::get_id());
  auto bootstrap =
      std::make_unique<mpi::MpiTransport>(MPI_COMM_WORLD, ranks_per_host, mpi_->watchdog());
  auto transport = std::make_unique<NcclTransport>(std::move(bootstrap), device, lanes);
  context_ = std::make_unique<Context>(device, std::move(transport), std::move(lanes));
}

NcclWorld::~NcclWorld() {
  context_.reset();  // communicators and device memory before MPI is finalized
  mpi_.reset();
}

int NcclWorld::device_count() {
  return visible_devices();
}

RankContext& NcclWorld::context() {
  return *context_;
}

void NcclWorld::set_link_hint(std::optional<LinkHint> hint) {
  transport().set_link_hint(hint);
}

NcclTransport& NcclWorld::transport() {
  return context_->nccl_transport();
}

const CudaSpace& NcclWorld::space() const {
  return context_->cuda_space();
}

int NcclWorld::rank() const {
  return context_->nccl_transport().rank();
}

int NcclWorld::size() const {
  return context_->nccl_transport().size();
}

int NcclWorld::device() const {
  return context_->cuda_space().device();
}

void NcclWorld::run(const std::function<void(RankContext&)>& body) {
  context_->lanes().set_compute_thread(std::this_thread::get_id());
  // As under MPI: a config error every rank shares is thrown on every rank; anything else aborts the
  // job.
  mpi_->guard([&] {
    use_device(device());
    body(*context_);
  });
}

}  // namespace bagua::runtime::nccl
