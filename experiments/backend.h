// Where a point's ranks run: the backend switch of the composition root.
//
//   sim      netsim::Simulation over the point's cluster: every rank a fiber, virtual time
//            (deterministic)
//   threads  runtime::threads::ThreadsWorld: every rank a thread of this process, real time
//   mpi      runtime::mpi::MpiWorld: this process is one rank of the job mpirun started, real time
//   nccl     runtime::nccl::NcclWorld: the same with one GPU per rank, tensors in GPU memory and NCCL
//            point-to-point transport (built when CUDA and NCCL are found)
//
// mpi and nccl make this process part of a job: the job's world is started once, on the first point
// that needs it, and ended when the Backends go away (MPI cannot start twice in a process, so one run
// of `bagua` uses one of them, with one host layout). Only rank 0 writes results (is_writer()).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/context.h"
#include "experiments/config.h"
#include "netsim/simulation.h"

namespace bagua::experiments {

// What the simulator reports about a run besides the ranks' own results.
struct SimReport {
  Time end;
  std::vector<netsim::RankStats> ranks;
  std::vector<netsim::LinkStats> links;
  std::string trace;  // Chrome trace-event JSON, when the point asked for it
};

class Backends {
 public:
  // argc/argv are handed to MPI_Init when a job starts.
  Backends(int* argc, char*** argv);
  ~Backends();
  Backends(const Backends&) = delete;
  Backends& operator=(const Backends&) = delete;

  // Runs `body` on every rank of `point`'s world. `sim` (may be null) receives the simulator's report.
  void run(const PointConfig& point, const std::function<void(RankContext&)>& body, SimReport* sim);
  // The number of ranks `point` runs on (mpi, nccl: the job's size, starting the job if needed).
  int world_size(const PointConfig& point);

  // Starts the job of an mpi or nccl point if none is running (collective over the job): rank r on
  // host r / devices_per_host of the point's cluster, or on the node MPI placed it on without a
  // cluster. ConfigError when the runtime was not built, or when a job of another runtime or host
  // layout already runs.
  void start_job(const PointConfig& point);
  // Whether this process writes results: always, except on ranks of a job other than 0.
  bool is_writer() const;
  // In a job: rank 0's `bytes` on every rank (so that all agree on which points to skip). Otherwise
  // `bytes` itself.
  std::vector<uint8_t> share_from_writer(std::vector<uint8_t> bytes);

 private:
  struct Job;
  int* argc_;
  char*** argv_;
  std::unique_ptr<Job> job_;
};

// The rank mpirun gave this process (from Open MPI's or PMIx's environment), or 0 when not launched by
// mpirun. For deciding, before MPI starts, which process prints errors.
int launched_rank();

}  // namespace bagua::experiments
