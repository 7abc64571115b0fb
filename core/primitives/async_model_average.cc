#include "core/primitives/async_model_average.h"

#include "core/collectives/collectives.h"
#include "core/ops.h"

namespace bagua {

AsyncModelAverager::AsyncModelAverager(RankContext& ctx, Communicator& communicator,
                                       const BufferView& weights,
                                       const AsyncModelAveragerOptions& options)
    : ctx_(ctx),
      communicator_(communicator),
      weights_(weights),
      interval_(options.interval),
      data_tag_(options.data_tag),
      control_tag_(options.control_tag),
      algo_(options.algo),
      protocol_(options.protocol),
      snapshot_(Buffer::like(weights, weights.dtype(), weights.count())),
      delta_(Buffer::like(weights, weights.dtype(), weights.count())),
      flag_(Buffer::host(DType::kI32, 1)) {
  // Rounds back to back could spin without virtual time passing (a one-rank world sends nothing).
  BAGUA_CHECK(interval_ > Time::zero(), "asynchronous model averaging needs an interval > 0");
  BAGUA_CHECK(!communicator_.hierarchical(),
              "asynchronous model averaging runs on a flat communicator (as Bagua's asynchronous op)");
}

void AsyncModelAverager::start(Stream& stream) {
  BAGUA_CHECK(!started_, "asynchronous model averaging started twice");
  started_ = true;
  exited_ = ctx_.make_event();
  stream.submit([this] { loop(); });
}

void AsyncModelAverager::begin_compute() {
  std::lock_guard<std::mutex> lock(mutex_);
  busy_ = true;
}

void AsyncModelAverager::end_compute() {
  EventPtr applied;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    busy_ = false;
    if (held_back_) {
      axpy(weights_, 1.0, delta_);
      held_back_ = false;
      applied = std::move(applied_);
    }
  }
  if (applied) applied->set();
}

void AsyncModelAverager::locked(const std::function<void()>& update) {
  std::lock_guard<std::mutex> lock(mutex_);
  update();
}

void AsyncModelAverager::stop() {
  if (!started_) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_requested_ = true;
  }
  exited_->wait();
}

int64_t AsyncModelAverager::rounds() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return rounds_;
}

void AsyncModelAverager::loop() {
  // Sets `exited_` however the loop ends (an exception from the transport included), so that stop()
  // never waits for a loop that is gone; the exception itself surfaces at the stream's synchronize().
  struct ExitGuard {
    EventPtr event;
    ~ExitGuard() { event->set(); }
  } guard{exited_};

  Transport& world = communicator_.world();
  const std::span<int32_t> flag = flag_.as<int32_t>();
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      flag[0] = stop_requested_ ? 0 : 1;
    }
    collectives::allreduce(world, flag_, ReduceOp::kMin, control_tag_, algo_, protocol_);
    if (flag[0] == 0) return;

    {
      std::lock_guard<std::mutex> lock(mutex_);
      copy(snapshot_, weights_);
    }
    copy(delta_, snapshot_);
    collectives::allreduce(world, delta_, ReduceOp::kSum, data_tag_, algo_, protocol_);
    // delta = sum / P - snapshot
    scale(delta_, 1.0 / world.size());
    axpy(delta_, -1.0, snapshot_);

    EventPtr wait_for;
    EventPtr applied = ctx_.make_event();  // made outside the lock; used only if the delta is held back
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (busy_) {
        held_back_ = true;
        applied_ = applied;
        wait_for = std::move(applied);
      } else {
        axpy(weights_, 1.0, delta_);
      }
      ++rounds_;
    }
    if (wait_for) wait_for->wait();
    ctx_.clock().sleep(interval_);
  }
}

}  // namespace bagua
