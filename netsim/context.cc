#include "netsim/context.h"

#include <cmath>
#include <deque>

#include "core/check.h"
#include "netsim/world.h"

namespace bagua::netsim {

namespace {

class SimEvent final : public Event {
 public:
  explicit SimEvent(Fibers& fibers) : fibers_(fibers) {}
  void set() override {
    if (set_) return;
    set_ = true;
    waiters_.wake_all(fibers_);
  }
  bool test() const override { return set_; }
  void wait() override {
    while (!set_) {
      waiters_.add(fibers_.current());
      fibers_.block({WaitKind::kEvent});
    }
  }

 private:
  Fibers& fibers_;
  bool set_ = false;
  WaitList waiters_;
};

// What a stream's fiber and its Stream handle share; the fiber may outlive the handle by a little.
struct StreamState {
  struct Item {
    std::function<void()> task;
    std::shared_ptr<SimEvent> done;
  };
  std::string name;
  std::deque<Item> queue;
  size_t pending = 0;  // queued or running
  bool idle = false;   // the fiber is blocked waiting for work
  bool stop = false;
  std::exception_ptr error;  // the first task failure not yet rethrown by synchronize()
  Time error_time;
  Fibers::Fiber* fiber = nullptr;
  WaitList sync_waiters;
};

// The stream's fiber: runs tasks in submission order until stopped.
void run_stream(World& world, StreamState& s) {
  for (;;) {
    while (s.queue.empty()) {
      if (s.stop) return;
      s.idle = true;
      world.fibers.block({WaitKind::kStreamIdle});
      s.idle = false;
    }
    StreamState::Item item = std::move(s.queue.front());
    s.queue.pop_front();
    try {
      item.task();
    } catch (const FiberAbort&) {
      throw;
    } catch (...) {
      if (!s.error) {
        s.error = std::current_exception();
        s.error_time = world.engine.now();
      }
    }
    item.task = nullptr;
    item.done->set();
    if (--s.pending == 0) s.sync_waiters.wake_all(world.fibers);
  }
}

class SimStream final : public Stream {
 public:
  SimStream(World& world, int rank, std::shared_ptr<StreamState> state, std::vector<bool>& tracks,
            int track)
      : world_(world), rank_(rank), s_(std::move(state)), tracks_(tracks), track_(track) {}

  ~SimStream() override {
    Fibers& fibers = world_.fibers;
    // Run what is queued first (blocking this fiber), unless the run is being torn down.
    while (s_->pending > 0 && fibers.in_fiber() && !fibers.aborting()) {
      s_->sync_waiters.add(fibers.current());
      if (!fibers.block_nothrow({WaitKind::kStreamDrain, -1, 0, false, &s_->name})) break;
    }
    s_->stop = true;
    if (s_->idle) fibers.wake(*s_->fiber);
    // A task failure nobody synchronized on stops the run.
    if (s_->error && !fibers.aborting()) world_.fail(rank_, s_->error_time, s_->error);
    tracks_[static_cast<size_t>(track_ - 1)] = false;
  }

  const std::string& name() const override { return s_->name; }

  EventPtr submit(std::function<void()> task) override {
    auto done = std::make_shared<SimEvent>(world_.fibers);
    s_->queue.push_back({std::move(task), done});
    ++s_->pending;
    if (s_->idle) world_.fibers.wake(*s_->fiber);
    return done;
  }

  void synchronize() override {
    while (s_->pending > 0) {
      s_->sync_waiters.add(world_.fibers.current());
      world_.fibers.block({WaitKind::kStreamSync, -1, 0, false, &s_->name});
    }
    if (s_->error) {
      std::exception_ptr e = s_->error;
      s_->error = nullptr;
      std::rethrow_exception(e);
    }
  }

 private:
  World& world_;
  int rank_;
  std::shared_ptr<StreamState> s_;
  std::vector<bool>& tracks_;
  int track_;
};

}  // namespace

Time SimClock::duration_of(const Work& work, const DeviceSpec& device) {
  if (!(work.flops >= 0) || !std::isfinite(work.flops) || work.memory.count() < 0 ||
      work.duration < Time::zero())
    throw ConfigError("compute work must be non-negative and finite, got flops " +
                      std::to_string(work.flops) + ", memory " + std::to_string(work.memory.count()) +
                      " B, duration " + to_string(work.duration));
  // A zero peak or bandwidth means the resource is not modelled: its term is 0.
  const Time flops_time =
      device.peak_flops > 0 ? ceil_ns(work.flops * 1e9 / device.peak_flops) : Time::zero();
  const double mem_bw = device.memory_bandwidth.bytes_per_second();
  const Time memory_time =
      mem_bw > 0 ? ceil_ns(static_cast<double>(work.memory.count()) * 1e9 / mem_bw) : Time::zero();
  return work.duration + std::max(flops_time, memory_time);
}

Time SimClock::now() const {
  return world_.engine.now();
}

Time SimClock::compute(const Work& work) {
  Fibers::Fiber& f = world_.fibers.current();
  BAGUA_CHECK_EQ(f.rank, rank_, "rank whose clock computes");
  // A worker's work runs on its device or its host's CPU; a service rank's on its CPU host's CPU.
  const ClusterSpec& spec = world_.spec;
  const DeviceSpec& processor = rank_ >= spec.world_size()             ? spec.cpu_hosts.cpu
                                : work.processor == Processor::kDevice ? spec.device
                                                                       : spec.cpu;
  const Time d = duration_of(work, processor);
  world_.totals[static_cast<size_t>(rank_)].compute += d;
  const Time begin = world_.engine.now();
  if (d > Time::zero()) world_.fibers.sleep(d);
  if (world_.tracing && d > Time::zero())
    world_.trace.span(rank_, f.track, work.label.empty() ? std::string_view("compute") : work.label,
                      "compute", begin, world_.engine.now());
  return d;
}

void SimClock::sleep(Time d) {
  if (d < Time::zero()) throw ConfigError("sleep of a negative duration " + to_string(d));
  world_.fibers.current();  // checks that a fiber calls it
  if (d > Time::zero()) world_.fibers.sleep(d);
}

void SimTracer::span(std::string_view name, std::string_view category, int track, Time begin,
                     Time end) {
  world_.trace.span(rank_, track, name, category, begin, end);
}

void SimTracer::begin_iteration(int64_t k) {
  world_.trace.begin_iteration(rank_, k);
}

SimContext::SimContext(World& world, int rank)
    : world_(world),
      rank_(rank),
      transport_(world, /*group=*/0, /*members=*/{}, rank),
      clock_(world, rank),
      tracer_(world, rank) {}

Tracer* SimContext::tracer() {
  return world_.tracing ? &tracer_ : nullptr;
}

std::unique_ptr<Stream> SimContext::make_stream(std::string name) {
  // The lowest track no live stream of this rank uses (track 0 is the main fiber's).
  size_t k = 0;
  while (k < tracks_in_use_.size() && tracks_in_use_[k])
    ++k;
  if (k == tracks_in_use_.size()) tracks_in_use_.push_back(false);
  tracks_in_use_[k] = true;
  const int track = static_cast<int>(k) + 1;

  auto state = std::make_shared<StreamState>();
  state->name = std::move(name);
  World& world = world_;
  Fibers::Fiber& f = world_.fibers.spawn(rank_, track, [&world, state] { run_stream(world, *state); });
  f.name = state->name;
  state->fiber = &f;
  return std::make_unique<SimStream>(world_, rank_, std::move(state), tracks_in_use_, track);
}

EventPtr SimContext::make_event() {
  return std::make_shared<SimEvent>(world_.fibers);
}

}  // namespace bagua::netsim
