#include "netsim/engine.h"

#include <cmath>
#include <utility>

#include "core/check.h"

namespace bagua::netsim {

Time ceil_ns(double ns) {
  const double tolerance = 1e-6 + ns * 1e-13;
  const double c = std::ceil(ns - tolerance);
  return Time::ns(c > 0 ? static_cast<int64_t>(c) : 0);
}

void EventQueue::Lane::grow() {
  // Twice the size, unrolling the ring so that it starts at 0.
  std::vector<LaneEntry> grown(ring_.empty() ? 64 : 2 * ring_.size());
  for (size_t i = 0; i < size_; ++i)
    grown[i] = ring_[(head_ + i) & (ring_.size() - 1)];
  ring_ = std::move(grown);
  head_ = 0;
}

uint32_t EventQueue::allocate_slot() {
  if (!free_slots_.empty()) {
    const uint32_t slot = free_slots_.back();
    free_slots_.pop_back();
    return slot;
  }
  BAGUA_CHECK(slots_.size() < UINT32_MAX, "event queue full");
  slots_.emplace_back();
  return static_cast<uint32_t>(slots_.size() - 1);
}

EventQueue::Handle EventQueue::schedule(Time at, Callback callback) {
  const uint32_t slot = allocate_slot();
  Slot& s = slots_[slot];
  s.callback = callback;
  s.is_action = false;
  return push_heap(at, slot);
}

EventQueue::Handle EventQueue::schedule(Time at, Action action) {
  const uint32_t slot = allocate_slot();
  if (actions_.size() <= slot) actions_.resize(slots_.size());
  actions_[slot] = std::move(action);
  Slot& s = slots_[slot];
  s.callback = {};
  s.is_action = true;
  return push_heap(at, slot);
}

EventQueue::Handle EventQueue::push_heap(Time at, uint32_t slot) {
  heap_.push_back({at, next_sequence_++, slot});
  if (batch_)
    place(heap_.size() - 1, heap_.back());
  else
    sift_up(heap_.size() - 1);
  return (static_cast<uint64_t>(slots_[slot].generation) << 32) | slot;
}

EventQueue::EventQueue() {
  lanes_.reserve(kMaxLanes + 1);
  lanes_.emplace_back(Time::zero());
}

EventQueue::Lane* EventQueue::lane_for(Time delay, bool open) {
  if (delay == Time::zero()) return &lanes_[0];
  for (Lane& l : lanes_)
    if (l.delay() == delay) return &l;
  if (!open || lanes_.size() == kMaxLanes + 1) return nullptr;
  lanes_.emplace_back(delay);
  return &lanes_.back();
}

void EventQueue::post(Time at, Callback callback, bool recurring_delay) {
  // A lane takes the event if its delay is exactly at - now: the lane's events were all posted at
  // times <= now, so this one is due no earlier than any of them and has the largest sequence.
  Lane* lane = lane_for(at - now_, recurring_delay);
  if (lane == nullptr) {
    schedule(at, callback);
    return;
  }
  lane->push({at, next_sequence_++, callback});
  ++in_lanes_;
}

bool EventQueue::cancel(Handle handle) {
  const uint32_t slot = static_cast<uint32_t>(handle & 0xffffffffu);
  const uint32_t generation = static_cast<uint32_t>(handle >> 32);
  if (handle == kNoEvent || slot >= slots_.size()) return false;
  const Slot& s = slots_[slot];
  if (s.generation != generation || s.heap_index < 0) return false;
  BAGUA_CHECK(!batch_, "cancel of a pending event inside a batch");
  remove_at(static_cast<size_t>(s.heap_index));
  release(slot);
  return true;
}

EventQueue::Handle EventQueue::reschedule(Handle handle, Time at, Callback callback) {
  const uint32_t slot = static_cast<uint32_t>(handle & 0xffffffffu);
  const uint32_t generation = static_cast<uint32_t>(handle >> 32);
  if (handle == kNoEvent || slot >= slots_.size() || slots_[slot].generation != generation ||
      slots_[slot].heap_index < 0 || slots_[slot].is_action) {
    cancel(handle);
    return schedule(at, callback);
  }
  Slot& s = slots_[slot];
  s.callback = callback;
  const auto index = static_cast<size_t>(s.heap_index);
  HeapEntry& e = heap_[index];
  // The new key (at, next sequence) is later than the old one unless `at` moved earlier.
  const bool earlier_than_before = at < e.at;
  e.at = at;
  e.sequence = next_sequence_++;
  if (batch_) return handle;  // ordered at end_batch()
  if (earlier_than_before)
    sift_up(index);
  else
    sift_down(index);
  return handle;
}

void EventQueue::begin_batch() {
  BAGUA_CHECK(!batch_, "a batch of events begun inside another");
  batch_ = true;
}

void EventQueue::end_batch() {
  BAGUA_CHECK(batch_, "end_batch without begin_batch");
  batch_ = false;
  // Floyd's construction: every inner node from the last to the root sinks into its subtrees, each
  // already a heap.
  const size_t n = heap_.size();
  if (n < 2) return;
  for (size_t i = (n - 2) / kArity + 1; i-- > 0;)
    sift_down(i);
}

Time EventQueue::next_time() const {
  BAGUA_CHECK(!empty(), "next_time of an empty event queue");
  Time best = heap_.empty() ? Time::max() : heap_.front().at;
  for (const Lane& l : lanes_)
    if (!l.empty() && l.front().at < best) best = l.front().at;
  return best;
}

Callback EventQueue::peek() const {
  const Lane* from = nullptr;
  for (const Lane& l : lanes_)
    if (!l.empty() && (from == nullptr || earlier(l.front(), from->front()))) from = &l;
  if (from != nullptr && (heap_.empty() || earlier(from->front(), heap_.front())))
    return from->front().callback;
  if (heap_.empty()) return {};
  return slots_[heap_.front().slot].callback;
}

Time EventQueue::pop(Callback& callback, Action& action) {
  BAGUA_CHECK(!empty(), "pop from an empty event queue");
  BAGUA_CHECK(!batch_, "pop inside a batch of events");
  Lane* from = nullptr;
  for (Lane& l : lanes_)
    if (!l.empty() && (from == nullptr || earlier(l.front(), from->front()))) from = &l;
  if (from != nullptr && (heap_.empty() || earlier(from->front(), heap_.front()))) {
    const LaneEntry& e = from->front();
    callback = e.callback;
    now_ = e.at;
    from->pop_front();
    --in_lanes_;
    return now_;
  }
  const HeapEntry top = heap_.front();
  remove_top();
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
  batch_ = false;
  for (const HeapEntry& e : heap_)
    release(e.slot);
  heap_.clear();
  for (Lane& l : lanes_)
    l.clear();
  in_lanes_ = 0;
}

void EventQueue::release(uint32_t slot) {
  Slot& s = slots_[slot];
  if (s.is_action) actions_[slot] = nullptr;
  s.is_action = false;
  s.heap_index = -1;
  ++s.generation;
  if (s.generation == 0) s.generation = 1;  // keep handles non-zero
  free_slots_.push_back(slot);
}

void EventQueue::remove_top() {
  // The hole left at the root sinks along the earlier child of each level to a leaf, and the last
  // entry fills it from there, rising as far as it must: fewer comparisons than sinking the last entry
  // from the root, as it usually belongs near the bottom.
  const HeapEntry last = heap_.back();
  heap_.pop_back();
  const size_t n = heap_.size();
  if (n == 0) return;
  size_t hole = 0;
  for (;;) {
    const size_t first = kArity * hole + 1;
    if (first >= n) break;
    size_t child = first;
    for (size_t c = first + 1; c < first + kArity && c < n; ++c)
      if (earlier(heap_[c], heap_[child])) child = c;
    place(hole, heap_[child]);
    hole = child;
  }
  while (hole > 0) {
    const size_t parent = (hole - 1) / kArity;
    if (!earlier(last, heap_[parent])) break;
    place(hole, heap_[parent]);
    hole = parent;
  }
  place(hole, last);
}

void EventQueue::remove_at(size_t index) {
  const size_t last = heap_.size() - 1;
  if (index != last) {
    place(index, heap_[last]);
    heap_.pop_back();
    sift_down(index);
    sift_up(index);
  } else {
    heap_.pop_back();
  }
}

void EventQueue::sift_up(size_t index) {
  const HeapEntry e = heap_[index];
  while (index > 0) {
    const size_t parent = (index - 1) / kArity;
    if (!earlier(e, heap_[parent])) break;
    place(index, heap_[parent]);
    index = parent;
  }
  place(index, e);
}

void EventQueue::sift_down(size_t index) {
  const size_t n = heap_.size();
  const HeapEntry e = heap_[index];
  for (;;) {
    const size_t first = kArity * index + 1;
    if (first >= n) break;
    size_t child = first;
    for (size_t c = first + 1; c < first + kArity && c < n; ++c)
      if (earlier(heap_[c], heap_[child])) child = c;
    if (!earlier(heap_[child], e)) break;
    place(index, heap_[child]);
    index = child;
  }
  place(index, e);
}

EventQueue::Handle Engine::at(Time when, EventQueue::Action action) {
  BAGUA_CHECK(when >= now(),
              "event scheduled in the past: at " + to_string(when) + ", now " + to_string(now()));
  return queue_.schedule(when, std::move(action));
}

EventQueue::Handle Engine::at(Time when, Callback callback) {
  BAGUA_CHECK(when >= now(),
              "event scheduled in the past: at " + to_string(when) + ", now " + to_string(now()));
  return queue_.schedule(when, callback);
}

EventQueue::Handle Engine::reschedule(EventQueue::Handle handle, Time when, Callback callback) {
  BAGUA_CHECK(when >= now(),
              "event scheduled in the past: at " + to_string(when) + ", now " + to_string(now()));
  return queue_.reschedule(handle, when, callback);
}

void Engine::post(Time delay, Callback callback, bool recurring) {
  BAGUA_CHECK(delay >= Time::zero(), "event posted in the past: delay " + to_string(delay));
  queue_.post(now() + delay, callback, recurring);
}

void Engine::defer(Callback callback) {
  BAGUA_CHECK(!deferred(), "a second callback deferred to the end of the instant");
  deferred_ = callback;
}

void Engine::step() {
  if (deferred_due()) {
    const Callback deferred = std::exchange(deferred_, Callback{});
    ++processed_;
    deferred();
    return;
  }
  Callback callback;
  queue_.pop(callback, action_);
  ++processed_;
  if (callback.fn != nullptr) {
    callback();
  } else {
    EventQueue::Action running = std::move(action_);
    running();
  }
}

}  // namespace bagua::netsim
