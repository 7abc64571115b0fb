// The per-rank trainer: data -> forward -> backward layer by layer (marking gradients ready, so that
// buckets are communicated while earlier layers still compute) -> algorithm -> optimizer.
//
// Time accounting (per iteration, on the compute stream):
//   iteration time  from the start of before_forward to the end of after_update
//   compute         clock time of the forward, backward and update phases, less the algorithm's hooks
//                   during backward (simulator: the modelled compute charged; real runtimes: the real
//                   arithmetic and any emulated profile compute)
//   exposed comm    iteration time - compute: time the compute stream waited for communication
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/algorithms/algorithm.h"

namespace bagua {

struct TrainOptions {
  int64_t iterations = 100;
  // Evaluate the full-data loss (and the test accuracy, where the workload has a test set) of this
  // rank's weights every `eval_interval` iterations (0: only after the last one). Evaluation is real
  // arithmetic outside simulated time.
  int64_t eval_interval = 0;
  // Bucket budget; Bagua's default bucket size is 10 MiB (bagua/torch_api/data_parallel, bucket_cap).
  Bytes bucket_bytes{10 << 20};
  // false: hand buckets to the algorithm only after the whole backward pass (no overlap) — the
  // baseline that shows what overlap buys.
  bool overlap = true;
  // Keep a copy of this rank's weights at every evaluation (TrainResult::evaluated_weights), for the
  // averaged model's test accuracy (core/trainer/averaged_model.h); set where the model has a test set.
  bool keep_evaluated_weights = false;
};

struct IterationRecord;

// Called on the rank's compute stream after each iteration's record is complete (its full loss too,
// when evaluated), before the divergence check; may be empty. For progress lines and for keeping the
// records of a run that stops early.
using IterationObserver = std::function<void(const IterationRecord&)>;

struct IterationRecord {
  int64_t iteration = 0;
  Time begin;
  Time end;
  Time compute;  // charged on the compute stream during this iteration
  double loss = std::numeric_limits<double>::quiet_NaN();       // this rank's batch loss
  double full_loss = std::numeric_limits<double>::quiet_NaN();  // full-data loss, when evaluated
  // Test-set accuracy of this rank's weights, evaluated with the full loss (NaN without a test set).
  double test_accuracy = std::numeric_limits<double>::quiet_NaN();
};

// This rank's weights as evaluated after `iteration` (the very values its full loss and test accuracy
// were computed from).
struct EvaluatedWeights {
  int64_t iteration = 0;
  std::vector<float> weights;
};

struct TrainResult {
  int rank = 0;
  std::vector<IterationRecord> iterations;
  Time finish;  // when finish() returned
  // TrainOptions::keep_evaluated_weights: one entry per evaluation, in iteration order; else empty.
  std::vector<EvaluatedWeights> evaluated_weights;
};

// Divergence: a materialized model's batch loss that is NaN or infinite, or its full loss where
// evaluated that is infinite (NaN there: the model has none). The rank that sees it stops training by
// throwing Diverged from train(): no further iteration runs on it, and its world ends the run on every
// rank (the simulator reports the earliest failure in (virtual time, rank) order: deterministic).
// Profile workloads have no loss (NaN by design) and never diverge.
class Diverged : public std::runtime_error {
 public:
  Diverged(int rank, int64_t iteration, const char* which, double value);
  int rank() const { return rank_; }
  int64_t iteration() const { return iteration_; }

 private:
  int rank_;
  int64_t iteration_;
};

TrainResult train(RankContext& ctx, Model& model, Optimizer& optimizer, Algorithm& algorithm,
                  const TrainOptions& options, const IterationObserver& observer = {});

// A service rank's part of a run (core/services.h): `algorithm`'s serve() for the buckets the workers'
// train() makes of `model`'s layers (options.bucket_bytes), over options.iterations. `ctx` is the
// service rank's own context, whose transport is the job group of `workers` workers and the service
// ranks after them. `model` only gives its layers and whether it is materialized.
void serve(RankContext& ctx, int workers, const Model& model, Algorithm& algorithm,
           const TrainOptions& options);

}  // namespace bagua
