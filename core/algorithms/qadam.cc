#include "core/algorithms/qadam.h"

#include <cmath>

#include "core/algorithms/collective_params.h"
#include "core/algorithms/compression.h"
#include "core/algorithms/tags.h"
#include "core/ops.h"

namespace bagua {

ParamSchema QAdam::schema(const CompressorRegistry& compressors) {
  ParamSchema s;
  // Defaults are Bagua's: QAdamOptimizer(lr=1e-3, warmup_steps=100, betas=(0.9, 0.999), eps=1e-8) and
  // QAdamAlgorithm(hierarchical=True) (bagua/torch_api/algorithms/q_adam.py).
  s.add_double("lr", 1e-3, "learning rate", 0.0, std::nullopt, true);
  // At least 1, as Bagua's QAdamOptimizer requires ("Invalid warmup_steps parameter, must be larger
  // than 0", bagua/torch_api/algorithms/q_adam.py): v is updated only during the warm-up, and with
  // none it stays 0, so every step divides the momentum by eps alone and training diverges.
  s.add_int("warmup_steps", 100,
            "steps of full-precision gradient averaging with plain Adam before the momentum is "
            "compressed (>= 1, as Bagua requires: v is learnt only then)",
            1);
  s.add_double("beta1", 0.9, "decay of the momentum (exp_avg), below 1", 0.0, 1.0);
  s.add_double("beta2", 0.999, "decay of the second moment (exp_avg_sq), below 1", 0.0, 1.0);
  s.add_double("eps", 1e-8, "added to the denominator", 0.0);
  s.add_bool("hierarchical", true,
             "compressed phase: intra-host reduce, C_LP_S among host leaders, broadcast");
  add_intra_host_param(s, collectives::IntraHostAlgo::kAuto);
  // The warm-up's full-precision allreduce of the gradients: Bagua's QAdamAlgorithm appends a
  // centralized synchronous op (hierarchical=False, average=True) to each bucket while warming up
  // (bagua/torch_api/algorithms/q_adam.py), which bagua-core runs as NCCL's allreduce
  // (centralized_full_precision_synchronous.rs): "nccl" is that; "ring" (the default, as
  // gradient_allreduce's) the bulk-synchronous ring.
  add_allreduce_params(s, "ring", "warm-up: allreduce algorithm of the gradients");
  add_alltoall_param(s);
  add_allgather_param(s);
  add_compressor_params(
      s, compressors,
      CompressorChoice{"minmax_uint8",
                       {"minmax_uint8", "sign"},
                       /*error_feedback_param=*/false,
                       false,
                       "minmax_uint8: Bagua's QAdam (8-bit); sign: QAdam-1bit, with error feedback"});
  return s;
}

QAdam::QAdam(const Params& params, const AlgorithmDeps& deps)
    : lr_(params.get_double("lr")),
      warmup_steps_(params.get_int("warmup_steps")),
      beta1_(params.get_double("beta1")),
      beta2_(params.get_double("beta2")),
      eps_(params.get_double("eps")),
      hierarchical_(params.get_bool("hierarchical")),
      intra_host_(intra_host_options(params)),
      warmup_algo_(allreduce_algo(params)),
      warmup_protocol_(nccl_protocol_option(params, warmup_algo_)),
      alltoall_(alltoall_algo(params)),
      allgather_(allgather_algo(params)) {
  if (beta1_ >= 1.0 || beta2_ >= 1.0)
    throw ConfigError("qadam: beta1 and beta2 must be below 1, got " + std::to_string(beta1_) +
                      " and " + std::to_string(beta2_));
  const bool one_bit = params.get_string("compressor") == "sign";
  factory_ = make_compressor_factory(deps.compressors, params, /*error_feedback=*/one_bit);
}

void QAdam::init(TrainState& s) {
  if (s.weights.memory() == Memory::kDevice)
    throw ConfigError("qadam: the update runs on host memory, but the weights are in " +
                      s.weights.space().name());
  if (s.weights.dtype() != DType::kF32)
    throw ConfigError("qadam: weights must be f32, got " + to_string(s.weights.dtype()));
  m_ = Buffer::like(s.weights, DType::kF32, s.weights.count());
  v_ = Buffer::like(s.weights, DType::kF32, s.weights.count());
  fill(m_, 0.0);
  fill(v_, 0.0);
  flat_ = std::make_unique<Communicator>(s.ctx.transport(), /*hierarchical=*/false);
  full_precision_ = std::make_unique<CentralizedFullPrecision>(
      s.ctx, *flat_, s.grads,
      CentralizedFullPrecisionOptions{/*average=*/true, warmup_algo_, warmup_protocol_});
  communicator_ = std::make_unique<Communicator>(s.ctx.transport(), hierarchical_, intra_host_);
  low_precision_.clear();
  for (const Bucket& b : s.buckets)
    low_precision_.push_back(std::make_unique<CentralizedLowPrecision>(
        s.ctx, *communicator_, m_.view().slice(b.offset, b.count),
        CentralizedLowPrecisionOptions{factory_, /*average=*/true, alltoall_, allgather_}));
}

void QAdam::on_bucket_ready(TrainState& s, const Bucket& b) {
  const BufferView grads = s.grads_of(b);
  if (warming_up(s)) {
    s.comm.submit([this, &s, grads, index = b.index] {
      TraceScope scope(s.ctx, "qadam warm-up bucket " + std::to_string(index), "comm", 1);
      full_precision_->allreduce(grads, tags::bucket(tags::kGradient, index));
    });
    return;
  }
  const BufferView momentum = m_.view().slice(b.offset, b.count);
  CentralizedLowPrecision* primitive = low_precision_[static_cast<size_t>(b.index)].get();
  s.comm.submit([this, &s, grads, momentum, primitive, index = b.index] {
    TraceScope scope(s.ctx, "qadam momentum bucket " + std::to_string(index), "comm", 1);
    // m := beta1 m + (1 - beta1) g: read m and g, write m, two flops per element.
    const size_t n = momentum.count();
    s.ctx.clock().compute(Work{2.0 * static_cast<double>(n), Bytes(static_cast<int64_t>(12 * n)), {}});
    scale(momentum, beta1_);
    axpy(momentum, 1.0 - beta1_, grads);
    primitive->allreduce(momentum, tags::bucket(tags::kMomentum, index));
  });
}

void QAdam::after_backward(TrainState& s) {
  s.comm.synchronize();
}

void QAdam::apply_update(TrainState& s) {
  if (s.weights.is_meta()) return;
  const int64_t t = s.step + 1;
  const std::span<float> w = s.weights.as<float>();
  const std::span<const float> g = s.grads.as<float>();
  const std::span<float> m = m_.as<float>();
  const std::span<float> v = v_.as<float>();
  const float b1 = static_cast<float>(beta1_);
  const float b2 = static_cast<float>(beta2_);
  if (warming_up(s)) {
    for (size_t i = 0; i < w.size(); ++i) {
      m[i] = m[i] * b1 + g[i] * (1.0f - b1);
      v[i] = v[i] * b2 + g[i] * g[i] * (1.0f - b2);
    }
  }
  const double bias_correction1 = 1.0 - std::pow(beta1_, static_cast<double>(t));
  const double bias_correction2 = 1.0 - std::pow(beta2_, static_cast<double>(t));
  const float step_size = static_cast<float>(lr_ / bias_correction1);
  const float sqrt_bc2 = static_cast<float>(std::sqrt(bias_correction2));
  const float eps = static_cast<float>(eps_);
  for (size_t i = 0; i < w.size(); ++i) {
    const float denom = std::sqrt(v[i]) / sqrt_bc2 + eps;
    w[i] -= step_size * (m[i] / denom);
  }
}

// Adam's update: read w, g, m, v and write w, m, v (7 f32 per parameter), 12 flops per parameter: the
// adam optimizer's cost without weight decay (core/optim/optimizers.cc), memory-bound on every device.
Work QAdam::update_cost(const TrainState& s) const {
  const size_t n = s.model.num_params();
  return Work{12.0 * static_cast<double>(n), Bytes(static_cast<int64_t>(28 * n)), {}};
}

}  // namespace bagua
