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

void MaxMinSolver::freeze(int flow, double rate) {
  frozen_[static_cast<size_t>(flow)] = 1;
  ++frozen_count_;
  rate_[static_cast<size_t>(flow)] = rate;
  for (int32_t i = flow_begin_[static_cast<size_t>(flow)];
       i < flow_begin_[static_cast<size_t>(flow) + 1]; ++i) {
    const auto l = static_cast<size_t>(flow_links_[static_cast<size_t>(i)]);
    remaining_[l] = std::max(0.0, remaining_[l] - rate);
    --unfrozen_[l];
    if (!is_touched_[l]) {
      is_touched_[l] = 1;
      touched_.push_back(static_cast<int32_t>(l));
    }
  }
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
  std::vector<int32_t>& fill = unfrozen_;  // borrowed as insertion cursors, reset below
  fill.assign(link_begin_.begin(), link_begin_.end() - 1);
  for (size_t f = 0; f < n_flows; ++f)
    for (int32_t i = flow_begin_[f]; i < flow_begin_[f + 1]; ++i)
      link_flows_[static_cast<size_t>(
          fill[static_cast<size_t>(flow_links_[static_cast<size_t>(i)])]++)] = static_cast<int32_t>(f);

  remaining_.assign(capacity_.begin(), capacity_.end());
  unfrozen_.resize(n_links);
  for (size_t l = 0; l < n_links; ++l)
    unfrozen_[l] = link_begin_[l + 1] - link_begin_[l];
  frozen_.assign(n_flows, 0);
  frozen_count_ = 0;
  is_touched_.assign(n_links, 0);
  touched_.clear();
  rate_.assign(n_flows, kUncapped);

  heap_.clear();
  position_.assign(n_links + n_flows, -1);
  for (size_t l = 0; l < n_links; ++l)
    if (unfrozen_[l] > 0) heap_.push_back({remaining_[l] / unfrozen_[l], static_cast<int32_t>(l)});
  // A flow's cap matters only below the capacity of each of its links: every level a link has is at
  // most its capacity (remaining <= capacity, at least one unfrozen flow), so while the flow is
  // unfrozen one of its links has a key below the cap (or equal, and links pop first), and the flow
  // freezes there first; its cap's entry would only ever be skipped.
  for (size_t f = 0; f < n_flows; ++f) {
    if (cap_[f] == kUncapped) continue;
    double lowest_capacity = kUncapped;
    for (int32_t i = flow_begin_[f]; i < flow_begin_[f + 1]; ++i)
      lowest_capacity = std::min(lowest_capacity,
                                 capacity_[static_cast<size_t>(flow_links_[static_cast<size_t>(i)])]);
    if (cap_[f] < lowest_capacity) heap_.push_back({cap_[f], static_cast<int32_t>(n_links + f)});
  }
  for (size_t at = 0; at < heap_.size(); ++at)
    position_[static_cast<size_t>(heap_[at].item)] = static_cast<int32_t>(at);
  for (size_t at = (heap_.size() + kArity - 1) / kArity; at-- > 0;)
    sift_down(at);

  while (frozen_count_ < n_flows && !heap_.empty()) {
    // A link's key is at most its level (rekey_touched): a key below its link's level is stale, and
    // the top's key is re-keyed until it is its level. Then the top is the least (level, item) of
    // all: every other entry's level is at least its key.
    if (const Entry& top = heap_.front(); static_cast<size_t>(top.item) < n_links) {
      const auto l = static_cast<size_t>(top.item);
      if (unfrozen_[l] == 0) {  // every flow on it froze elsewhere
        pop();
        continue;
      }
      if (const double level = remaining_[l] / unfrozen_[l]; level != top.level) {
        heap_.front().level = level;
        sift_down(0);
        continue;
      }
    }
    const Entry e = pop();
    if (static_cast<size_t>(e.item) >= n_links) {  // a flow's cap
      const int flow = e.item - static_cast<int>(n_links);
      if (!frozen_[static_cast<size_t>(flow)]) {
        freeze(flow, e.level);
        rekey_touched();
      }
      continue;
    }
    // A link: every flow still unfrozen on it freezes at its level.
    const auto i = static_cast<size_t>(e.item);
    for (int32_t k = link_begin_[i]; k < link_begin_[i + 1]; ++k) {
      const int32_t f = link_flows_[static_cast<size_t>(k)];
      if (!frozen_[static_cast<size_t>(f)]) freeze(f, e.level);
    }
    rekey_touched();
  }
  // Flows that cross no link and have no cap keep +infinity.
  return rate_;
}

}  // namespace bagua::netsim
