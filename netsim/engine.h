// The discrete-event engine: integer-nanosecond virtual time and a queue of pending actions.
//
// Terms:
//   event     an action due at a time; events run in (time, sequence) order, where the sequence number
//   is
//             the order of scheduling, so that events due at the same time run in the order they were
//             scheduled and every run is reproducible bit for bit
//   handle    names a scheduled event so that it can be cancelled (a flow whose rate changed cancels
//   its
//             old completion); a handle of an event that already ran or was cancelled is simply stale
//
// The queue is an indexed 4-ary heap (shallower than a binary one, its children side by side in
// memory): cancelling removes the event at once, so a flow rescheduled many times leaves no dead
// entries behind. Nothing here is static: each Simulation owns its Engine.
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

class EventQueue {
 public:
  using Action = std::function<void()>;
  // Slot index in the low 32 bits, the slot's generation in the high 32 bits; 0 is never a live handle.
  using Handle = uint64_t;
  static constexpr Handle kNoEvent = 0;

  Handle schedule(Time at, Action action);
  // Removes the event if it is still pending; returns whether it was.
  bool cancel(Handle handle);
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  Time next_time() const;
  // Removes the earliest event; returns its time and moves its action into `action`.
  Time pop(Action& action);
  void clear();

 private:
  // The heap holds the ordering key itself, so that sifting touches one contiguous array; the slot
  // holds the action and where its entry sits in the heap.
  struct Entry {
    Time at;
    uint64_t sequence;
    uint32_t slot;
  };
  struct Slot {
    Action action;
    uint32_t generation = 1;
    int32_t heap_index = -1;  // -1: free
  };
  static constexpr size_t kArity = 4;
  static bool earlier(const Entry& x, const Entry& y) {
    return x.at != y.at ? x.at < y.at : x.sequence < y.sequence;
  }
  void place(size_t index, const Entry& e) {
    heap_[index] = e;
    slots_[e.slot].heap_index = static_cast<int32_t>(index);
  }
  void sift_up(size_t index);
  void sift_down(size_t index);
  void remove_at(size_t index);
  void release(uint32_t slot);

  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;
  std::vector<Entry> heap_;
  uint64_t next_sequence_ = 0;
};

// Virtual time plus the queue. `now()` only moves forward, to the time of the event being processed.
class Engine {
 public:
  Time now() const { return now_; }
  EventQueue::Handle at(Time when, EventQueue::Action action);
  EventQueue::Handle after(Time delay, EventQueue::Action action) {
    return at(now_ + delay, std::move(action));
  }
  bool cancel(EventQueue::Handle handle) { return queue_.cancel(handle); }
  bool idle() const { return queue_.empty(); }
  Time next_time() const { return queue_.next_time(); }
  // Runs the earliest event (advancing now() to its time).
  void step();
  // Drops every pending event (after a failure).
  void clear() { queue_.clear(); }
  uint64_t events_processed() const { return processed_; }

 private:
  Time now_;
  EventQueue queue_;
  uint64_t processed_ = 0;
};

}  // namespace bagua::netsim
