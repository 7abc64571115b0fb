// A world of ranks as Open MPI processes with one GPU each, communicating through NCCL (a job World,
// core/world.h).
//
// Launch with mpirun, one process per GPU, e.g.
//   mpirun -np 8 bagua run CONFIG.json
// (as root add --allow-run-as-root). Rank r uses the visible GPU number (local rank) modulo the GPUs
// it sees, its local rank being its position among the ranks of its node (MPI_Comm_split_type,
// MPI_COMM_TYPE_SHARED): all of a node's GPUs visible to every rank, or one GPU per rank where the
// launcher binds each to its own (CUDA_VISIBLE_DEVICES). Two ranks of a node on one physical GPU (the
// same PCI bus id) are refused, every rank together, with a one-line error (NCCL refuses two ranks of
// one communicator on one GPU).
//
// The rank's context: an NcclTransport over all ranks (bootstrapped over MPI), a CudaSpace on the
// rank's GPU as its space() — so the trainer keeps weights and gradients in GPU memory, and synthetic
// models, which compute on the host, get host mirrors (core/trainer/trainer.cc) — a real clock whose
// origin all ranks took right after one barrier, thread streams and thread events.
//
// MPI is initialized through MpiWorld (MPI_THREAD_MULTIPLE), and finalized when the world is destroyed
// if it was initialized here. The thread that constructs the world, or last called run(), is the rank's
// compute thread (lane 0 of the transport); streams made by the context communicate on lane 1.
//
// Process-wide settings of the device's default memory pool: it keeps the memory it has handed out for
// reuse (release threshold = unlimited) instead of returning it at every synchronization, so that the
// per-operation allocations of this runtime (staging, scratch, temporaries) stay cheap; and an
// allocation never reuses a block whose free is still queued on another stream
// (cudaMemPoolReuseAllowInternalDependencies = 0): by default cudaMallocAsync may make its stream
// wait for that stream instead (CUDA runtime API, cudaMemPoolAttr), so the compute thread's allocation
// would wait behind its communication lane's NCCL kernels, which may wait for a peer (runtime/nccl/
// space.h: a free or an allocation waits for nothing of the other lane).
#pragma once

#include <functional>
#include <memory>

#include "core/context.h"
#include "core/units.h"
#include "core/world.h"
#include "runtime/common/watchdog.h"

namespace bagua::runtime::mpi {
class MpiWorld;
}

namespace bagua::runtime::nccl {

class CudaSpace;
class NcclTransport;

class NcclWorld final : public World {
 public:
  // Collective over every process of the job: initializes MPI, picks this rank's GPU, creates the NCCL
  // communicators. Rank r's host is r / ranks_per_host when ranks_per_host > 0 (one machine emulating
  // several hosts), otherwise its node. Throws ConfigError when this process sees no CUDA device, or
  // fewer devices than ranks run on its node. A wait for a send, a receive or ncclAllReduce (and MPI's
  // waits) longer than `watchdog` ends the job with one line (runtime/mpi/world.h).
  NcclWorld(int* argc, char*** argv, int ranks_per_host = 0, Time watchdog = Watchdog::kDefaultLimit);
  ~NcclWorld();  // communicators, then MPI
  NcclWorld(const NcclWorld&) = delete;
  NcclWorld& operator=(const NcclWorld&) = delete;

  // The number of CUDA devices this process sees (0 without a driver). Needs no MPI.
  static int device_count();

  RankContext& context();
  NcclTransport& transport();
  const CudaSpace& space() const;
  int rank() const override;
  int size() const override;
  bool is_job() const override { return true; }
  void set_link_hint(std::optional<LinkHint> hint) override;
  int device() const;  // the CUDA device this rank uses

  // Runs `body` on this process's rank, on the calling thread (which becomes the compute thread). If it
  // throws, prints the error once, prefixed with the rank, and aborts the whole job (MPI_Abort): the
  // other ranks would otherwise wait forever.
  void run(const std::function<void(RankContext&)>& body) override;

 private:
  class Context;
  std::unique_ptr<mpi::MpiWorld> mpi_;
  std::unique_ptr<Context> context_;
};

}  // namespace bagua::runtime::nccl
