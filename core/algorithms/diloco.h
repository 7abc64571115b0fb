// diloco — DiLoCo, Distributed Low-Communication training (Douillard et al. 2023, "DiLoCo: Distributed
// Low-Communication Training of Language Models", arXiv:2311.08105, Algorithm 1): local SGD with an
// outer optimizer. Every rank takes H inner steps with AdamW (its own, as the paper's InnerOpt: the
// config's optimizer is not used, as qadam owns its Adam); then the ranks average their parameter
// change since the last round (C_FP_S, bucket by bucket) and every rank applies that average, as an
// outer gradient, with SGD and Nesterov momentum.
//
// Terms (the paper's Algorithm 1, k ranks):
//   global           theta, the outer parameters, equal on every rank (init: the initial weights)
//   weights          theta_i, rank i's parameters after its H inner steps (the trainer's weights)
//   inner step       theta_i := AdamW(theta_i, g_i) with inner_lr and inner_weight_decay
//                    (core/optim/optimizers.h), g_i rank i's batch gradient
//   outer gradient   Delta := (1/k) sum_i (theta - theta_i), the averaged parameter change
//   outer step       theta := OuterOpt(theta, Delta): PyTorch's SGD with Nesterov momentum
//                    (core/optim/optimizers.h), outer_lr and outer_momentum
// after which every rank restarts its inner steps from theta. The inner optimizer keeps its state
// (AdamW's moments) across rounds: Algorithm 1 resets only the parameters.
//
// Every rank computes the same outer step from the same averaged Delta, so the replicas agree after each
// round; with outer_lr 1 and outer_momentum 0 the outer step is theta := theta - Delta, the average of
// the theta_i: local SGD with period H (up to float rounding).
#pragma once

#include <memory>

#include "core/algorithms/algorithm.h"
#include "core/primitives/centralized.h"
#include "core/primitives/communicator.h"

namespace bagua {

class Diloco final : public Algorithm {
 public:
  Diloco(const Params& params, const AlgorithmDeps& deps);
  static ParamSchema schema();

  std::string name() const override { return "diloco"; }
  void init(TrainState& s) override;
  void apply_update(TrainState& s) override;
  Work update_cost(const TrainState& s) const override;
  void after_update(TrainState& s) override;

 private:
  int64_t inner_steps_;
  double outer_lr_;
  double outer_momentum_;
  bool hierarchical_;
  collectives::IntraHostOptions intra_host_;  // `intra_host`
  double inner_lr_;
  double inner_weight_decay_;
  const OptimizerRegistry& optimizers_;
  std::unique_ptr<Optimizer> inner_;
  std::unique_ptr<Communicator> communicator_;
  std::unique_ptr<CentralizedFullPrecision> primitive_;
  std::unique_ptr<Optimizer> outer_;
  Buffer global_;
  Buffer outer_gradient_;
};

}  // namespace bagua
