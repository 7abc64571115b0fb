// qadam — Bagua's QAdam (bagua/torch_api/algorithms/q_adam.py: QAdamOptimizer, QAdamAlgorithm): Adam
// whose communication, after a warm-up, is the compressed average of the momentum instead of the
// full-precision average of the gradient.
//
// Terms. t the step count from 1 (t = trainer step + 1); g the local gradient; m the momentum
// (exp_avg); v the second moment (exp_avg_sq); beta1, beta2, eps, lr Adam's.
//   warm-up (t <= warmup_steps)   each bucket of g is averaged in full precision (C_FP_S, flat, as
//        Bagua's centralized op with hierarchical=False) as soon as it is ready; then
//        m := beta1 m + (1 - beta1) g,  v := beta2 v + (1 - beta2) g^2   with the averaged g
//   compressed (t > warmup_steps) v is frozen. As soon as a bucket is ready, its momentum is
//        updated from the *local* gradient, m := beta1 m + (1 - beta1) g (Bagua's calculate_momentum
//        python op), and averaged over ranks with C_LP_S (scatter-reduce-gather, hierarchical by
//        default)
//   update (both phases)          w := w - (lr / (1 - beta1^t)) m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
//        (Bagua's step(): bias corrections keep counting t while v is frozen)
// During the warm-up this is exactly Adam on the averaged gradient.
//
// Variants (`compressor`): minmax_uint8 — Bagua's QAdam (8 bits per element); sign — QAdam-1bit, the
// 1-bit variant benchmarked in the BAGUA paper, with error feedback at every compression site as 1-bit
// Adam does (Tang et al., "1-bit Adam", ICML 2021).
//
// One deviation from q_adam.py: there the step t = warmup_steps still averages the gradient in full
// precision but skips the moment update (`step_id < warmup_steps` in step() against the switch of the
// communication at step_id == warmup_steps); here all warmup_steps warm-up steps are full Adam steps.
// Bagua's weight_decay is declared but never applied in its step(); it is left out.
//
// The algorithm owns its update (apply_update): the trainer's optimizer is not used. The arithmetic of
// the update runs on host memory (nothing on meta buffers; device memory is a ConfigError, as for the
// adam optimizer).
#pragma once

#include <memory>
#include <vector>

#include "core/algorithms/algorithm.h"
#include "core/primitives/centralized.h"
#include "core/primitives/centralized_low_precision.h"
#include "core/primitives/communicator.h"

namespace bagua {

class QAdam final : public Algorithm {
 public:
  QAdam(const Params& params, const AlgorithmDeps& deps);
  static ParamSchema schema(const CompressorRegistry& compressors);

  std::string name() const override { return "qadam"; }
  void init(TrainState& s) override;
  void on_bucket_ready(TrainState& s, const Bucket& b) override;
  void after_backward(TrainState& s) override;
  void apply_update(TrainState& s) override;
  Work update_cost(const TrainState& s) const override;

 private:
  bool warming_up(const TrainState& s) const { return s.step + 1 <= warmup_steps_; }

  double lr_;
  int64_t warmup_steps_;
  double beta1_;
  double beta2_;
  double eps_;
  bool hierarchical_;
  collectives::IntraHostOptions intra_host_;         // `intra_host`
  collectives::AllreduceAlgo warmup_algo_;           // `allreduce` (the warm-up's)
  collectives::NcclProtocolOption warmup_protocol_;  // `protocol` (the warm-up's, under "nccl")
  collectives::AlltoallAlgo alltoall_;               // `alltoall`
  collectives::AllgatherAlgo allgather_;             // `allgather`
  CompressorFactory factory_;
  Buffer m_;
  Buffer v_;
  std::unique_ptr<Communicator> flat_;  // the warm-up's, flat as in Bagua
  std::unique_ptr<CentralizedFullPrecision> full_precision_;
  std::unique_ptr<Communicator> communicator_;
  std::vector<std::unique_ptr<CentralizedLowPrecision>> low_precision_;  // per bucket, over m
};

}  // namespace bagua
