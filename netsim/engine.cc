#include "netsim/engine.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "core/check.h"

namespace bagua::netsim {

Time ceil_ns_exact(double ns) {
  const double tolerance = 1e-6 + ns * 1e-13;
  const double c = std::ceil(ns - tolerance);
  return Time::ns(c > 0 ? static_cast<int64_t>(c) : 0);
}

void EventQueue::Lane::grow() {
  // Twice the size, unrolling the ring so that it starts at 0.
  std::vector<LaneEntry> grown(ring_.empty() ? 64 : 2 * ring_.size());
  for (size_t i = 0; i < size_; ++i)
    grown[i] = ring_[(head_ + i) & mask_];
  ring_ = std::move(grown);
  capacity_ = ring_.size();
  mask_ = capacity_ - 1;
  head_ = 0;
}

uint32_t EventQueue::new_slot() {
  BAGUA_CHECK(slots_.size() < UINT32_MAX, "event queue full");
  slots_.emplace_back();
  return static_cast<uint32_t>(slots_.size() - 1);
}

EventQueue::Handle EventQueue::schedule(Time at, Action action) {
  const uint32_t slot = allocate_slot();
  if (actions_.size() <= slot) actions_.resize(slots_.size());
  actions_[slot] = std::move(action);
  Slot& s = slots_[slot];
  s.callback = {};
  s.is_action = true;
  return insert(at, slot);
}

void EventQueue::Bucket::grow() {
  data_.resize(data_.empty() ? 64 : 2 * data_.size());
}

void EventQueue::remove(uint32_t slot) {
  const Slot& s = slots_[slot];
  const size_t b = s.bucket;
  const auto index = static_cast<size_t>(s.index);
  Bucket& bucket = buckets_[b];
  if (b == 0) {  // kept in order: marked, and passed over once it is at the front
    bucket[index].slot = kCancelled;
    --live_in_front_;
    pass_cancelled();
    return;
  }
  if (static_cast<int>(b) == found_bucket_) found_bucket_ = -1;
  if (index + 1 != bucket.size()) {
    bucket[index] = bucket.back();
    slots_[bucket[index].slot].index = static_cast<int32_t>(index);
  }
  bucket.pop_back();
  if (bucket.empty()) occupied_ &= ~(uint64_t{1} << b);
}

EventQueue::EventQueue() {
  lanes_.reserve(kMaxLanes + 1);
  lanes_.emplace_back(Time::zero());
}

EventQueue::Lane* EventQueue::lane_for(Time delay, bool open) {
  for (size_t i = 1; i < lanes_.size(); ++i)
    if (lanes_[i].delay() == delay) {
      last_lane_ = i;
      return &lanes_[i];
    }
  if (!open || lanes_.size() == kMaxLanes + 1) return nullptr;
  lanes_.emplace_back(delay);
  last_lane_ = lanes_.size() - 1;
  return &lanes_.back();
}

EventQueue::Lane* EventQueue::recurring_lane_for(Time delay) {
  Lane* lane = lane_for(delay, /*open=*/true);
  if (lane != nullptr) last_recurring_ = static_cast<size_t>(lane - lanes_.data());
  return lane;
}

bool EventQueue::cancel(Handle handle) {
  if ((handle & kLaneHandle) != 0) {
    const size_t lane = (handle & ~kLaneHandle) >> kLaneShift;
    if (lane >= lanes_.size() || !lanes_[lane].cancel(handle & ((Handle{1} << kLaneShift) - 1)))
      return false;
    --in_lanes_;
    return true;
  }
  const uint32_t slot = static_cast<uint32_t>(handle & 0xffffffffu);
  const uint32_t generation = static_cast<uint32_t>(handle >> 32);
  if (handle == kNoEvent || slot >= slots_.size()) return false;
  const Slot& s = slots_[slot];
  if (s.generation != generation || s.index < 0) return false;
  remove(slot);
  --in_buckets_;
  release(slot);
  return true;
}

EventQueue::Handle EventQueue::move(Handle handle, Time at, Callback callback) {
  const uint32_t slot = static_cast<uint32_t>(handle & 0xffffffffu);
  const uint32_t generation = static_cast<uint32_t>(handle >> 32);
  if (handle == kNoEvent || slot >= slots_.size() || slots_[slot].generation != generation ||
      slots_[slot].index < 0 || slots_[slot].is_action) {
    cancel(handle);
    return schedule(at, callback);
  }
  // The same slot and handle, a new key (at, next sequence): where schedule() would put a new event.
  remove(slot);
  slots_[slot].callback = callback;
  add({at, next_sequence_++, slot});
  return handle;
}

void EventQueue::pass_cancelled() {
  Bucket& front = buckets_[0];
  while (front_ < front.size() && front[front_].slot == kCancelled)
    ++front_;
  if (front_ == front.size()) {  // nothing pending left in it
    front.clear();
    front_ = 0;
  }
}

const EventQueue::Entry* EventQueue::earliest(const LaneEntry* lane) const {
  if (live_in_front_ > 0) return &buckets_[0][front_];  // never a cancelled entry (remove())
  if (occupied_ == 0) return nullptr;
  const auto b = static_cast<size_t>(__builtin_ctzll(occupied_));
  const Bucket& bucket = buckets_[b];
  if (found_bucket_ == static_cast<int>(b)) return &bucket[found_index_];
  if (lane != nullptr && lane->at < bucket_floor(b)) return nullptr;  // the lane's is earlier
  size_t best = 0;
  for (size_t i = 1; i < bucket.size(); ++i)
    if (earlier(bucket[i], bucket[best])) best = i;
  found_bucket_ = static_cast<int>(b);
  found_index_ = best;
  return &bucket[best];
}

EventQueue::Entry EventQueue::take(const Entry* e) {
  if (live_in_front_ == 0) {
    // Bucket 0 holds cancelled entries at most: the base moves to e's time, and e's bucket spreads
    // over the lower ones (each entry differs from the new base in a lower bit, or not at all).
    const size_t b = slots_[e->slot].bucket;
    buckets_[0].clear();
    front_ = 0;
    base_ = static_cast<uint64_t>(e->at.nanoseconds());
    spread_.swap(buckets_[b]);
    occupied_ &= ~(uint64_t{1} << b);
    found_bucket_ = -1;
    for (const Entry& x : spread_)
      add(x);
    spread_.clear();
    // Bucket 0 in sequence order. What spread into it is in the order its bucket held it: the order
    // of scheduling unless a move or cancel swapped an entry out of place.
    Bucket& front = buckets_[0];
    const auto by_sequence = [](const Entry& x, const Entry& y) { return x.sequence < y.sequence; };
    if (!std::is_sorted(front.begin(), front.end(), by_sequence)) {
      std::sort(front.begin(), front.end(), by_sequence);
      for (size_t i = 0; i < front.size(); ++i)
        slots_[front[i].slot].index = static_cast<int32_t>(i);
    }
  }
  Bucket& front = buckets_[0];
  const Entry top = front[front_++];
  --live_in_front_;
  --in_buckets_;
  pass_cancelled();
  return top;
}

Time EventQueue::next_time() const {
  BAGUA_CHECK(!empty(), "next_time of an empty event queue");
  const Lane* const l = earliest_lane(lanes_);
  const LaneEntry* lane = l != nullptr ? &l->front() : nullptr;
  const Entry* e = earliest(lane);
  if (e != nullptr && (lane == nullptr || earlier(*e, *lane))) return e->at;
  return lane->at;
}

Callback EventQueue::peek() const {
  const Lane* const l = earliest_lane(lanes_);
  const LaneEntry* lane = l != nullptr ? &l->front() : nullptr;
  const Entry* e = earliest(lane);
  if (e != nullptr && (lane == nullptr || earlier(*e, *lane))) {
    const Slot& s = slots_[e->slot];
    return s.is_action ? Callback{} : s.callback;
  }
  return lane != nullptr ? lane->callback : Callback{};
}

void EventQueue::pop_empty() {
  BAGUA_CHECK(false, "pop from an empty event queue");
  std::abort();  // not reached: the check fails
}

Time EventQueue::pop_bucket(Callback& callback, Action& action) {
  const Entry top = take(earliest(nullptr));
  Slot& s = slots_[top.slot];
  if (s.is_action) {
    callback = {};
    action = std::move(actions_[top.slot]);
  } else {
    callback = s.callback;
  }
  release(top.slot);
  now_ = top.at;
  return now_;
}

void EventQueue::clear() {
  for (size_t b = 0; b < kBuckets; ++b) {
    Bucket& bucket = buckets_[b];
    for (size_t i = b == 0 ? front_ : 0; i < bucket.size(); ++i)  // bucket 0's before front_ ran
      if (bucket[i].slot != kCancelled) release(bucket[i].slot);
    bucket.clear();
  }
  front_ = 0;
  occupied_ = 0;
  in_buckets_ = live_in_front_ = 0;
  found_bucket_ = -1;
  for (Lane& l : lanes_)
    l.clear();
  in_lanes_ = 0;
}

void EventQueue::release(uint32_t slot) {
  Slot& s = slots_[slot];
  if (s.is_action) actions_[slot] = nullptr;
  s.is_action = false;
  s.index = -1;
  ++s.generation;
  if (s.generation == uint32_t{1} << 31) s.generation = 1;  // 31 bits, never 0: handles non-zero
  free_slots_.push_back(slot);
}

EventQueue::Handle Engine::at(Time when, EventQueue::Action action) {
  BAGUA_CHECK(when >= now(),
              "event scheduled in the past: at " + to_string(when) + ", now " + to_string(now()));
  return queue_.schedule(when, std::move(action));
}

void Engine::in_the_past(Time when) const {
  BAGUA_CHECK(when >= now(),
              "event scheduled in the past: at " + to_string(when) + ", now " + to_string(now()));
  std::abort();  // not reached: the check fails
}

void Engine::posted_in_the_past(Time delay) {
  BAGUA_CHECK(delay >= Time::zero(), "event posted in the past: delay " + to_string(delay));
  std::abort();  // not reached: the check fails
}

void Engine::defer(Callback callback) {
  BAGUA_CHECK(!deferred(), "a second callback deferred to the end of the instant");
  deferred_ = callback;
}

void Engine::run_deferred() {
  const Callback deferred = std::exchange(deferred_, Callback{});
  ++processed_;
  deferred();
}

void Engine::run_action() {
  EventQueue::Action running = std::move(action_);
  running();
}

}  // namespace bagua::netsim
