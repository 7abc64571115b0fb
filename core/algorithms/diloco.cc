#include "core/algorithms/diloco.h"

#include "core/algorithms/collective_params.h"
#include "core/algorithms/tags.h"
#include "core/ops.h"
#include "core/optim/optimizers.h"

namespace bagua {

ParamSchema Diloco::schema() {
  ParamSchema s;
  // H = 500 inner steps, outer learning rate 0.7 and Nesterov momentum 0.9: the paper's main setting
  // (Douillard et al. 2023, arXiv:2311.08105, Sec. 3; its abstract: 8 workers "communicating 500
  // times less").
  s.add_int("inner_steps", 500, "inner optimizer steps between two outer steps (H)", 1);
  s.add_double("outer_lr", 0.7, "learning rate of the outer Nesterov step", 0.0, std::nullopt,
               /*min_exclusive=*/true);
  s.add_double("outer_momentum", 0.9, "momentum of the outer Nesterov step", 0.0, 1.0);
  // hierarchical false: as local_sgd, the other model-averaging algorithm (core/algorithms/local_sgd.h).
  s.add_bool("hierarchical", false,
             "intra-host reduce, allreduce among host leaders, intra-host broadcast");
  add_intra_host_param(s, collectives::IntraHostAlgo::kAuto);
  // AdamW's defaults in PyTorch (torch.optim.AdamW: lr 1e-3, weight_decay 1e-2); its betas and eps
  // stay PyTorch's (0.9, 0.999, 1e-8).
  s.add_double("inner_lr", 1e-3, "learning rate of the inner AdamW steps", 0.0, std::nullopt,
               /*min_exclusive=*/true);
  s.add_double("inner_weight_decay", 1e-2, "decoupled weight decay of the inner AdamW steps", 0.0);
  return s;
}

Diloco::Diloco(const Params& params, const AlgorithmDeps& deps)
    : inner_steps_(params.get_int("inner_steps")),
      outer_lr_(params.get_double("outer_lr")),
      outer_momentum_(params.get_double("outer_momentum")),
      hierarchical_(params.get_bool("hierarchical")),
      intra_host_(intra_host_options(params)),
      inner_lr_(params.get_double("inner_lr")),
      inner_weight_decay_(params.get_double("inner_weight_decay")),
      optimizers_(deps.optimizers) {}

void Diloco::init(TrainState& s) {
  communicator_ = std::make_unique<Communicator>(s.ctx.transport(), hierarchical_, intra_host_);
  primitive_ = std::make_unique<CentralizedFullPrecision>(
      s.ctx, *communicator_, s.weights, CentralizedFullPrecisionOptions{/*average=*/true});
  const size_t n = s.weights.count();
  const std::string inner = "adamw";
  inner_ = optimizers_.create(
      inner,
      Params(optimizers_.at(inner).schema, {{"lr", inner_lr_}, {"weight_decay", inner_weight_decay_}}),
      n, s.weights);
  // Nesterov with dampening 0, as torch.optim.SGD(nesterov=True) (what the paper's OuterOpt is).
  const Params outer(momentum_schema(),
                     {{"lr", outer_lr_}, {"momentum", outer_momentum_}, {"nesterov", true}});
  outer_ = make_momentum(outer, n, s.weights);
  global_ = Buffer::like(s.weights, s.weights.dtype(), n);
  outer_gradient_ = Buffer::like(s.weights, s.weights.dtype(), n);
  copy(global_, s.weights);  // theta := the initial weights, equal on every rank
}

void Diloco::apply_update(TrainState& s) {
  inner_->step(s.weights, s.grads);
}

Work Diloco::update_cost(const TrainState& s) const {
  return inner_->cost(s.weights.count());
}

void Diloco::after_update(TrainState& s) {
  if ((s.step + 1) % inner_steps_ != 0) return;
  const size_t n = s.weights.count();
  const size_t element = size_of(s.weights.dtype());
  // Delta_i := theta - theta_i: read two vectors, write one.
  copy(outer_gradient_, global_);
  axpy(outer_gradient_, -1.0, s.weights);
  s.ctx.clock().compute(
      Work{static_cast<double>(n), Bytes(static_cast<int64_t>(3 * n * element)), Time::zero()});
  // Delta := (1/k) sum_i Delta_i, bucket by bucket.
  for (const Bucket& b : s.buckets) {
    s.comm.submit([this, &s, delta = outer_gradient_.view().slice(b.offset, b.count), index = b.index] {
      TraceScope scope(s.ctx, "average outer gradient bucket " + std::to_string(index), "comm", 1);
      primitive_->allreduce(delta, tags::bucket(tags::kWeights, index));
    });
  }
  s.comm.synchronize();
  // theta := OuterOpt(theta, Delta); theta_i := theta.
  outer_->step(global_, outer_gradient_);
  s.ctx.clock().compute(outer_->cost(n));
  copy(s.weights, global_);
  s.ctx.clock().compute(Work{0, Bytes(static_cast<int64_t>(2 * n * element)), Time::zero()});
}

}  // namespace bagua
