#include "netsim/max_min.h"

#include <algorithm>

#include "core/check.h"

namespace bagua::netsim {

void MaxMinSolver::clear() {
  capacity_.clear();
  cap_.clear();
  flow_begin_.assign(1, 0);
  flow_links_.clear();
}

int MaxMinSolver::add_link(double capacity) {
  BAGUA_CHECK(capacity > 0, "max-min link capacity must be > 0, got " + std::to_string(capacity));
  capacity_.push_back(capacity);
  return static_cast<int>(capacity_.size() - 1);
}

int MaxMinSolver::add_flow(std::span<const int> links, double cap) {
  BAGUA_CHECK(cap > 0, "max-min flow cap must be > 0, got " + std::to_string(cap));
  for (int l : links) {
    BAGUA_CHECK(l >= 0 && l < this->links(), "max-min flow on unknown link " + std::to_string(l));
    flow_links_.push_back(l);
  }
  flow_begin_.push_back(static_cast<int32_t>(flow_links_.size()));
  cap_.push_back(cap);
  return static_cast<int>(cap_.size() - 1);
}

void MaxMinSolver::sift_up(size_t at) {
  const Entry e = heap_[at];
  while (at > 0) {
    const size_t parent = (at - 1) / kArity;
    if (!before(e, heap_[parent])) break;
    place(at, heap_[parent]);
    at = parent;
  }
  place(at, e);
}

void MaxMinSolver::sift_down(size_t at) {
  const size_t n = heap_.size();
  const Entry e = heap_[at];
  for (;;) {
    const size_t first = kArity * at + 1;
    if (first >= n) break;
    // The least of the (up to kArity) children, side by side in memory.
    size_t child = first;
    const size_t last = std::min(first + kArity, n);
    for (size_t c = first + 1; c < last; ++c)
      if (before(heap_[c], heap_[child])) child = c;
    if (!before(heap_[child], e)) break;
    place(at, heap_[child]);
    at = child;
  }
  place(at, e);
}

MaxMinSolver::Entry MaxMinSolver::pop() {
  const Entry top = heap_.front();
  position_[static_cast<size_t>(top.item)] = -1;
  const Entry last = heap_.back();
  heap_.pop_back();
  if (!heap_.empty()) {
    heap_.front() = last;
    sift_down(0);
  }
  return top;
}

void MaxMinSolver::rekey_touched() {
  for (const int32_t link : touched_) {
    const auto l = static_cast<size_t>(link);
    is_touched_[l] = 0;
    const int32_t at = position_[l];
    // Popped (the bottleneck), or left with no unfrozen flow (skipped when it reaches the top).
    if (at < 0 || unfrozen_[l] == 0) continue;
    // A level that rose is left stale (solve() re-keys it when it reaches the top); one that fell (by
    // rounding: the flows frozen here froze at no more than its level) moves up now.
    const double level = remaining_[l] / unfrozen_[l];
    Entry& e = heap_[static_cast<size_t>(at)];
    if (level < e.level) {
      e.level = level;
      sift_up(static_cast<size_t>(at));
    }
  }
  touched_.clear();
}

struct MaxMinSolver::Built {
  const MaxMinSolver& s;
  size_t links() const { return s.capacity_.size(); }
  size_t flows() const { return s.cap_.size(); }
  double capacity(size_t l) const { return s.capacity_[l]; }
  double cap(size_t f) const { return s.cap_[f]; }
  size_t flows_on(size_t l) const {
    return static_cast<size_t>(s.link_begin_[l + 1] - s.link_begin_[l]);
  }
  template <class Fn>
  void each_flow_on(size_t l, Fn&& fn) const {
    for (int32_t k = s.link_begin_[l]; k < s.link_begin_[l + 1]; ++k)
      fn(static_cast<size_t>(s.link_flows_[static_cast<size_t>(k)]));
  }
  template <class Fn>
  void each_link_of(size_t f, Fn&& fn) const {
    for (int32_t i = s.flow_begin_[f]; i < s.flow_begin_[f + 1]; ++i)
      fn(static_cast<size_t>(s.flow_links_[static_cast<size_t>(i)]));
  }
};

const std::vector<double>& MaxMinSolver::solve() {
  const size_t n_links = capacity_.size();
  const size_t n_flows = cap_.size();
  // Links -> flows, in flow order.
  link_begin_.assign(n_links + 1, 0);
  for (int32_t l : flow_links_)
    ++link_begin_[static_cast<size_t>(l) + 1];
  for (size_t l = 0; l < n_links; ++l)
    link_begin_[l + 1] += link_begin_[l];
  link_flows_.resize(flow_links_.size());
  std::vector<int32_t>& fill = unfrozen_;  // borrowed as insertion cursors (solve(System) resets it)
  fill.assign(link_begin_.begin(), link_begin_.end() - 1);
  for (size_t f = 0; f < n_flows; ++f)
    for (int32_t i = flow_begin_[f]; i < flow_begin_[f + 1]; ++i)
      link_flows_[static_cast<size_t>(
          fill[static_cast<size_t>(flow_links_[static_cast<size_t>(i)])]++)] = static_cast<int32_t>(f);
  return solve(Built{*this});
}

}  // namespace bagua::netsim
