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
#include <limits>
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
};

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

struct TrainResult {
  int rank = 0;
  std::vector<IterationRecord> iterations;
  Time finish;  // when finish() returned
};

TrainResult train(RankContext& ctx, Model& model, Optimizer& optimizer, Algorithm& algorithm,
                  const TrainOptions& options);

}  // namespace bagua
