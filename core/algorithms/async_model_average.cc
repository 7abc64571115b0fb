#include "core/algorithms/async_model_average.h"

#include "core/algorithms/collective_params.h"
#include "core/algorithms/tags.h"

namespace bagua {

ParamSchema AsyncModelAverage::schema() {
  ParamSchema s;
  // Defaults are Bagua's: AsyncModelAverageAlgorithm(peer_selection_mode="all", sync_interval_ms=500,
  // warmup_steps=0) (bagua/torch_api/algorithms/async_model_average.py); "all" is its only mode.
  s.add_int("sync_interval_ms", 500, "milliseconds between two averaging rounds", 1);
  s.add_int("warmup_steps", 0, "steps of gradient allreduce before the asynchronous averaging starts",
            0);
  // Both of the op's collectives are the single communicator's NCCL allreduce: the flag's
  // (c.allreduce_inplace, MIN) and the weights' (c.allreduce, SUM) in execute_background_communication
  // (rust/bagua-core/bagua-core-internal/src/comm_ops/decentralized_full_precision_asynchronous.rs),
  // and the warm-up's is gradient_allreduce's: "nccl" is that; "ring" (the default, as
  // gradient_allreduce's) the bulk-synchronous ring.
  add_allreduce_params(s, "ring",
                       "allreduce algorithm of the warm-up's gradients and of the "
                       "background averaging (its flag and its weights)");
  return s;
}

AsyncModelAverage::AsyncModelAverage(const Params& params)
    : interval_(Time::ms(static_cast<double>(params.get_int("sync_interval_ms")))),
      warmup_steps_(params.get_int("warmup_steps")),
      algo_(allreduce_algo(params)),
      protocol_(nccl_protocol_option(params, algo_)) {}

void AsyncModelAverage::init(TrainState& s) {
  communicator_ = std::make_unique<Communicator>(s.ctx.transport(), /*hierarchical=*/false);
  warmup_ = std::make_unique<CentralizedFullPrecision>(
      s.ctx, *communicator_, s.grads,
      CentralizedFullPrecisionOptions{/*average=*/true, algo_, protocol_});
  averager_ = std::make_unique<AsyncModelAverager>(
      s.ctx, *communicator_, s.weights,
      AsyncModelAveragerOptions{interval_, tags::bucket(tags::kBackground, 0),
                                tags::bucket(tags::kControl, 0), algo_, protocol_});
}

void AsyncModelAverage::before_forward(TrainState& s) {
  if (warming_up(s)) return;
  if (!averager_->started()) averager_->start(s.comm);
  averager_->begin_compute();
}

void AsyncModelAverage::on_bucket_ready(TrainState& s, const Bucket& b) {
  if (!warming_up(s)) return;
  s.comm.submit([this, &s, grads = s.grads_of(b), index = b.index] {
    TraceScope scope(s.ctx, "allreduce bucket " + std::to_string(index), "comm", 1);
    warmup_->allreduce(grads, tags::bucket(tags::kGradient, index));
  });
}

void AsyncModelAverage::after_backward(TrainState& s) {
  if (warming_up(s)) {
    s.comm.synchronize();
    return;
  }
  averager_->end_compute();
}

void AsyncModelAverage::apply_update(TrainState& s) {
  if (warming_up(s)) {
    s.optimizer.step(s.weights, s.grads);
    return;
  }
  averager_->locked([&s] { s.optimizer.step(s.weights, s.grads); });
}

void AsyncModelAverage::read_weights(TrainState& s, const std::function<void()>& read) {
  if (averager_ && averager_->started())
    averager_->locked(read);
  else
    read();
}

void AsyncModelAverage::finish(TrainState& s) {
  averager_->stop();
}

}  // namespace bagua
