#include "core/algorithms/gradient_allreduce.h"

#include "core/algorithms/collective_params.h"
#include "core/algorithms/tags.h"

namespace bagua {

ParamSchema GradientAllreduce::schema() {
  ParamSchema s;
  // Defaults are Bagua's: GradientAllReduceAlgorithm(hierarchical=False, average=True).
  s.add_bool("hierarchical", false,
             "intra-host reduce, allreduce among host leaders, intra-host broadcast");
  add_intra_host_param(s, collectives::IntraHostAlgo::kAuto);
  s.add_bool("average", true, "average the gradients (false: sum them)");
  add_allreduce_params(s, "ring", "allreduce algorithm");
  return s;
}

GradientAllreduce::GradientAllreduce(const Params& params)
    : hierarchical_(params.get_bool("hierarchical")),
      intra_host_(intra_host_options(params)),
      average_(params.get_bool("average")),
      algo_(allreduce_algo(params)),
      protocol_(nccl_protocol_option(params, algo_)) {}

void GradientAllreduce::init(TrainState& s) {
  communicator_ = std::make_unique<Communicator>(s.ctx.transport(), hierarchical_, intra_host_);
  primitive_ = std::make_unique<CentralizedFullPrecision>(
      s.ctx, *communicator_, s.grads, CentralizedFullPrecisionOptions{average_, algo_, protocol_});
}

void GradientAllreduce::on_bucket_ready(TrainState& s, const Bucket& b) {
  const BufferView grads = s.grads_of(b);
  s.comm.submit([this, &s, grads, index = b.index] {
    TraceScope scope(s.ctx, "allreduce bucket " + std::to_string(index), "comm", 1);
    primitive_->allreduce(grads, tags::bucket(tags::kGradient, index));
  });
}

void GradientAllreduce::after_backward(TrainState& s) {
  s.comm.synchronize();
}

}  // namespace bagua
