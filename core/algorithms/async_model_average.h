// async_model_average — Bagua's AsyncModelAverageAlgorithm (bagua/torch_api/algorithms/
// async_model_average.py): after a warm-up of gradient allreduce, every rank takes local optimizer
// steps while a background loop on its communication stream averages the weights with all ranks every
// sync_interval_ms (core/primitives/async_model_average.h).
//
// Hooks. Warm-up (step < warmup_steps, Bagua's step_id <= warmup_steps): exactly gradient_allreduce
// (C_FP_S, flat, average: Bagua's centralized op with hierarchical=False). Afterwards:
//   before_forward   start the loop (once; Bagua's forward pre-hook submits _run_async_loop) and lock
//                    the weights against the loop's writes for forward and backward (_lock_model)
//   after_backward   unlock them (_unlock_model), applying an average that arrived meanwhile
//   apply_update     the trainer's optimizer with the local gradient, the weights locked
//   finish           stop the loop: every rank's loop leaves at the same round (Bagua's abort)
//
// allreduce: the algorithm of the warm-up's and of the loop's allreduces ("nccl" is what Bagua runs:
// NCCL's allreduce on its single communicator; the default "ring" is the bulk-synchronous ring).
//
// sync_interval_ms >= 1: Bagua starts no loop at all for 0, and rounds back to back would never let
// virtual time pass on a one-rank world (its allreduces send nothing).
#pragma once

#include <memory>

#include "core/algorithms/algorithm.h"
#include "core/primitives/async_model_average.h"
#include "core/primitives/centralized.h"
#include "core/primitives/communicator.h"

namespace bagua {

class AsyncModelAverage final : public Algorithm {
 public:
  explicit AsyncModelAverage(const Params& params);
  static ParamSchema schema();

  std::string name() const override { return "async_model_average"; }
  void init(TrainState& s) override;
  void before_forward(TrainState& s) override;
  void on_bucket_ready(TrainState& s, const Bucket& b) override;
  void after_backward(TrainState& s) override;
  void apply_update(TrainState& s) override;
  void read_weights(TrainState& s, const std::function<void()>& read) override;
  void finish(TrainState& s) override;

  // Completed averaging rounds of this rank's loop (for tests and reports).
  int64_t rounds() const { return averager_ ? averager_->rounds() : 0; }

 private:
  bool warming_up(const TrainState& s) const { return s.step < warmup_steps_; }

  Time interval_;
  int64_t warmup_steps_;
  collectives::AllreduceAlgo algo_;  // `allreduce`: the warm-up's and the loop's
  collectives::NcclProtocolOption protocol_;
  std::unique_ptr<Communicator> communicator_;  // flat: Bagua's asynchronous op is never hierarchical
  std::unique_ptr<CentralizedFullPrecision> warmup_;
  std::unique_ptr<AsyncModelAverager> averager_;
};

}  // namespace bagua
