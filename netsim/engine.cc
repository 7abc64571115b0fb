#include "netsim/engine.h"

#include <cmath>

#include "core/check.h"

namespace bagua::netsim {

Time ceil_ns(double ns) {
  const double tolerance = 1e-6 + ns * 1e-13;
  const double c = std::ceil(ns - tolerance);
  return Time::ns(c > 0 ? static_cast<int64_t>(c) : 0);
}

EventQueue::Handle EventQueue::schedule(Time at, Action action) {
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    BAGUA_CHECK(slots_.size() < UINT32_MAX, "event queue full");
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& s = slots_[slot];
  s.action = std::move(action);
  heap_.push_back({at, next_sequence_++, slot});
  s.heap_index = static_cast<int32_t>(heap_.size() - 1);
  sift_up(heap_.size() - 1);
  return (static_cast<uint64_t>(s.generation) << 32) | slot;
}

bool EventQueue::cancel(Handle handle) {
  const uint32_t slot = static_cast<uint32_t>(handle & 0xffffffffu);
  const uint32_t generation = static_cast<uint32_t>(handle >> 32);
  if (handle == kNoEvent || slot >= slots_.size()) return false;
  const Slot& s = slots_[slot];
  if (s.generation != generation || s.heap_index < 0) return false;
  remove_at(static_cast<size_t>(s.heap_index));
  release(slot);
  return true;
}

Time EventQueue::next_time() const {
  BAGUA_CHECK(!heap_.empty(), "next_time of an empty event queue");
  return heap_.front().at;
}

Time EventQueue::pop(Action& action) {
  BAGUA_CHECK(!heap_.empty(), "pop from an empty event queue");
  const Entry top = heap_.front();
  remove_at(0);
  action = std::move(slots_[top.slot].action);
  release(top.slot);
  return top.at;
}

void EventQueue::clear() {
  for (const Entry& e : heap_)
    release(e.slot);
  heap_.clear();
}

void EventQueue::release(uint32_t slot) {
  Slot& s = slots_[slot];
  s.action = nullptr;
  s.heap_index = -1;
  ++s.generation;
  if (s.generation == 0) s.generation = 1;  // keep handles non-zero
  free_slots_.push_back(slot);
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
  const Entry e = heap_[index];
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
  const Entry e = heap_[index];
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
  BAGUA_CHECK(when >= now_,
              "event scheduled in the past: at " + to_string(when) + ", now " + to_string(now_));
  return queue_.schedule(when, std::move(action));
}

void Engine::step() {
  EventQueue::Action action;
  now_ = queue_.pop(action);
  ++processed_;
  action();
}

}  // namespace bagua::netsim
