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

struct RunOptions {
  int jobs = 1;        // simulated points run in parallel on this many threads
  bool quiet = false;  // no progress lines
};

// Everything a point's run produced on the writing process.
struct PointOutput {
  PointMetrics metrics;
  Json summary;
  // The point folder's files, in writing order (summary.json last).
  std::vector<std::pair<std::string, std::string>> files;
};

// Makes the point's workload (a profile from its file, otherwise from the registry) for `world_size`
// ranks.
std::unique_ptr<Workload> make_workload(const PointConfig& point, const Components& c, int world_size);

// Trains `point` on its backend for `iterations` (the schedule's when negative). Returns every rank's
// result, in rank order, on the writing process (empty elsewhere), and the workload's optimal loss.
struct RanksRun {
  std::vector<TrainResult> ranks;
  double optimal_loss = 0;
  std::optional<RunReport> report;  // the world's, when its runtime models virtual time
  std::string trace;                // output.trace on a real-time runtime: rank 0's gathered timeline
};
RanksRun run_ranks(const PointConfig& point, const Components& c, Backends& backends,
                   int64_t iterations = -1);

// Runs one point and makes its files.
PointOutput run_point(const PointConfig& point, const Components& c, Backends& backends);

// The dry run described above. Throws ConfigError: "<message> (point p001-..., <swept values>)".
void check_points(const Experiment& e, const Components& c, Backends& backends);

// Runs the experiment into e.output_dir, resuming a previous run of it; prints progress (and the wall
// time) on `progress` and a summary on `out`. Returns the number of points that failed.
int run_experiment(const Experiment& e, const Components& c, Backends& backends,
                   const RunOptions& options, std::ostream& out, std::ostream& progress);

// Writes `line` and its '\n' to `out` in one piece, then flushes. Every progress and error line of
// `bagua` goes through here: under mpirun, stderr is forwarded in the pieces it was written in, and
// mpirun's own report of a failed job could otherwise land inside a line.
void write_line(std::ostream& out, const std::string& line);

}  // namespace bagua::experiments
