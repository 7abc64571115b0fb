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

void MaxMinSolver::push(Entry e) {
  heap_.push_back(e);
  std::push_heap(heap_.begin(), heap_.end(), Later{});
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
    ++version_[l];
    if (unfrozen_[l] > 0 && !is_touched_[l]) {
      is_touched_[l] = 1;
      touched_.push_back(static_cast<int32_t>(l));
    }
  }
}

void MaxMinSolver::push_touched() {
  for (const int32_t link : touched_) {
    const auto l = static_cast<size_t>(link);
    is_touched_[l] = 0;
    if (unfrozen_[l] > 0) push({remaining_[l] / unfrozen_[l], 0, link, version_[l]});
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
  version_.assign(n_links, 0);
  frozen_.assign(n_flows, 0);
  frozen_count_ = 0;
  is_touched_.assign(n_links, 0);
  touched_.clear();
  rate_.assign(n_flows, kUncapped);
  heap_.clear();

  for (size_t l = 0; l < n_links; ++l)
    if (unfrozen_[l] > 0)
      heap_.push_back({remaining_[l] / unfrozen_[l], 0, static_cast<int32_t>(l), 0});
  for (size_t f = 0; f < n_flows; ++f)
    if (cap_[f] != kUncapped) heap_.push_back({cap_[f], 1, static_cast<int32_t>(f), 0});
  std::make_heap(heap_.begin(), heap_.end(), Later{});

  while (frozen_count_ < n_flows && !heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    const Entry e = heap_.back();
    heap_.pop_back();
    const auto i = static_cast<size_t>(e.index);
    if (e.kind == 1) {
      if (!frozen_[i]) {
        freeze(e.index, e.level);
        push_touched();
      }
      continue;
    }
    if (e.version != version_[i] || unfrozen_[i] == 0) continue;  // stale
    const double level = e.level;
    for (int32_t k = link_begin_[i]; k < link_begin_[i + 1]; ++k) {
      const int32_t f = link_flows_[static_cast<size_t>(k)];
      if (!frozen_[static_cast<size_t>(f)]) freeze(f, level);
    }
    push_touched();
  }
  // Flows that cross no link and have no cap keep +infinity.
  return rate_;
}

}  // namespace bagua::netsim
