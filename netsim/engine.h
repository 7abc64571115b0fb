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
//             order, so a lane needs no sorting: pushing and popping cost O(1). An event scheduled
//             with a recurring delay (schedule_recurring: a lone flow's completion, the same for every
//             step of a ring) goes to a lane too and stays cancellable: cancelling it leaves a
//             tombstone that is passed over once it reaches the lane's front
//
// The queue is a handful of lanes plus a radix queue for every other event (the cancellable ones and
// posts with no lane). Virtual time never goes back, so every pending event is due at or after the
// time of the last event taken from the radix queue, its `base`: an event goes to bucket 0 when it is
// due at the base and otherwise to bucket b, where b - 1 is the highest bit in which its time differs
// from the base. Every event in bucket b is due before every event in a higher bucket, so the earliest
// is in the lowest non-empty bucket; taking it moves the base up to its time and spreads that bucket's
// other events over lower buckets (Ahuja, Mehlhorn, Orlin and Tarjan, "Faster algorithms for the
// shortest path problem", J. ACM 37(2), 1990: the radix heap). An event thus moves at most once per
// bit of its distance from the base, and scheduling, moving or cancelling one costs O(1), where a
// heap sifts through log(size) levels of scattered entries. Bucket 0 is kept in sequence order
// (the events spread into it are sorted once; later ones are scheduled at the base with the largest
// sequence yet), so that events due at one time run in the order they were scheduled. The next
// event is the earliest, by (time, sequence), of the lanes' fronts and the radix queue's: exactly the
// order a single sorted queue would give, so lanes and buckets change how fast events are found, never
// which runs next. An event that may be cancelled goes to the radix queue, which removes it at once,
// unless it was scheduled with a recurring delay: in a lane it is marked cancelled and passed over
// when it reaches the front (the 1024-rank ring's completions, every one as long after its flow
// entered transfer as the last: 4.3 % fewer instructions end to end than through the radix queue).
// Nothing here is static: each Simulation owns its Engine.
#pragma once

#include <cassert>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/units.h"

namespace bagua::netsim {

// `ns` rounded up to a whole nanosecond, forgiving the last few ulps of floating-point rounding (so
// that 1e6 bytes at 1e9 bytes/s is exactly 1'000'000 ns, not 1'000'001 when a division lands a hair
// above the integer). Every modelled duration (transfers, compute) is rounded this way. Inline, the
// ceiling of a value below 2^52 taken by an integer conversion (exact there: truncation is the floor
// of a positive double, one more where a fraction is left), which the baseline x86-64 target
// otherwise calls libm for (every flow's completion); ceil_ns_exact() for the rest.
Time ceil_ns_exact(double ns);
inline Time ceil_ns(double ns) {
  const double x = ns - (1e-6 + ns * 1e-13);
  if (!(x > 0 && x < 0x1p52)) return ceil_ns_exact(ns);
  const auto floor = static_cast<int64_t>(x);
  return Time::ns(floor + (static_cast<double>(floor) < x ? 1 : 0));
}

struct Callback {
  using Fn = void (*)(void* object, uint64_t argument);
  Fn fn = nullptr;
  void* object = nullptr;
  uint64_t argument = 0;
  Callback() = default;
  Callback(Fn f, void* o, uint64_t a) : fn(f), object(o), argument(a) {}
  // Copied member by member. A callback is mostly built from registers, one 8-byte store per member,
  // and copied soon after (into an event, a flow); the implicit copy moves its first two members with
  // one 16-byte load, which the processor cannot take from two 8-byte stores still in flight, and
  // waits until they have reached the cache (a store-forwarding stall: a third of
  // Mailbox::start_flow's time under perf, building the flow's completion callback). 8-byte loads
  // take their bytes from the stores at once.
  Callback(const Callback& c) : fn(c.fn), object(c.object), argument(c.argument) {}
  Callback& operator=(const Callback& c) {
    fn = c.fn;
    object = c.object;
    argument = c.argument;
    return *this;
  }
  void operator()() const { fn(object, argument); }
};

class EventQueue {
 public:
  using Action = std::function<void()>;
  // Of an event in the radix queue: slot index in the low 32 bits, the slot's generation in bits 32 to
  // 62. Of a cancellable event in a lane: bit 63 set, the lane in bits 59 to 62, the entry's position
  // in its lane (counted from the lane's first entry ever) below. 0 is never a live handle.
  using Handle = uint64_t;
  static constexpr Handle kNoEvent = 0;
  // Lanes beyond the "now" lane; a delay asked for once they are all taken goes to the radix queue.
  static constexpr size_t kMaxLanes = 8;

  EventQueue();

  // `at` must not be before now(). Cancellable.
  Handle schedule(Time at, Callback callback) {
    const uint32_t slot = allocate_slot();
    Slot& s = slots_[slot];
    s.callback = callback;
    s.is_action = false;
    return insert(at, slot);
  }
  Handle schedule(Time at, Action action);
  // schedule(at, callback) of an event the caller schedules this far ahead over and over (a lone
  // flow's completion): it goes to the lane of its delay (at - now() > 0), opened if one is free, and
  // stays cancellable; otherwise to the radix queue. The order events run in is the same either way.
  Handle schedule_recurring(Time at, Callback callback) {
    const Time delay = at - now_;
    Lane* lane = delay == Time::zero()                      ? nullptr
                 : lanes_[last_recurring_].delay() == delay ? &lanes_[last_recurring_]
                                                            : recurring_lane_for(delay);
    if (lane == nullptr) return schedule(at, callback);
    const uint64_t position = lane->push({at, next_sequence_++, callback});
    ++in_lanes_;
    return kLaneHandle | static_cast<uint64_t>(lane - lanes_.data()) << kLaneShift | position;
  }
  // Not cancellable: goes to the lane of its delay (at - now()) if there is one. `recurring_delay`: the
  // caller expects to post many events this far ahead, so a lane is opened for the delay if one is
  // still free.
  void post(Time at, Callback callback, bool recurring_delay = false) {
    // A lane takes the event if its delay is exactly at - now: the lane's events were all posted at
    // times <= now, so this one is due no earlier than any of them and has the largest sequence.
    const Time delay = at - now_;
    Lane* lane = delay == Time::zero()                 ? &lanes_[0]
                 : lanes_[last_lane_].delay() == delay ? &lanes_[last_lane_]
                                                       : lane_for(delay, recurring_delay);
    if (lane == nullptr) {
      schedule(at, callback);
      return;
    }
    lane->push({at, next_sequence_++, callback});
    ++in_lanes_;
  }
  // Removes the event if it is still pending; returns whether it was.
  bool cancel(Handle handle);
  // cancel(handle) then schedule(at, callback), in one step: a pending event is moved (given the
  // sequence number schedule() would have given it, so that the order of events is the same) and
  // keeps its handle; otherwise the event is scheduled anew.
  Handle reschedule(Handle handle, Time at, Callback callback) {
    if (handle == kNoEvent) return schedule(at, callback);
    if ((handle & kLaneHandle) != 0) {  // out of its lane, into the radix queue
      cancel(handle);
      return schedule(at, callback);
    }
    return move(handle, at, callback);
  }
  bool empty() const { return size() == 0; }
  size_t size() const { return in_buckets_ + in_lanes_; }
  Time next_time() const;
  // The callback of the earliest event, or a null one (none pending, or an Action).
  Callback peek() const;
  // The callback of the earliest event posted with no delay (lane 0: the wake-ups), or a null one:
  // due now, so it runs within the current instant, if not necessarily next. Cheaper than peek().
  Callback peek_now_lane() const { return lanes_[0].empty() ? Callback{} : lanes_[0].front().callback; }
  // Removes the earliest event and advances now() to its time, which it returns; the event's callback
  // goes to `callback`, or, for an event scheduled as an Action, `callback.fn` is null and the action
  // is moved into `action`.
  [[gnu::always_inline]] Time pop(Callback& callback, Action& action) {  // the lanes: most events
    if (empty()) [[unlikely]]
      pop_empty();
    if (Lane* const l = earliest_lane(lanes_); l != nullptr) {
      const LaneEntry& lane = l->front();
      if (in_buckets_ == 0 || lane_first(lane)) {
        callback = lane.callback;
        now_ = lane.at;
        l->pop_front();
        --in_lanes_;
        return now_;
      }
    }
    return pop_bucket(callback, action);
  }
  // The time of the latest pop (zero before the first).
  Time now() const { return now_; }
  void clear();

 private:
  // A bucket holds the ordering key itself, so that a search touches one contiguous array; the slot
  // holds the callback and where its entry sits.
  struct Entry {
    Time at;
    uint64_t sequence;
    uint32_t slot;
  };
  static constexpr uint32_t kCancelled = UINT32_MAX;  // an entry of bucket 0 whose event was cancelled
  struct Slot {
    Callback callback;
    uint32_t generation = 1;
    int32_t index = -1;  // in its bucket; -1: free
    uint8_t bucket = 0;
    bool is_action = false;  // the event is actions_[slot]
  };
  // A bucket of the radix queue: a vector whose push_back leaves its growth out of line, so that add()
  // inlines into schedule() without the register spills of std::vector's reallocation path.
  class Bucket {
   public:
    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    Entry& operator[](size_t i) { return data_[i]; }
    const Entry& operator[](size_t i) const { return data_[i]; }
    Entry& back() { return data_[size_ - 1]; }
    Entry* begin() { return data_.data(); }
    Entry* end() { return data_.data() + size_; }
    const Entry* begin() const { return data_.data(); }
    const Entry* end() const { return data_.data() + size_; }
    void push_back(const Entry& e) {
      if (size_ == data_.size()) grow();
      data_[size_++] = e;
    }
    void pop_back() { --size_; }
    void clear() { size_ = 0; }
    void swap(Bucket& other) {
      data_.swap(other.data_);
      std::swap(size_, other.size_);
    }

   private:
    [[gnu::noinline]] void grow();
    std::vector<Entry> data_;  // size_ of them in use
    size_t size_ = 0;
  };
  // A lane's entries carry their callback: nothing else refers to them.
  struct LaneEntry {
    Time at;
    uint64_t sequence;
    Callback callback;
  };
  // A ring buffer of entries in (time, sequence) order. A cancelled entry is a tombstone (a null
  // callback) until it reaches the front, which is never one: a lane of tombstones only is empty.
  class Lane {
   public:
    explicit Lane(Time delay) : delay_(delay) {}
    Time delay() const { return delay_; }
    bool empty() const { return size_ == 0; }
    const LaneEntry& front() const { return ring_[head_]; }
    // Returns the entry's position: how many entries the lane had before it, ever.
    uint64_t push(const LaneEntry& e) {
      if (size_ == capacity_) grow();
      ring_[(head_ + size_) & mask_] = e;
      return first_ + size_++;
    }
    void pop_front() {
      do {
        head_ = (head_ + 1) & mask_;
        ++first_;
        --size_;
      } while (size_ > 0 && ring_[head_].callback.fn == nullptr);
    }
    // Cancels the entry at `position` if it is pending; returns whether it was.
    bool cancel(uint64_t position) {
      if (position < first_ || position - first_ >= size_) return false;
      LaneEntry& e = ring_[(head_ + (position - first_)) & mask_];
      if (e.callback.fn == nullptr) return false;
      if (position == first_) {
        pop_front();
      } else {
        e.callback = {};
      }
      return true;
    }
    void clear() {
      first_ += size_;  // the handles of what was in it are stale
      head_ = size_ = 0;
    }

   private:
    void grow();
    Time delay_;
    std::vector<LaneEntry> ring_;  // a power of two long
    // ring_.size() and that less one, kept: a vector's size divides by the entry's 40 bytes.
    size_t capacity_ = 0;
    size_t mask_ = 0;
    size_t head_ = 0;
    size_t size_ = 0;     // entries from the front on, tombstones among them
    uint64_t first_ = 0;  // the front's position
  };
  static constexpr Handle kLaneHandle = Handle{1} << 63;
  static constexpr int kLaneShift = 59;
  static_assert(kMaxLanes < 16, "a lane's index fits in bits 59 to 62 of a handle");

  template <class X, class Y>
  static bool earlier(const X& x, const Y& y) {
    return x.at != y.at ? x.at < y.at : x.sequence < y.sequence;
  }
  // Times are never negative: 63 bits, so bucket b - 1 <= 62.
  static constexpr size_t kBuckets = 64;
  size_t bucket_of(Time at) const {
    const uint64_t differ = static_cast<uint64_t>(at.nanoseconds()) ^ base_;
    return differ == 0 ? 0 : static_cast<size_t>(64 - __builtin_clzll(differ));
  }
  // No event in bucket b >= 1 is due before this (its bit b - 1 is set where the base's is clear, and
  // its higher bits are the base's).
  Time bucket_floor(size_t b) const {
    return Time::ns(static_cast<int64_t>(((base_ >> (b - 1)) + 1) << (b - 1)));
  }
  // The lane of a delay other than zero (remembered in last_lane_), opened if `open` and one is free;
  // nullptr if none.
  Lane* lane_for(Time delay, bool open);
  // The lane of a recurring delay (remembered in last_recurring_), opened if one is free; nullptr if
  // none.
  Lane* recurring_lane_for(Time delay);
  uint32_t allocate_slot() {
    if (free_slots_.empty()) return new_slot();
    const uint32_t slot = free_slots_.back();
    free_slots_.pop_back();
    return slot;
  }
  uint32_t new_slot();
  // reschedule() of a handle that may be pending.
  Handle move(Handle handle, Time at, Callback callback);
  Handle insert(Time at, uint32_t slot) {
    add({at, next_sequence_++, slot});
    ++in_buckets_;
    return (static_cast<uint64_t>(slots_[slot].generation) << 32) | slot;
  }
  void add(const Entry& e) {
    assert(static_cast<uint64_t>(e.at.nanoseconds()) >= base_);  // never before the last taken
    const size_t b = bucket_of(e.at);
    Bucket& bucket = buckets_[b];
    Slot& s = slots_[e.slot];
    s.bucket = static_cast<uint8_t>(b);
    s.index = static_cast<int32_t>(bucket.size());
    bucket.push_back(e);
    if (b == 0) {
      ++live_in_front_;
      return;
    }
    occupied_ |= uint64_t{1} << b;
    // A search's answer stands unless this entry went to its bucket or below, and is earlier.
    if (found_bucket_ < 0 || b > static_cast<size_t>(found_bucket_)) return;
    if (b == static_cast<size_t>(found_bucket_) && !earlier(e, bucket[found_index_])) return;
    found_bucket_ = -1;
  }
  void remove(uint32_t slot);
  // Moves bucket 0's front past cancelled entries, emptying the bucket when none is pending.
  void pass_cancelled();
  // The earliest entry of the radix queue, nullptr when it is empty; `lane` (nullptr: none) is the
  // earliest lane front: when it is due before every bucket's floor the buckets are not searched, and
  // the result is then nullptr as well.
  const Entry* earliest(const LaneEntry* lane) const;
  // Takes the radix queue's earliest entry, `e` (earliest()'s answer): the base moves to its time.
  Entry take(const Entry* e);
  // The lane of `lanes` (lanes_, const or not) whose front is earliest, nullptr when all are empty.
  template <class Lanes>
  static auto earliest_lane(Lanes& lanes) -> decltype(&lanes.front()) {
    decltype(&lanes.front()) best = nullptr;
    for (auto& l : lanes)
      if (!l.empty() && (best == nullptr || earlier(l.front(), best->front()))) best = &l;
    return best;
  }
  void release(uint32_t slot);
  // pop() of the radix queue's earliest entry, which is the earliest of all (out of line: most
  // events come from the lanes).
  [[gnu::noinline]] Time pop_bucket(Callback& callback, Action& action);
  [[noreturn, gnu::noinline]] static void pop_empty();  // pop()'s error
  // Whether `lane` (a lane's front) is due before the radix queue's earliest entry.
  bool lane_first(const LaneEntry& lane) const {
    const Entry* e = earliest(&lane);
    return e == nullptr || earlier(lane, *e);
  }

  std::vector<Slot> slots_;
  std::vector<Action> actions_;  // by slot, for events scheduled as an Action
  std::vector<uint32_t> free_slots_;
  Bucket buckets_[kBuckets];
  size_t front_ = 0;          // bucket 0's first pending entry (cancelled ones are passed)
  uint64_t occupied_ = 0;     // bit b: bucket b >= 1 is not empty
  uint64_t base_ = 0;         // every pending entry is due at or after it; bucket 0's are due at it
  size_t in_buckets_ = 0;     // pending entries (bucket 0's cancelled ones not counted)
  size_t live_in_front_ = 0;  // of them in bucket 0
  // earliest()'s last search of a bucket: the bucket and the index of its earliest entry, until that
  // bucket or a lower one changes (-1: none). pop() and peek() ask before every event while most
  // events come from the lanes; without it the 1024-rank ring end to end took 29 % more
  // instructions, rescanning the same bucket.
  mutable int found_bucket_ = -1;
  mutable size_t found_index_ = 0;
  Bucket spread_;              // take()'s scratch
  std::vector<Lane> lanes_;    // lanes_[0]: delay 0, always there
  size_t last_lane_ = 0;       // the lane lane_for() found last (post() tries it first)
  size_t last_recurring_ = 0;  // the lane schedule_recurring() used last (0: none yet)
  size_t in_lanes_ = 0;
  Time now_;
  uint64_t next_sequence_ = 0;
};

// Virtual time plus the queue. `now()` only moves forward, to the time of the event being processed.
class Engine {
 public:
  Time now() const { return queue_.now(); }
  EventQueue::Handle at(Time when, EventQueue::Action action);
  EventQueue::Handle at(Time when, Callback callback) {
    if (when < now()) in_the_past(when);
    return queue_.schedule(when, callback);
  }
  EventQueue::Handle after(Time delay, EventQueue::Action action) {
    return at(now() + delay, std::move(action));
  }
  EventQueue::Handle after(Time delay, Callback callback) { return at(now() + delay, callback); }
  // An event that will not be cancelled, `delay` from now. `recurring`: the caller posts events this
  // far ahead over and over (a route latency), so they get a first-in first-out lane of their own while
  // one is free. The order events run in is the same either way.
  void post(Time delay, Callback callback, bool recurring = false) {
    if (delay < Time::zero()) posted_in_the_past(delay);
    queue_.post(now() + delay, callback, recurring);
  }
  // at(when, callback) of an event scheduled this far ahead over and over (EventQueue::
  // schedule_recurring): cancellable, and the order events run in is the same.
  EventQueue::Handle at_recurring(Time when, Callback callback) {
    if (when < now()) in_the_past(when);
    return queue_.schedule_recurring(when, callback);
  }
  bool cancel(EventQueue::Handle handle) { return queue_.cancel(handle); }
  // cancel(handle) then at(when, callback), cheaper (EventQueue::reschedule).
  EventQueue::Handle reschedule(EventQueue::Handle handle, Time when, Callback callback) {
    if (when < now()) in_the_past(when);
    return queue_.reschedule(handle, when, callback);
  }
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
  // EventQueue::peek_now_lane: the earliest wake-up, a hint of what runs soon (for prefetching).
  Callback peek_wake() const { return queue_.peek_now_lane(); }
  // Runs the earliest event (advancing now() to its time), or the deferred callback when no event is
  // left at now().
  [[gnu::always_inline]] void step() {  // inline: once per event
    if (deferred_due()) {
      run_deferred();
      return;
    }
    Callback callback;
    queue_.pop(callback, action_);
    ++processed_;
    if (callback.fn != nullptr)
      callback();
    else
      run_action();
  }
  // Drops every pending event (after a failure).
  void clear() {
    queue_.clear();
    deferred_ = {};
  }
  uint64_t events_processed() const { return processed_; }

 private:
  // The errors of at() and reschedule(), and of post(), out of line.
  [[noreturn]] void in_the_past(Time when) const;
  [[noreturn]] static void posted_in_the_past(Time delay);
  void run_deferred();
  void run_action();
  bool deferred_due() const {
    return deferred() && (queue_.empty() || queue_.next_time() > now());
  }
  EventQueue queue_;
  EventQueue::Action action_;  // the running event's, when it was scheduled as an Action
  Callback deferred_;          // defer()'s, until it runs
  uint64_t processed_ = 0;
};

}  // namespace bagua::netsim
