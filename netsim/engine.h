// The discrete-event engine: integer-nanosecond virtual time and a queue of pending actions.
//
// Terms:
//   event     an action due at a time; events run in (time, sequence) order, where the sequence number
//             is the order of scheduling, so that events due at the same time run in the order they
//             were scheduled and every run is reproducible bit for bit
//   handle    names a scheduled event so that it can be cancelled (a flow whose rate changed cancels
//             its old completion); a handle of an event that already ran or was cancelled is simply
//             stale
//   callback  a plain function pointer with an object and an integer argument: what the simulator's
//             own hot paths schedule (waking a fiber, a flow's latency or completion), cheaper to
//             store, run and drop than a std::function, which stays available for everything else
//   lane      a first-in first-out queue of the events posted one fixed delay after the time they
//             were posted at (0: "now", the wake-ups; a route latency: a flow entering transfer). As
//             virtual time never goes back, such events arrive in a lane already in (time, sequence)
//             order, so a lane needs no sorting: pushing and popping cost O(1)
//
// The queue is a handful of lanes plus an indexed 4-ary heap (shallower than a binary one, its
// children side by side in memory) for every other event. The next event is the earliest, by (time,
// sequence), of the lanes' fronts and the heap's top: exactly the order a single heap would give, so
// lanes change how fast events are found, never which runs next. Lanes hold only posted events, which
// cannot be cancelled; an event that may be cancelled goes to the heap, which removes it at once, so
// that a flow rescheduled many times leaves no dead entries behind. Nothing here is static: each
// Simulation owns its Engine.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/units.h"

namespace bagua::netsim {

// `ns` rounded up to a whole nanosecond, forgiving the last few ulps of floating-point rounding (so
// that 1e6 bytes at 1e9 bytes/s is exactly 1'000'000 ns, not 1'000'001 when a division lands a hair
// above the integer). Every modelled duration (transfers, compute) is rounded this way.
Time ceil_ns(double ns);

struct Callback {
  using Fn = void (*)(void* object, uint64_t argument);
  Fn fn = nullptr;
  void* object = nullptr;
  uint64_t argument = 0;
  void operator()() const { fn(object, argument); }
};

class EventQueue {
 public:
  using Action = std::function<void()>;
  // Slot index in the low 32 bits, the slot's generation in the high 32 bits; 0 is never a live handle.
  using Handle = uint64_t;
  static constexpr Handle kNoEvent = 0;
  // Lanes beyond the "now" lane; a delay asked for once they are all taken goes to the heap.
  static constexpr size_t kMaxLanes = 8;

  EventQueue();

  // `at` must not be before now(). Cancellable.
  Handle schedule(Time at, Callback callback);
  Handle schedule(Time at, Action action);
  // Not cancellable: goes to the lane of its delay (at - now()) if there is one. `recurring_delay`: the
  // caller expects to post many events this far ahead, so a lane is opened for the delay if one is
  // still free.
  void post(Time at, Callback callback, bool recurring_delay = false);
  // Removes the event if it is still pending; returns whether it was.
  bool cancel(Handle handle);
  // cancel(handle) then schedule(at, callback), in one step: a pending event is moved in the heap
  // (given the sequence number schedule() would have given it, so that the order of events is the
  // same) and keeps its handle; otherwise the event is scheduled anew.
  Handle reschedule(Handle handle, Time at, Callback callback);
  // A batch of schedule() and reschedule() calls (no cancel, pop or peek in between) that may move
  // many of the heap's events: inside it they only set their events' keys (time, sequence), and
  // end_batch() restores the heap order once, bottom-up (Floyd's construction: O(heap size), where
  // sifting each event costs O(log) and, for events tied at one time, goes all the way down). The keys
  // are the same as without the batch and no two are equal, so the events run in the same order.
  void begin_batch();
  void end_batch();
  size_t heap_size() const { return heap_.size(); }
  bool empty() const { return size() == 0; }
  size_t size() const { return heap_.size() + in_lanes_; }
  Time next_time() const;
  // The callback of the earliest event, or a null one (none pending, or an Action).
  Callback peek() const;
  // Removes the earliest event and advances now() to its time, which it returns; the event's callback
  // goes to `callback`, or, for an event scheduled as an Action, `callback.fn` is null and the action
  // is moved into `action`.
  Time pop(Callback& callback, Action& action);
  // The time of the latest pop (zero before the first).
  Time now() const { return now_; }
  void clear();

 private:
  // The heap holds the ordering key itself, so that sifting touches one contiguous array; the slot
  // holds the callback and where its entry sits in the heap.
  struct HeapEntry {
    Time at;
    uint64_t sequence;
    uint32_t slot;
  };
  struct Slot {
    Callback callback;
    uint32_t generation = 1;
    int32_t heap_index = -1;  // -1: free
    bool is_action = false;   // the event is actions_[slot]
  };
  // A lane's entries carry their callback: nothing else refers to them.
  struct LaneEntry {
    Time at;
    uint64_t sequence;
    Callback callback;
  };
  // A ring buffer of entries in (time, sequence) order.
  class Lane {
   public:
    explicit Lane(Time delay) : delay_(delay) {}
    Time delay() const { return delay_; }
    bool empty() const { return size_ == 0; }
    size_t size() const { return size_; }
    const LaneEntry& front() const { return ring_[head_]; }
    void push(const LaneEntry& e) {
      if (size_ == ring_.size()) grow();
      ring_[(head_ + size_) & (ring_.size() - 1)] = e;
      ++size_;
    }
    void pop_front() {
      head_ = (head_ + 1) & (ring_.size() - 1);
      --size_;
    }
    void clear() { head_ = size_ = 0; }

   private:
    void grow();
    Time delay_;
    std::vector<LaneEntry> ring_;  // a power of two long
    size_t head_ = 0;
    size_t size_ = 0;
  };

  static constexpr size_t kArity = 4;
  template <class X, class Y>
  static bool earlier(const X& x, const Y& y) {
    return x.at != y.at ? x.at < y.at : x.sequence < y.sequence;
  }
  Lane* lane_for(Time delay, bool open);
  uint32_t allocate_slot();
  Handle push_heap(Time at, uint32_t slot);
  void place(size_t index, const HeapEntry& e) {
    heap_[index] = e;
    slots_[e.slot].heap_index = static_cast<int32_t>(index);
  }
  void sift_up(size_t index);
  void sift_down(size_t index);
  void remove_at(size_t index);
  void remove_top();
  void release(uint32_t slot);

  std::vector<Slot> slots_;
  std::vector<Action> actions_;  // by slot, for events scheduled as an Action
  std::vector<uint32_t> free_slots_;
  std::vector<HeapEntry> heap_;
  std::vector<Lane> lanes_;  // lanes_[0]: delay 0, always there
  size_t in_lanes_ = 0;
  Time now_;
  uint64_t next_sequence_ = 0;
  bool batch_ = false;  // between begin_batch() and end_batch(): the heap's order is not kept
};

// Virtual time plus the queue. `now()` only moves forward, to the time of the event being processed.
class Engine {
 public:
  Time now() const { return queue_.now(); }
  EventQueue::Handle at(Time when, EventQueue::Action action);
  EventQueue::Handle at(Time when, Callback callback);
  EventQueue::Handle after(Time delay, EventQueue::Action action) {
    return at(now() + delay, std::move(action));
  }
  EventQueue::Handle after(Time delay, Callback callback) { return at(now() + delay, callback); }
  // An event that will not be cancelled, `delay` from now. `recurring`: the caller posts events this
  // far ahead over and over (a route latency), so they get a first-in first-out lane of their own while
  // one is free. The order events run in is the same either way.
  void post(Time delay, Callback callback, bool recurring = false);
  bool cancel(EventQueue::Handle handle) { return queue_.cancel(handle); }
  // cancel(handle) then at(when, callback), cheaper (EventQueue::reschedule).
  EventQueue::Handle reschedule(EventQueue::Handle handle, Time when, Callback callback);
  // EventQueue::begin_batch / end_batch: many at() and reschedule() calls, the queue ordered once.
  void begin_batch() { queue_.begin_batch(); }
  void end_batch() { queue_.end_batch(); }
  // Events in the cancellable heap (what end_batch() reorders).
  size_t heap_size() const { return queue_.heap_size(); }
  // `callback` runs once every event due at now() has run, before time moves on (and before any event
  // it schedules at now()): the end of the current instant. One at a time: a second defer() before it
  // has run is refused. The flow model re-solves its rates there once per instant, for every flow that
  // started or ended in it (FlowNetwork::reshare_later), instead of once per flow.
  void defer(Callback callback);
  bool deferred() const { return deferred_.fn != nullptr; }
  bool idle() const { return queue_.empty() && !deferred(); }
  Time next_time() const { return deferred() ? now() : queue_.next_time(); }
  // The callback the next step() will run, if it is one (for prefetching what it will touch).
  Callback peek() const { return deferred_due() ? deferred_ : queue_.peek(); }
  // Runs the earliest event (advancing now() to its time), or the deferred callback when no event is
  // left at now().
  void step();
  // Drops every pending event (after a failure).
  void clear() {
    queue_.clear();
    deferred_ = {};
  }
  uint64_t events_processed() const { return processed_; }

 private:
  bool deferred_due() const {
    return deferred() && (queue_.empty() || queue_.next_time() > now());
  }
  EventQueue queue_;
  EventQueue::Action action_;  // the running event's, when it was scheduled as an Action
  Callback deferred_;          // defer()'s, until it runs
  uint64_t processed_ = 0;
};

}  // namespace bagua::netsim
