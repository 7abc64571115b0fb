// What a point's run produces: metrics computed from every rank's TrainResult, and their files.
//
// iterations.csv, one row per iteration:
//   iteration       from 0
//   time_s          end of the iteration on the slowest rank at that iteration (latest end over ranks)
//   iteration_s     the iteration's duration (begin of before_forward to end of after_update) on the
//                   slowest rank of the run (the rank whose last iteration ends last; ties: the
//                   lowest rank)
//   compute_s       the compute that rank charged during the iteration
//   exposed_comm_s  iteration_s - compute_s: the time its compute stream waited for communication
//   loss            mean over ranks of the batch loss (empty when no rank has one: profile workloads)
//   full_loss       mean over ranks of the full-data loss, empty where not evaluated
//   test_accuracy   mean over ranks of the test-set accuracy of each rank's weights, evaluated with the
//                   full loss; empty where not evaluated or the workload has no test set
//   test_accuracy_min, test_accuracy_max   its smallest and largest value over ranks (equal for
//                   algorithms whose replicas agree; the spread of the decentralized ones)
//   test_accuracy_avg_model   the test-set accuracy of the averaged model, the mean of the ranks'
//                   weights at that evaluation (core/trainer/averaged_model.h): where the replicas
//                   agree, their accuracy bit for bit (test_accuracy_min = _max); empty where
//                   test_accuracy is
//
// summary.json: the point id, its swept values, its resolved config, and
//   world_size, iterations, slowest_rank,
//   time_per_iteration_s          (end of last - end of first iteration) / (iterations - 1) on the
//                                 slowest rank; with one iteration, its duration; with
//                                 schedule.measured_from k: (end of last - end of iteration k - 1) /
//                                 (iterations - k), the warm-up iterations before k left out
//   compute_per_iteration_s       mean compute_s over the same iterations (2nd to last; with one
//                                 iteration, the first; from k with measured_from)
//   exposed_comm_per_iteration_s  time_per_iteration_s - compute_per_iteration_s
//   final_loss, final_full_loss   the last row's loss and full_loss (null when absent)
//   optimal_loss                  the workload's optimal full loss when known in closed form, else null
//   final_test_accuracy           the last row's test_accuracy (null when absent)
//   final_test_accuracy_avg_model the last row's test_accuracy_avg_model (null when absent)
//   samples_per_s                 world_size x batch_size / time_per_iteration_s
//   status                        "ok", "diverged" or "failed" (PointStatus; a summary without it,
//                                 written before statuses existed, is "ok")
//   error                         diverged or failed: one line, e.g. "diverged: loss inf at
//                                 iteration 12 on rank 3"
//   diverged_at_iteration         diverged: the iteration whose loss was NaN or infinite
// A diverged point's metrics cover the iterations before the first one at which any rank's loss is not
// finite (so iterations.csv has no empty loss cell where a loss exists); with none, they are null. A
// failed point has no metrics (null) and no iterations.csv.
//
// results.csv, one row per point (experiments/result_store.h): point, each swept value (one column per
// axis, named by its path), runtime, world_size, algorithm, time_per_iteration_s,
// compute_per_iteration_s, exposed_comm_per_iteration_s, final_loss, final_full_loss, samples_per_s,
// status, error. (A results.csv written before statuses existed lacks the last two columns and keeps
// its own columns: experiments/result_store.h.) A row is made from summary.json alone, so that a resumed run can add the row of a point that finished
// before it was interrupted.
//
// Numbers are written as the shortest decimal text that reads back exactly; NaN as an empty field (CSV)
// or null (JSON). Nothing here depends on the wall clock: the same run gives the same bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/trainer/trainer.h"
#include "experiments/config.h"
#include "experiments/json_util.h"

namespace bagua::experiments {

struct IterationRow {
  int64_t iteration = 0;
  double time_s = 0;
  double iteration_s = 0;
  double compute_s = 0;
  double exposed_comm_s = 0;
  double loss = 0;
  double full_loss = 0;
  double test_accuracy = 0;
  double test_accuracy_min = 0;
  double test_accuracy_max = 0;
  double test_accuracy_avg_model = 0;
};

enum class PointStatus : uint8_t { kOk, kDiverged, kFailed };
std::string to_string(PointStatus s);
// The status named by `text` ("ok", "diverged", "failed"); nullopt otherwise.
std::optional<PointStatus> parse_point_status(const std::string& text);

// How a point's run ended when it did not end well.
struct PointFailure {
  PointStatus status = PointStatus::kFailed;
  std::string error;                   // one line
  int64_t diverged_at_iteration = -1;  // kDiverged only
};

struct PointMetrics {
  int world_size = 0;
  int64_t iterations = 0;
  int slowest_rank = 0;
  double time_per_iteration_s = 0;
  double compute_per_iteration_s = 0;
  double exposed_comm_per_iteration_s = 0;
  double final_loss = 0;
  double final_full_loss = 0;
  double final_test_accuracy = 0;
  double final_test_accuracy_avg_model = 0;
  double optimal_loss = 0;
  double samples_per_s = 0;
  std::vector<IterationRow> rows;
};

// `ranks[r]` is rank r's result; every rank ran the same number (>= 1) of iterations. The per-iteration
// figures measure iterations measured_from to the last: from the end of iteration measured_from - 1 (the
// begin of iteration 0 when measured_from is 0) to the end of the last; -1: 1, or 0 with one iteration.
// `averaged_model_accuracy`: per iteration, the averaged model's test accuracy (RanksRun's); empty:
// none (NaN).
PointMetrics compute_metrics(const std::vector<TrainResult>& ranks, int64_t batch_size,
                             double optimal_loss, int64_t measured_from = -1,
                             std::span<const double> averaged_model_accuracy = {});

// The number of leading iterations every rank recorded with finite losses (a batch loss that is NaN
// counts as finite when every rank's is: profile workloads have none): what a diverged point's metrics
// are computed from, after truncating every rank's records to it.
size_t finite_prefix(const std::vector<TrainResult>& ranks);

std::string iterations_csv(const PointMetrics& m);
// `failure` null: an ok point. A failed point's `m` is ignored; a diverged one's has zero iterations
// when no iteration preceded the divergence (its metrics are then null).
Json summary_json(const PointConfig& point, const PointMetrics& m,
                  const PointFailure* failure = nullptr);
// The status of a summary.json (is_summary_of() holds); "ok" when it has none.
PointStatus summary_status(const Json& summary);

// The experiment's config hash: 16 hex digits of the FNV-1a 64-bit hash of the compact JSON text of
// [its axes, every point's resolved config] (output.dir is not part of a resolved config: where results
// go does not change them). What DIR/experiment.json records (experiments/result_store.h).
std::string config_hash(const Experiment& e);

std::vector<std::string> results_header(const std::vector<std::string>& axes);
// Whether `summary` is a complete summary.json of point `id` (a resumed run reruns a point otherwise).
bool is_summary_of(const Json& summary, const std::string& id);
// The results.csv row of a point, from its summary.json.
std::vector<std::string> results_row(const Json& summary, const std::vector<std::string>& axes);

// One CSV line (with its '\n'); fields with a comma, a quote or a line break are quoted.
std::string csv_line(const std::vector<std::string>& fields);
// A number for CSV: shortest exact text; NaN -> "".
std::string csv_number(double x);

// TrainResult to bytes and back (native byte order: every rank of a job runs on one kind of machine).
std::vector<uint8_t> serialize(const TrainResult& r);
TrainResult deserialize(std::span<const uint8_t> bytes);

}  // namespace bagua::experiments
