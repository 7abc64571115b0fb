// Where a point's ranks run: the runtime the point names, its World made through the runtime registry
// (experiments/runtimes.h), which is the only place that names a runtime.
//
// A job runtime (mpi, nccl) makes this process part of a job: the job's world is started once, on the
// first point that needs it, and ended when the Backends go away (MPI cannot start twice in a process,
// so one run of `bagua` uses one job runtime, with one host layout). Only the job's rank 0 writes
// results (is_writer()). An in-process runtime (sim, threads) gets a new world for every run.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/world.h"
#include "experiments/config.h"
#include "experiments/runtimes.h"

namespace bagua::experiments {

class Backends {
 public:
  // Worlds are made by `runtimes`, which must outlive the Backends; argc/argv are handed to the job
  // runtime's world (MPI_Init) when a job starts.
  Backends(const RuntimeRegistry& runtimes, int* argc, char*** argv);
  ~Backends();
  Backends(const Backends&) = delete;
  Backends& operator=(const Backends&) = delete;

  // Runs `body` on every rank of `point`'s world. `report` (may be null) receives the world's report
  // (RunReport, core/world.h) when its runtime models virtual time, and is left empty otherwise.
  void run(const PointConfig& point, const std::function<void(RankContext&)>& body,
           std::optional<RunReport>* report);
  // The number of ranks `point` runs on (a job runtime: the job's size, starting the job if needed).
  int world_size(const PointConfig& point);
  // What the registry knows of `point`'s runtime.
  const RuntimeTraits& traits(const PointConfig& point) const;

  // Starts the job of a job runtime's point if none is running (collective over the job): rank r on
  // host r / devices_per_host of the point's cluster, or on the node the launcher placed it on without
  // a cluster. ConfigError when the runtime was not built, or when a job of another runtime or host
  // layout already runs.
  void start_job(const PointConfig& point);
  // Whether this process writes results: always, except on ranks of a job other than 0.
  bool is_writer() const;
  // In a job: rank 0's `bytes` on every rank (so that all agree on which points to skip). Otherwise
  // `bytes` itself.
  std::vector<uint8_t> share_from_writer(std::vector<uint8_t> bytes);

 private:
  struct Job;
  const RuntimeRegistry& runtimes_;
  int* argc_;
  char*** argv_;
  std::unique_ptr<Job> job_;
};

// The rank mpirun gave this process (from Open MPI's or PMIx's environment), or 0 when not launched by
// mpirun. For deciding, before MPI starts, which process prints errors.
int launched_rank();

}  // namespace bagua::experiments
