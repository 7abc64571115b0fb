// A sweep of simulated points spread over the processes of an MPI job:
//
//   mpirun -np 4 bagua run SWEEP.json        (every point "runtime": "sim")
//
// Terms:
//   farm    rank 0 of the job: the one process that writes results (the same result store, resumable,
//           with the same progress lines as a run alone); it runs points on its own threads too
//   worker  every other rank: it runs the points rank 0 hands it and sends their files back
//   lane    one point at a time: a thread of rank 0 (it runs points itself), or one of a worker's
//           threads (the farm's lane for it only sends the order and waits for the answer); the
//           runner takes the next point on whichever lane is free, so long and short points balance
//   order   a point's sweep index and id, from the farm to one lane of a worker; a stop order ends
//           the lane
//   answer  the point's output (metrics, summary, files) or its error, from the lane back to rank 0
//
// When: this process was started by a launcher (mpirun; or srun with PMIx) for a job of two processes
// or more, and every point of the run is simulated ("sim", a virtual-time runtime). Points of a job
// runtime (mpi, nccl) are one job as before; points of "threads" (real time, in one process) cannot
// be spread and are refused under a job of several processes.
//
// Lanes: every process runs --jobs points at once; without --jobs, the node's cores shared among the
// job's processes on that node (at least 1 each).
//
// Results: rank 0 writes each point's folder as soon as its answer arrives and its row in sweep order
// (experiments/result_store.h): the files and the rows are byte for byte those of a run alone. A process
// that dies ends the whole job (Open MPI's mpirun kills the others when one exits abnormally); what rank 0
// had written stays, rows that waited for an earlier point are made again from the folders, and a rerun
// of the same command runs only the points that were in flight.
#pragma once

#include <iosfwd>
#include <optional>

#include "experiments/backend.h"
#include "experiments/components.h"
#include "experiments/config.h"
#include "experiments/runner.h"
#include "experiments/runtimes.h"

namespace bagua::experiments {

// Whether this run of `e` is to be spread over the job's processes (see "When" above): false alone or
// in a job of one process, or for a job runtime's points. ConfigError for in-process real-time points
// under a job of several processes.
bool spread_over_job(const Experiment& e, const RuntimeRegistry& runtimes);

// How `bagua run` went on this process: the number of failed points, or a config error's message.
// Workers end with nothing to report (status 0) once rank 0 stops them: the job's exit status is rank
// 0's (mpirun returns a process's non-zero status), and a worker ending non-zero first would make
// mpirun abort rank 0 before it prints its last lines.
struct SpreadOutcome {
  int failed = 0;
  std::optional<std::string> config_error;
};

// Runs `e` over the job `channel` belongs to: run_experiment() with a farm as its executor on rank 0
// (`options.jobs` lanes of its own), workers serving their lanes until rank 0's stop order (`options.jobs`
// lanes each).
SpreadOutcome run_spread(const Experiment& e, const Components& c, Backends& backends,
                         const RunOptions& options, JobChannel& channel, std::ostream& out,
                         std::ostream& progress);

// The default of --jobs in a job: the node's cores shared among the job's processes on it.
int default_jobs_in_job(const JobChannel& channel);

}  // namespace bagua::experiments
