// Cooperative fibers on the discrete-event engine: every rank's main body and every stream of a rank is
// a stackful fiber (Boost.Context), and exactly one of them runs at a time, on the engine's OS thread.
//
// Terms:
//   fiber     a body with its own stack; it runs until it blocks, then the engine goes on with the next
//             event. Only events resume fibers, so fibers never switch to each other directly.
//   block     suspend the running fiber until someone wakes it; the reason is kept for deadlock reports
//   wake      schedule a blocked fiber to resume at the current time (as an event, so that the order of
//             wake-ups is the order of the events that caused them; in the queue's "now" lane, which
//             costs no more than resuming it directly would, and keeps that order)
//   gate      (block's optional argument) a test the event that would resume a blocked fiber makes
//             first: true resumes the fiber; false leaves it blocked, the gate having put it on the
//             wait list of what it now waits for (and set its reason), as the fiber itself would have
//             on resuming and finding that thing pending, without the switch into the fiber and back.
//             The event still runs at its place, so the order of events is unchanged
//   sleep     suspend the running fiber until now + d (a timer event)
//   abort     after a failure or a deadlock, every unfinished fiber is resumed once more and its
//             blocking call throws FiberAbort, so that its stack unwinds and every destructor runs
//
// Stacks: 1 MiB each (4 MiB under AddressSanitizer) below a guard page, so that an overflow faults; a
// finished fiber's stack goes to a pool of its thread and serves the next fiber (fibers.cc).
//
// Under AddressSanitizer every stack switch is announced with __sanitizer_start_switch_fiber /
// __sanitizer_finish_switch_fiber, so that ASan knows which stack is current; under ThreadSanitizer
// each fiber has its own TSan context (__tsan_create_fiber) and each switch is announced with
// __tsan_switch_to_fiber, so that TSan keeps a shadow call stack per fiber and orders what fibers do.
#pragma once

#include <boost/context/fiber.hpp>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/transport.h"
#include "netsim/engine.h"

#if defined(__SANITIZE_THREAD__)
#define BAGUA_NETSIM_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define BAGUA_NETSIM_TSAN 1
#endif
#endif

namespace bagua::netsim {

// Thrown into a blocked fiber to unwind it when the run is torn down. Deliberately not a
// std::exception, so that `catch (const std::exception&)` in user code lets it through.
struct FiberAbort {};

enum class WaitKind : uint8_t {
  kReceive,
  kSend,
  kEvent,
  kStreamSync,
  kStreamDrain,
  kStreamIdle,
  kTimer,
  kMeeting  // SimTransport::start_together: the other ranks of the group
};

// What a blocked fiber waits for, in world ranks.
struct WaitReason {
  WaitKind kind = WaitKind::kEvent;
  int peer = -1;
  Tag tag = 0;
  bool subgroup = false;
  const std::string* stream = nullptr;  // kStreamSync / kStreamDrain: the stream's name
};
std::string describe(const WaitReason& reason);

class Fibers {
 public:
  enum class State : uint8_t { kNew, kReady, kRunning, kBlocked, kSleeping, kDone };
  struct Fiber;
  // See the terms above: `ready(object, fiber)` is true when the fiber is to resume.
  struct Gate {
    bool (*ready)(void* object, Fiber& f) = nullptr;
    void* object = nullptr;
  };
  // What every block, wake and resume touches comes first, within one cache line.
  struct Fiber {
    State state = State::kNew;
    bool created = false;  // the Boost.Context fiber exists (from its first run on)
    int id = 0;
    WaitReason reason;
    Gate gate;                        // of the block under way
    boost::context::fiber context;    // the fiber, while it is suspended
    boost::context::fiber scheduler;  // the engine's side, while the fiber runs
    int rank = 0;
    int track = 0;                 // trace lane: 0 for a rank's main fiber, 1+ for its streams
    void* stack_bottom = nullptr;  // for the sanitizer annotations
    size_t stack_size = 0;
    std::string name;  // a stream's name; empty for a rank's main fiber
    std::function<void()> body;
    bool child = false;  // spawned by spawn_child: its record is reused once it has finished
  };
  // Called on the failing fiber when its body throws (anything but FiberAbort).
  using OnError = std::function<void(Fiber&, std::exception_ptr)>;

  Fibers(Engine& engine, OnError on_error);
  ~Fibers();
  Fibers(const Fibers&) = delete;
  Fibers& operator=(const Fibers&) = delete;

  // Creates a fiber and schedules its start now.
  Fiber& spawn(int rank, int track, std::function<void()> body);
  // The same for a fiber the running one waits for before it returns (Transport::concurrently): of
  // its rank and track, in the record of a finished child whose id is above the running fiber's where
  // there is one (so that abort_all, newest id first, unwinds a child before its parent, and a run of
  // many calls does not keep a record per child it ever had).
  Fiber& spawn_child(std::function<void()> body);
  // The running fiber (checked: blocking calls are only legal inside a fiber).
  Fiber& current() const {
    BAGUA_CHECK(current_ != nullptr, "a blocking simulator call made outside a rank's fiber");
    return *current_;
  }
  bool in_fiber() const { return current_ != nullptr; }

  // Suspends the running fiber until wake(); throws FiberAbort once the run is being torn down.
  void block(const WaitReason& reason) { block(reason, Gate{}); }
  // The same with a gate (see the terms above). Inline, as block_nothrow: a caller builds the reason
  // in place, a store per member, just before the call; out of line, the copy into the record read
  // its first 16 bytes with one load, which the processor cannot take from those stores while they
  // are in flight, and waited until they, and every store before them, had reached the cache (a
  // store-forwarding stall: 80 % of block's time and a seventh of the 1024-rank ring exchange's under
  // perf on an Intel Xeon). Inlined, the members go to the record straight from registers.
  void block(const WaitReason& reason, Gate gate) {
    Fiber& f = current();
    f.gate = gate;
    const bool resumed = block_running(f, reason);
    f.gate = {};
    if (!resumed) throw FiberAbort{};
  }
  // Same, for destructors: never throws; returns false (at once) when the run is being torn down.
  bool block_nothrow(const WaitReason& reason) { return block_running(current(), reason); }
  // Suspends the running fiber for `d` of virtual time.
  void sleep(Time d);
  // Makes a blocked fiber resume now (after the events already due now); no-op otherwise.
  void wake(Fiber& f) {  // inline: every message's arrival wakes its receiver
    if (f.state != State::kBlocked || aborting_) return;
    f.state = State::kReady;
    engine_.post(Time::zero(), resume_callback(f));
  }

  bool aborting() const { return aborting_; }
  // Resumes every unfinished fiber so that it unwinds (newest first, so that a stream is unwound before
  // the main fiber whose stack its tasks may refer to). Drops every pending event.
  void abort_all();
  const std::vector<std::unique_ptr<Fiber>>& all() const { return fibers_; }
  // How many finished fibers' stacks this thread keeps for its next fibers (a stack outlives its
  // fiber and its simulation: the sweeps' next runs take it instead of mapping a new one).
  static size_t pooled_stacks();
  // The bytes of those stacks that are resident in memory (mincore), for the tests.
  static size_t pooled_resident_bytes();
  // Switches into fibers so far (resumes), for the simulator-speed benchmark and its tests.
  uint64_t switches() const { return switches_; }

 private:
  // The event that resumes fiber `id` (an index into fibers_).
  static void resume_event(void* fibers, uint64_t id);
  Callback resume_callback(const Fiber& f) {
    return {&Fibers::resume_event, this, static_cast<uint64_t>(f.id)};
  }
  // If the next wake-up resumes a fiber, asks the cache for that fiber's record and its topmost frames,
  // which with thousands of fibers have long left the cache; the fiber about to run gives the memory
  // time to deliver them.
  void prefetch_next() const;
  // block_nothrow for `f`, the running fiber (current(), checked by the caller).
  bool block_running(Fiber& f, const WaitReason& reason) {
    if (aborting_) return false;
    f.state = State::kBlocked;
    f.reason = reason;
    suspend(f);
    return !aborting_;
  }
  void resume(Fiber& f);   // engine side: switch into `f`
  void suspend(Fiber& f);  // fiber side: switch back to the engine
  void entry(Fiber& f);

  Engine& engine_;
  OnError on_error_;
  uint64_t run_;  // this run's number in its thread's pool of stacks (fibers.cc)
  std::vector<std::unique_ptr<Fiber>> fibers_;
  // By fiber id: the frame of its last suspend(), near what resuming it touches (null before its
  // first). Apart from the records, so that finding what to prefetch reads one word of a dense array
  // instead of a record thousands of others have pushed out of the cache.
  std::vector<const char*> suspended_at_;
  std::set<int> finished_children_;  // ids of spawn_child's finished fibers, for reuse
  Fiber* current_ = nullptr;
  bool aborting_ = false;
  uint64_t switches_ = 0;
  // The engine's stack, as the sanitizer reports it when a fiber is entered.
  const void* engine_stack_bottom_ = nullptr;
  size_t engine_stack_size_ = 0;
#if defined(BAGUA_NETSIM_TSAN)
  // ThreadSanitizer's contexts: the engine thread's, and each fiber's (by id) from its first run to its
  // end.
  void* tsan_engine_ = nullptr;
  std::vector<void*> tsan_fibers_;
#endif
};

// The fibers waiting for one thing (a message, an event, a stream), woken in the order they came. Most
// things have one waiter, kept without allocating.
class WaitList {
 public:
  void add(Fibers::Fiber& f) {
    if (first_ == nullptr)
      first_ = &f;
    else
      more_.push_back(&f);
  }
  void wake_all(Fibers& fibers) {
    if (first_ == nullptr) return;
    fibers.wake(*std::exchange(first_, nullptr));
    for (Fibers::Fiber* f : more_)
      fibers.wake(*f);
    more_.clear();
  }

 private:
  Fibers::Fiber* first_ = nullptr;
  std::vector<Fibers::Fiber*> more_;
};

}  // namespace bagua::netsim
