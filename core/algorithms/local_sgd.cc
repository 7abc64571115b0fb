#include "core/algorithms/local_sgd.h"

#include "core/algorithms/collective_params.h"
#include "core/algorithms/tags.h"

namespace bagua {

ParamSchema LocalSgd::schema() {
  ParamSchema s;
  // period 4: the averaging period of the example in PyTorch's documentation of
  // torch.distributed.optim.PostLocalSGDOptimizer (PeriodicModelAverager(period=4, warmup_steps=100)).
  s.add_int("period", 4, "local steps between two weight averages (H)", 1);
  // hierarchical false: as Bagua's GradientAllReduceAlgorithm, the other full-precision centralized
  // algorithm (bagua/torch_api/algorithms/gradient_allreduce.py).
  s.add_bool("hierarchical", false,
             "intra-host reduce, allreduce among host leaders, intra-host broadcast");
  add_intra_host_param(s, collectives::IntraHostAlgo::kAuto);
  return s;
}

LocalSgd::LocalSgd(const Params& params)
    : period_(params.get_int("period")),
      hierarchical_(params.get_bool("hierarchical")),
      intra_host_(intra_host_options(params)) {}

void LocalSgd::init(TrainState& s) {
  communicator_ = std::make_unique<Communicator>(s.ctx.transport(), hierarchical_, intra_host_);
  primitive_ = std::make_unique<CentralizedFullPrecision>(
      s.ctx, *communicator_, s.weights, CentralizedFullPrecisionOptions{/*average=*/true});
}

void LocalSgd::after_update(TrainState& s) {
  if ((s.step + 1) % period_ != 0) return;
  for (const Bucket& b : s.buckets) {
    s.comm.submit([this, &s, weights = s.weights_of(b), index = b.index] {
      TraceScope scope(s.ctx, "average weights bucket " + std::to_string(index), "comm", 1);
      primitive_->allreduce(weights, tags::bucket(tags::kWeights, index));
    });
  }
  s.comm.synchronize();
}

}  // namespace bagua
