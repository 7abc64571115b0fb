#include "netsim/network.h"

#include <algorithm>
#include <cmath>
#include <span>

#include "core/check.h"

namespace bagua::netsim {

FlowNetwork::FlowNetwork(const Topology& topology, Bandwidth window_cap, Engine& engine)
    : topology_(topology),
      window_cap_(window_cap.bytes_per_second()),
      engine_(engine),
      active_(topology.links().size()),
      carried_(topology.links().size(), 0),
      link_mark_(topology.links().size(), 0),
      link_local_(topology.links().size(), -1) {
  capacity_.reserve(topology.links().size());
  for (const Link& l : topology.links())
    capacity_.push_back(l.capacity.bytes_per_second());  // the flow model's doubles start here
}

int32_t FlowNetwork::allocate_flow() {
  if (!free_flows_.empty()) {
    const int32_t id = free_flows_.back();
    free_flows_.pop_back();
    return id;
  }
  flows_.emplace_back();
  return static_cast<int32_t>(flows_.size() - 1);
}

void FlowNetwork::enter_transfer_event(void* network, uint64_t id) {
  static_cast<FlowNetwork*>(network)->enter_transfer(static_cast<int32_t>(id));
}

void FlowNetwork::complete_event(void* network, uint64_t id) {
  static_cast<FlowNetwork*>(network)->complete(static_cast<int32_t>(id));
}

void FlowNetwork::start(const Route& route, Bytes bytes, Callback done,
                        std::shared_ptr<void> keep_alive) {
  BAGUA_CHECK(bytes.count() >= 0, "flow of negative size " + std::to_string(bytes.count()));
  const int32_t id = allocate_flow();
  Flow& f = flows_[static_cast<size_t>(id)];
  f.route = route;
  f.bytes = bytes.count();
  f.remaining = static_cast<double>(bytes.count());
  f.rate = 0;
  f.completion = EventQueue::kNoEvent;
  f.done = done;
  f.keep_alive = std::move(keep_alive);
  // Phase 1: the route latency, using no bandwidth. An empty message completes right after it. Route
  // latencies take a few distinct values, each a lane of the event queue.
  const auto uid = static_cast<uint64_t>(id);
  engine_.post(route.latency, {bytes.count() == 0 ? &complete_event : &enter_transfer_event, this, uid},
               /*recurring=*/true);
}

void FlowNetwork::enter_transfer(int32_t id) {
  Flow& f = flows_[static_cast<size_t>(id)];
  f.updated = engine_.now();
  f.position.resize(static_cast<size_t>(f.route.links.size()));
  for (int i = 0; i < f.route.links.size(); ++i) {
    auto& on_link = active_[static_cast<size_t>(f.route.links[i])];
    f.position[static_cast<size_t>(i)] = static_cast<int32_t>(on_link.size());
    on_link.push_back(id);
  }
  // Alone on every link of its route, the flow is a component by itself (what reshare() would find).
  bool alone = true;
  for (int i = 0; i < f.route.links.size(); ++i)
    alone = alone && active_[static_cast<size_t>(f.route.links[i])].size() == 1;
  if (alone)
    set_rate(id, lone_rate(f.route));
  else
    reshare(f.route);
}

void FlowNetwork::complete(int32_t id) {
  Flow& f = flows_[static_cast<size_t>(id)];
  const Route& route = f.route;  // stays until done() (no flow is started before)
  const bool transferring = f.rate > 0;
  if (transferring) {
    // Leave every link: swap-remove, fixing the moved flow's position.
    for (int i = 0; i < route.links.size(); ++i) {
      const auto link = static_cast<size_t>(route.links[i]);
      auto& on_link = active_[link];
      const auto pos = static_cast<size_t>(f.position[static_cast<size_t>(i)]);
      const int32_t moved = on_link.back();
      on_link[pos] = moved;
      on_link.pop_back();
      if (moved != id) {
        Flow& m = flows_[static_cast<size_t>(moved)];
        for (int j = 0; j < m.route.links.size(); ++j)
          if (m.route.links[j] == static_cast<int32_t>(link))
            m.position[static_cast<size_t>(j)] = static_cast<int32_t>(pos);
      }
    }
  }
  for (int i = 0; i < route.links.size(); ++i)
    carried_[static_cast<size_t>(route.links[i])] += f.bytes;
  const Callback done = f.done;
  const std::shared_ptr<void> keep_alive = std::move(f.keep_alive);
  f.completion = EventQueue::kNoEvent;
  free_flows_.push_back(id);
  if (transferring) {
    // Links left empty join no component: reshare() would find no flow to re-solve.
    bool others = false;
    for (int i = 0; i < route.links.size(); ++i)
      others = others || !active_[static_cast<size_t>(route.links[i])].empty();
    if (others) reshare(route);
  }
  done();
}

void FlowNetwork::bring_up_to_date(Flow& f) {
  const Time now = engine_.now();
  if (f.rate > 0 && now > f.updated) {
    f.remaining -= f.rate * static_cast<double>((now - f.updated).nanoseconds()) / 1e9;
    if (f.remaining < 0) f.remaining = 0;
  }
  f.updated = now;
}

void FlowNetwork::schedule_completion(int32_t id) {
  Flow& f = flows_[static_cast<size_t>(id)];
  engine_.cancel(f.completion);
  const Time at = engine_.now() + ceil_ns(f.remaining * 1e9 / f.rate);
  f.completion = engine_.at(at, Callback{&complete_event, this, static_cast<uint64_t>(id)});
}

void FlowNetwork::reshare(const Route& changed) {
  // Collect the component(s): breadth-first over links, in a deterministic order (the order flows sit
  // on each link's list is itself the deterministic result of earlier insertions and removals).
  ++epoch_;
  component_links_.clear();
  component_flows_.clear();
  auto visit_link = [&](int32_t l) {
    if (link_mark_[static_cast<size_t>(l)] == epoch_) return;
    link_mark_[static_cast<size_t>(l)] = epoch_;
    component_links_.push_back(l);
  };
  for (const int32_t link : changed.links)
    visit_link(link);
  for (size_t next = 0; next < component_links_.size(); ++next) {
    for (int32_t id : active_[static_cast<size_t>(component_links_[next])]) {
      Flow& f = flows_[static_cast<size_t>(id)];
      if (f.mark == epoch_) continue;
      f.mark = epoch_;
      component_flows_.push_back(id);
      for (int i = 0; i < f.route.links.size(); ++i)
        visit_link(f.route.links[i]);
    }
  }
  if (component_flows_.empty()) return;

  std::span<const double> rates;
  double rate_of_one = 0;
  if (component_flows_.size() == 1) {
    rate_of_one = lone_rate(flows_[static_cast<size_t>(component_flows_.front())].route);
    rates = std::span<const double>(&rate_of_one, 1);
  } else {
    solver_.clear();
    for (int32_t l : component_links_) {
      if (active_[static_cast<size_t>(l)].empty()) continue;  // a link the finished flow alone used
      link_local_[static_cast<size_t>(l)] = solver_.add_link(capacity_[static_cast<size_t>(l)]);
    }
    LinkList<int> local;
    for (int32_t id : component_flows_) {
      const Flow& f = flows_[static_cast<size_t>(id)];
      local.clear();
      for (const int32_t link : f.route.links)
        local.push_back(link_local_[static_cast<size_t>(link)]);
      solver_.add_flow(local.span(), window_cap_);
    }
    rates = solver_.solve();
  }
  for (size_t k = 0; k < component_flows_.size(); ++k)
    set_rate(component_flows_[k], rates[k]);
}

double FlowNetwork::lone_rate(const Route& route) const {
  double rate = window_cap_;
  for (int i = 0; i < route.links.size(); ++i)
    rate = std::min(rate, capacity_[static_cast<size_t>(route.links[i])]);
  return rate;
}

void FlowNetwork::set_rate(int32_t id, double rate) {
  Flow& f = flows_[static_cast<size_t>(id)];
  if (rate == f.rate) return;
  BAGUA_CHECK(rate > 0 && std::isfinite(rate), "flow rate " + std::to_string(rate));
  bring_up_to_date(f);
  f.rate = rate;
  schedule_completion(id);
}

}  // namespace bagua::netsim
