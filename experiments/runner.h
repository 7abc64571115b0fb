// Running an experiment: every point's world on its backend, each rank training with the components the
// config names, every rank's results gathered to rank 0 over the transport, files written per point.
//
// Per rank (the same code on every backend):
//   model     = workload.make_model(rank)                 (the workload is made once per process)
//   optimizer = optimizers.create(name, params, n, a view of the model's space)
//   algorithm = algorithms.create(name, params, {compressors, optimizers})
//   result    = train(ctx, model, optimizer, algorithm, schedule)
//   then every rank sends its TrainResult, as bytes, to rank 0 over a subgroup of all ranks (after
//   training: the simulated time this takes is not part of any iteration).
//
// Before anything is written, check_points() runs every distinct (world, workload, algorithm,
// optimizer) of the experiment with zero iterations: a component that cannot use the world (an
// algorithm's init refusing the world size, say) fails there, as a ConfigError naming the point.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/trainer/trainer.h"
#include "experiments/backend.h"
#include "experiments/components.h"
#include "experiments/config.h"
#include "experiments/results.h"

namespace bagua::experiments {

// Everything a point's run produced on the writing process.
struct PointOutput {
  PointMetrics metrics;
  Json summary;
  // The point folder's files, in writing order (summary.json last).
  std::vector<std::pair<std::string, std::string>> files;
  std::optional<PointFailure> failure;  // a diverged (or, from run_experiment, failed) point
};

// Where the points of a run whose every point is simulated are computed, when not on this process's
// own threads: under mpirun, on the job's processes (experiments/distribute.h). The runner takes the
// next point on any free lane, as it does on its threads, and writes what the lane returns.
class PointExecutor {
 public:
  virtual ~PointExecutor() = default;
  // How many points run at once.
  virtual int lanes() const = 0;
  // Runs `point` on lane `lane` (one call at a time per lane) and returns its output; throws what
  // run_point would.
  virtual PointOutput run(int lane, const PointConfig& point) = 0;
};

struct RunOptions {
  int jobs = 1;        // simulated points run in parallel on this many threads
  bool quiet = false;  // no progress lines
  // A folder of another experiment is moved aside (ExperimentDir) instead of refused.
  bool fresh = false;
  // While a point runs, a progress line at most this often (seconds of wall time); <= 0: none.
  double progress_interval_s = 5;
  // The points to run (--point, --where); empty: all. The folder still belongs to the whole experiment.
  std::function<bool(const PointConfig&)> select;
  // Not null: simulated points are computed there, on its lanes (instead of `jobs` threads).
  PointExecutor* executor = nullptr;
};

// Makes the point's workload (a profile from its file, otherwise from the registry) for `world_size`
// ranks.
std::unique_ptr<Workload> make_workload(const PointConfig& point, const Components& c, int world_size);

// Trains `point` on its backend for `iterations` (the schedule's when negative). Returns every rank's
// result, in rank order, on the writing process (empty elsewhere), and the workload's optimal loss.
struct RanksRun {
  std::vector<TrainResult> ranks;
  double optimal_loss = 0;
  // Per iteration, the averaged model's test accuracy (core/trainer/averaged_model.h; NaN where not
  // evaluated); empty for a workload without a test set and for a diverged run.
  std::vector<double> averaged_model_accuracy;
  std::optional<RunReport> report;  // the world's, when its runtime models virtual time
  // Set when a rank diverged (core/trainer/trainer.h Diverged): `ranks` then holds every rank's
  // records as far as it got (in a job, only this process's rank), unequal in length.
  std::optional<PointFailure> diverged;
  std::string trace;                // output.trace on a real-time runtime: rank 0's gathered timeline
};
// `observer` sees rank 0's records as they are made. `gather` false: the ranks' results are not
// gathered to rank 0 (`ranks` stays empty), for a trial run whose results nobody reads (check_points).
RanksRun run_ranks(const PointConfig& point, const Components& c, Backends& backends,
                   int64_t iterations = -1, const IterationObserver& observer = {}, bool gather = true);

// Runs one point and makes its files. A diverged point is no exception: its output has `failure`
// set, and metrics and iterations.csv for the iterations before the divergence (experiments/results.h).
PointOutput run_point(const PointConfig& point, const Components& c, Backends& backends,
                      const IterationObserver& observer = {});

// The dry run described above. Throws ConfigError: "<message> (point p001-..., <swept values>)".
void check_points(const Experiment& e, const Components& c, Backends& backends);

// Runs the experiment into e.output_dir, resuming a previous run of it; prints progress (and the wall
// time) on `progress` and a summary on `out`. A point that fails or diverges is recorded so (its
// summary.json and row, experiments/results.h) and the other points run; a rerun runs again only the
// points without an ok result. Returns the number of points that failed or diverged.
//
// Before any point runs, the writer claims e.output_dir for the experiment (ExperimentDir,
// experiments/result_store.h: created, writable, locked, of this experiment's config hash).
int run_experiment(const Experiment& e, const Components& c, Backends& backends,
                   const RunOptions& options, std::ostream& out, std::ostream& progress);

// Writes `line` and its '\n' to `out` in one piece, then flushes. Every progress and error line of
// `bagua` goes through here: under mpirun, stderr is forwarded in the pieces it was written in, and
// mpirun's own report of a failed job could otherwise land inside a line.
void write_line(std::ostream& out, const std::string& line);

}  // namespace bagua::experiments
