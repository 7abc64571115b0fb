#include "netsim/network.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstring>
#include <span>
#include <utility>

#include "core/check.h"

namespace bagua::netsim {

void sort_distinct_ids(std::vector<int32_t>& ids, size_t universe, std::vector<uint64_t>& bits) {
  const size_t n = ids.size();
  const size_t words = (universe + 63) / 64;
  if (n < 64 || words > n * static_cast<size_t>(std::bit_width(n))) {
    std::sort(ids.begin(), ids.end());
    return;
  }
  bits.assign(words, 0);
  for (const int32_t id : ids)
    bits[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (static_cast<size_t>(id) & 63);
  ids.clear();
  for (size_t w = 0; w < words; ++w)
    for (uint64_t b = bits[w]; b != 0; b &= b - 1)
      ids.push_back(static_cast<int32_t>(64 * w + static_cast<size_t>(std::countr_zero(b))));
}

FlowNetwork::FlowNetwork(const Topology& topology, const ModelFactors& factors, int hosts,
                         Engine& engine)
    : topology_(topology), factors_(factors), engine_(engine), carried_(topology.links().size(), 0) {
  capacity_.reserve(topology.links().size());
  for (const Link& l : topology.links())
    capacity_.push_back(l.capacity.bytes_per_second());  // the flow model's doubles start here
  // The host ceilings: an egress and an ingress constraint per host, after the links.
  const double ceiling = factors.host_bandwidth_ceiling.bytes_per_second();
  if (std::isfinite(ceiling)) {
    ceiling_base_ = static_cast<int>(capacity_.size());
    capacity_.resize(capacity_.size() + 2 * static_cast<size_t>(hosts), ceiling);
  }
  active_.resize(capacity_.size());
  if (ceiling_base_ >= 0) shadow_.resize(static_cast<size_t>(ceiling_base_));
  link_mark_.resize(capacity_.size(), 0);
  twin_mark_.resize(capacity_.size(), 0);
  link_local_.resize(capacity_.size(), -1);
  pending_mark_.resize(capacity_.size(), false);
}

int32_t FlowNetwork::allocate_flow() {
  if (!free_flows_.empty()) {
    const int32_t id = free_flows_.back();
    free_flows_.pop_back();
    return id;
  }
  flows_.emplace_back();
  keys_.emplace_back();
  flow_mark_.push_back(0);
  flow_local_.push_back(-1);
  return static_cast<int32_t>(flows_.size() - 1);
}

void FlowNetwork::enter_transfer_event(void* network, uint64_t id) {
  static_cast<FlowNetwork*>(network)->enter_transfer(static_cast<int32_t>(id));
}

void FlowNetwork::complete_event(void* network, uint64_t id) {
  static_cast<FlowNetwork*>(network)->complete(static_cast<int32_t>(id));
}

void FlowNetwork::latency_elapsed_event(void* network, uint64_t id) {
  static_cast<FlowNetwork*>(network)->latency_elapsed(static_cast<int32_t>(id));
}

int32_t FlowNetwork::connection_index(int64_t connection) {
  if (const int32_t* index = connection_index_.find(connection)) return *index;
  const auto index = static_cast<int32_t>(connections_.size());
  connections_.emplace_back();
  connection_index_.insert(connection, index);
  return index;
}

void FlowNetwork::start(const Route& route, Bytes bytes, Callback done, FlowHosts hosts,
                        int64_t connection) {
  BAGUA_CHECK(bytes.count() >= 0, "flow of negative size " + std::to_string(bytes.count()));
  const int32_t id = allocate_flow();
  Flow& f = flows_[static_cast<size_t>(id)];
  f.route_links = route.links.size();
  const bool between_hosts = hosts.src != FlowHosts::kWithinHost && hosts.src != hosts.dst;
  f.constraints.ids = route.links;
  f.lowest = route.slowest;  // lowest_capacity(id), from the route's links and the ceilings
  const bool ceilings = between_hosts && ceiling_base_ >= 0;
  const int32_t src_ceiling = ceiling_base_ + 2 * hosts.src;
  const int32_t dst_ceiling = ceiling_base_ + 2 * hosts.dst + 1;
  if (ceilings) {
    f.constraints.push_back(src_ceiling);
    f.constraints.push_back(dst_ceiling);
    f.lowest = std::min(f.lowest, capacity_[static_cast<size_t>(ceiling_base_)]);  // all alike
  }
  FlowKey& key = keys_[static_cast<size_t>(id)];
  key.size = -1;
  if (f.constraints.size() <= static_cast<size_t>(kKeyConstraints)) {
    key.size = static_cast<int32_t>(f.constraints.size());
    // The key's copy is made from the route and the ceilings, not from the list just written: a copy
    // of fixed size, all kKeyConstraints entries of the route's list in place (a route this short is
    // in place, whose entries are all initialized), is a few vector moves where one of the list's
    // size was a call to memmove, and its 16-byte loads of the list's 4-byte stores still in flight
    // waited for them (a store-forwarding stall): together a third of start()'s time under perf.
    static_assert(kKeyConstraints <= LinkList<int32_t>::kInlineLinks);
    std::memcpy(key.ids.data(), route.links.data(), sizeof key.ids);
    if (ceilings) {
      key.ids[static_cast<size_t>(route.links.size())] = src_ceiling;
      key.ids[static_cast<size_t>(route.links.size()) + 1] = dst_ceiling;
    }
  }
  assert(f.lowest == lowest_capacity(id));
  set_cap(id, factors_.tcp_window.count() > 0 ? window_cap(factors_, route.latency, between_hosts)
                                              : factors_.flow_window_cap.bytes_per_second());
  f.bytes = bytes.count();
  f.remaining = static_cast<double>(bytes.count());
  f.rate = key.rate = 0;
  f.completion = EventQueue::kNoEvent;
  f.done = done;
  f.next_in_connection = -1;
  f.connection = connection == kNoConnection ? -1 : connection_index(connection);
  f.tcp = -1;
  if (hosts.tcp_connection >= 0 && factors_.tcp_slow_start &&
      slow_start_applies(factors_, route.latency, between_hosts)) {
    if (const int32_t* index = tcp_index_.find(hosts.tcp_connection)) {
      f.tcp = *index;
    } else {
      f.tcp = static_cast<int32_t>(tcp_.size());
      tcp_.emplace_back();
      tcp_.back().route_latency = route.latency;
      tcp_.back().cwnd = static_cast<double>(factors_.tcp_initial_window.count());  // IW
      tcp_index_.insert(hosts.tcp_connection, f.tcp);
    }
  }
  // Phase 1: the route latency, using no bandwidth. An empty message completes right after it (on a
  // connection: at its turn). Route latencies take a few distinct values, each a lane of the event
  // queue.
  const auto uid = static_cast<uint64_t>(id);
  Callback::Fn phase2 = bytes.count() == 0 ? &complete_event : &enter_transfer_event;
  if (f.connection >= 0) phase2 = &latency_elapsed_event;
  engine_.post(route.latency, {phase2, this, uid}, /*recurring=*/true);
}

void FlowNetwork::latency_elapsed(int32_t id) {
  Flow& f = flows_[static_cast<size_t>(id)];
  Connection& c = connections_[static_cast<size_t>(f.connection)];
  if (!c.busy) {
    c.busy = true;
    begin_transfer(id);
    return;
  }
  if (c.tail >= 0)
    flows_[static_cast<size_t>(c.tail)].next_in_connection = id;
  else
    c.head = id;
  c.tail = id;
}

void FlowNetwork::begin_transfer(int32_t id) {
  if (flows_[static_cast<size_t>(id)].bytes == 0)
    complete(id);
  else
    enter_transfer(id);
}

bool FlowNetwork::hand_over(int32_t id) {
  Flow& f = flows_[static_cast<size_t>(id)];
  Connection& c = connections_[static_cast<size_t>(f.connection)];
  if (c.head < 0) return false;
  const int32_t next = c.head;
  Flow& n = flows_[static_cast<size_t>(next)];
  // On one TCP connection the next flow moves under the same window: the finished flow's cap.
  const double cap = keys_[static_cast<size_t>(id)].cap;
  if (n.tcp >= 0 && n.tcp == f.tcp) set_cap(next, cap);
  // Only a flow with the same constraints and cap leaves the max-min problem as it is.
  if (n.bytes == 0 || keys_[static_cast<size_t>(next)].cap != cap ||
      n.constraints.size() != f.constraints.size() ||
      !std::equal(f.constraints.begin(), f.constraints.end(), n.constraints.begin()))
    return false;
  c.head = n.next_in_connection;
  if (c.head < 0) c.tail = -1;
  n.next_in_connection = -1;
  n.position = f.position;
  for (size_t i = 0; i < f.constraints.size(); ++i)
    active_[static_cast<size_t>(f.constraints[i])]
           [static_cast<size_t>(f.position[static_cast<int>(i)])] = next;
  n.updated = engine_.now();
  n.rate = keys_[static_cast<size_t>(next)].rate = f.rate;
  schedule_completion(next);
  return true;
}

void FlowNetwork::release(int32_t connection) {
  Connection& c = connections_[static_cast<size_t>(connection)];
  if (c.head < 0) {
    c.busy = false;
    return;
  }
  const int32_t next = c.head;
  Flow& n = flows_[static_cast<size_t>(next)];
  c.head = n.next_in_connection;
  if (c.head < 0) c.tail = -1;
  n.next_in_connection = -1;
  if (n.bytes == 0)
    engine_.post(Time::zero(), {&complete_event, this, static_cast<uint64_t>(next)});
  else
    enter_transfer(next);
}

void FlowNetwork::enter_transfer(int32_t id) {
  Flow& f = flows_[static_cast<size_t>(id)];
  if (f.tcp >= 0) set_cap(id, tcp_join(id));
  f.updated = engine_.now();
  const int n = static_cast<int>(f.constraints.size());
  f.position.resize(n);
  // Alone on every constraint, the flow is a component by itself (what reshare() would find).
  bool alone = true;
  const int32_t* const constraints = f.constraints.begin();
  for (int i = 0; i < n; ++i) {
    const int32_t c = constraints[i];
    auto& on_link = active_[static_cast<size_t>(c)];
    const auto before = static_cast<int32_t>(on_link.size());
    f.position[i] = before;
    on_link.push_back(id);
    alone = alone && before == 0;
    if (c < ceiling_base_) shadow_enter(f, c);
  }
  if (alone)
    set_rate(id, lone_rate(id));
  else
    reshare_for(f.tcp >= 0, f.constraints);
  if (f.tcp >= 0) tcp_arm(f.tcp);
}

void FlowNetwork::complete(int32_t id) {
  Flow& f = flows_[static_cast<size_t>(id)];
  const bool transferring = f.rate > 0;
  const bool on_tcp = f.tcp >= 0;
  const int32_t connection = f.connection;
  // On a connection, the next waiting flow takes this one's place on its constraints: no re-solve.
  const int32_t successor = connection >= 0 ? connections_[static_cast<size_t>(connection)].head : -1;
  const bool handed_over = transferring && connection >= 0 && hand_over(id);
  if (transferring && f.tcp >= 0) tcp_leave(id, handed_over ? successor : -1);
  // Links left empty join no component: reshare() would find no flow to re-solve.
  bool others = false;
  if (transferring && !handed_over) {
    // Leave every constraint: swap-remove, fixing the moved flow's position.
    const int n = static_cast<int>(f.constraints.size());
    const int32_t* const constraints = f.constraints.begin();
    for (int i = 0; i < n; ++i) {
      const auto link = static_cast<size_t>(constraints[i]);
      auto& on_link = active_[link];
      const auto pos = static_cast<size_t>(f.position[i]);
      const int32_t moved = on_link.back();
      on_link[pos] = moved;
      on_link.pop_back();
      others = others || !on_link.empty();
      if (i < f.route_links) carried_[link] += f.bytes;
      if (static_cast<int>(link) < ceiling_base_) shadow_leave(f, static_cast<int32_t>(link));
      if (moved != id) {
        Flow& m = flows_[static_cast<size_t>(moved)];
        for (size_t j = 0; j < m.constraints.size(); ++j)
          if (m.constraints[j] == static_cast<int32_t>(link))
            m.position[static_cast<int>(j)] = static_cast<int32_t>(pos);
      }
    }
    if (others) changed_.assign(f.constraints.begin(), f.constraints.end());
  }
  // The bytes each route link carried (counted in the loop above for a flow that left its links; a
  // flow that never transferred is an empty one: only those complete without a rate).
  assert(transferring || f.bytes == 0);
  if (handed_over)
    for (int i = 0; i < f.route_links; ++i)
      carried_[static_cast<size_t>(f.constraints[i])] += f.bytes;
  const Callback done = f.done;
  f.completion = EventQueue::kNoEvent;
  f.connection = -1;
  free_flows_.push_back(id);
  if (others) reshare_for(on_tcp, changed_);
  if (connection >= 0 && !handed_over) release(connection);
  done();
}

[[gnu::always_inline]] inline void FlowNetwork::bring_up_to_date(Flow& f) {
  const Time now = engine_.now();
  if (f.rate > 0 && now > f.updated) {
    f.remaining -= f.rate * static_cast<double>((now - f.updated).nanoseconds()) / 1e9;
    if (f.remaining < 0) f.remaining = 0;
  }
  f.updated = now;
}

[[gnu::always_inline]] inline void FlowNetwork::schedule_completion(int32_t id) {
  Flow& f = flows_[static_cast<size_t>(id)];
  // The division's latency was a fifth of enter_transfer's time (perf annotate, the 1024-rank ring,
  // where every flow enters with the same bytes at the same rate): the last delay is remembered.
  if (f.remaining != last_delay_.remaining || f.rate != last_delay_.rate)
    last_delay_ = {f.remaining, f.rate, ceil_ns(f.remaining * 1e9 / f.rate)};
  const Time delay = last_delay_.delay;
  const Callback done{&complete_event, this, static_cast<uint64_t>(id)};
  if (f.completion != EventQueue::kNoEvent) {
    f.completion = engine_.reschedule(f.completion, engine_.now() + delay, done);
    return;
  }
  // A flow's first completion: where it is due as long after now as the previous flow's first one
  // (the same bytes at the same rate: every step of a ring), it goes to a lane of the event queue.
  const bool recurring = delay == first_completion_delay_;
  first_completion_delay_ = delay;
  f.completion = recurring ? engine_.at_recurring(engine_.now() + delay, done)
                           : engine_.at(engine_.now() + delay, done);
}

// Inline: every flow entering phase 2 alone, and every flow a re-solve gives another rate.
[[gnu::always_inline]] inline void FlowNetwork::set_rate(int32_t id, double rate) {
  double& mirrored = keys_[static_cast<size_t>(id)].rate;
  if (rate == mirrored) return;  // most flows of a re-solved component: Flow is not touched
  BAGUA_CHECK(rate > 0 && std::isfinite(rate), "flow rate " + std::to_string(rate));
  Flow& f = flows_[static_cast<size_t>(id)];
  assert(mirrored == f.rate);
  bring_up_to_date(f);
  f.rate = mirrored = rate;
  schedule_completion(id);
}

void FlowNetwork::reshare_later(std::span<const int32_t> changed) {
  if (changed.empty()) return;
  if (pending_.empty()) engine_.defer({&reshare_pending_event, this, 0});
  for (const int32_t c : changed) {
    if (pending_mark_[static_cast<size_t>(c)]) continue;
    pending_mark_[static_cast<size_t>(c)] = true;
    pending_.push_back(c);
  }
}

void FlowNetwork::reshare_pending_event(void* network, uint64_t) {
  auto& n = *static_cast<FlowNetwork*>(network);
  n.pending_solved_.swap(n.pending_);
  n.pending_.clear();
  for (const int32_t c : n.pending_solved_)
    n.pending_mark_[static_cast<size_t>(c)] = false;
  n.reshare(n.pending_solved_);
}

// What the two ways of handing the solver its system share: its links are solver_links_, and a
// flow's links are its constraints the solver has (link_local_).
struct FlowNetwork::SolverLinks {
  const FlowNetwork& n;
  size_t links() const { return n.solver_links_.size(); }
  double capacity(size_t l) const { return n.capacity_[static_cast<size_t>(n.solver_links_[l])]; }
  const std::vector<int32_t>& flows_of_link(size_t l) const {
    return n.active_[static_cast<size_t>(n.solver_links_[l])];
  }
  size_t flows_on(size_t l) const { return flows_of_link(l).size(); }
  // fn(solver link) for each of flow `id`'s constraints the solver has.
  template <class Fn>
  void each_solver_link_of(int32_t id, Fn&& fn) const {
    for (const int32_t c : n.constraints_of(id))
      if (const int32_t local = n.link_local_[static_cast<size_t>(c)]; local >= 0)
        fn(static_cast<size_t>(local));
  }
};

// A component as MaxMinSolver::solve(System) reads it: solver link l is solver_links_[l], solver flow
// f is component_flows_[f].
struct FlowNetwork::Component : SolverLinks {
  // The flow each_flow_on handed the solver last, and its id: the solver's freeze asks for that
  // flow's links next, whose key is then read without first looking the id up in component_flows_
  // (a dependent load before the key's). BytePS on VGG16 at 4096 ranks: 41.5 -> 39.0 s of CPU.
  mutable size_t given_f = SIZE_MAX;
  mutable int32_t given_id = -1;
  size_t flows() const { return n.component_flows_.size(); }
  // A cap that cannot bind is none (FlowKey::cap_binds): the solver would leave it out.
  double cap(size_t f) const {
    const FlowKey& k = n.keys_[static_cast<size_t>(n.component_flows_[f])];
    return k.cap_binds ? k.cap : MaxMinSolver::kUncapped;
  }
  template <class Fn>
  void each_flow_on(size_t l, Fn&& fn) const {
    // The solver freezes a bottleneck's flows in this order, each reading its key and local index
    // at random: those of the flow kAhead places on are fetched meanwhile. BytePS on VGG16 at 2048
    // ranks, two alternated runs: 8.8 / 8.6 -> 8.1 / 8.3 s of CPU.
    const std::vector<int32_t>& on = flows_of_link(l);
    constexpr size_t kAhead = 8;
    for (size_t i = 0; i < on.size(); ++i) {
      if (i + kAhead < on.size()) {
        const auto ahead = static_cast<size_t>(on[i + kAhead]);
        __builtin_prefetch(&n.keys_[ahead]);
        __builtin_prefetch(&n.flow_local_[ahead]);
      }
      const auto f = static_cast<size_t>(n.flow_local_[static_cast<size_t>(on[i])]);
      given_f = f;
      given_id = on[i];
      fn(f);
    }
  }
  template <class Fn>
  void each_link_of(size_t f, Fn&& fn) const {
    each_solver_link_of(f == given_f ? given_id : n.component_flows_[f], fn);
  }
};

// Every phase-2 flow as MaxMinSolver::solve(System) reads them: solver link l is solver_links_[l]
// (every constraint with flows, less those a ceiling shadows, by id), solver flow f is flow id f
// (a slot not in phase 2 crosses nothing and has no cap: its rate is left at +infinity, unread).
struct FlowNetwork::WholeNetwork : SolverLinks {
  size_t flows() const { return n.flows_.size(); }
  // No cap has bound in this run (a_cap_bound_): none is handed to the solver.
  double cap(size_t) const { return MaxMinSolver::kUncapped; }
  template <class Fn>
  void each_flow_on(size_t l, Fn&& fn) const {
    // As Component's: the keys of the flows kAhead places on fetched meanwhile.
    const std::vector<int32_t>& on = flows_of_link(l);
    constexpr size_t kAhead = 8;
    for (size_t i = 0; i < on.size(); ++i) {
      if (i + kAhead < on.size()) __builtin_prefetch(&n.keys_[static_cast<size_t>(on[i + kAhead])]);
      fn(static_cast<size_t>(on[i]));
    }
  }
  template <class Fn>
  void each_link_of(size_t f, Fn&& fn) const {
    each_solver_link_of(static_cast<int32_t>(f), fn);
  }
  // Told of each freeze, after each_link_of(f) read the flow's key, whose line holds its rate: a flow
  // whose rate changes is marked in `changed` (a bit a flow slot). Comparing every slot's rate after
  // the solve instead was a tenth of BytePS's run at 4096 ranks, 49,000 flows compared per solve
  // for 900 changed.
  void frozen(size_t f, double rate) const {
    if (rate != n.keys_[f].rate) changed[f >> 6] |= uint64_t{1} << (f & 63);
  }
  uint64_t* changed;
};

void FlowNetwork::solve_whole_network() {
  assert(!a_cap_bound_);
  solver_links_.clear();
  for (size_t c = 0; c < capacity_.size(); ++c) {
    if (active_[c].empty()) continue;
    if (shadowed_by_ceiling(static_cast<int32_t>(c))) {
      link_local_[c] = -1;
      continue;
    }
    link_local_[c] = static_cast<int32_t>(solver_links_.size());
    solver_links_.push_back(static_cast<int32_t>(c));
  }
  if (solver_links_.empty()) return;
  ++rate_solves_;
  ++whole_network_solves_;
  rate_changed_.resize((flows_.size() + 63) / 64);  // all clear (the loop below clears what it reads)
  const std::vector<double>& rates = solver_.solve(WholeNetwork{{*this}, rate_changed_.data()});
  // Every phase-2 flow froze at a finite rate; the others are not read. The changed ones get their
  // rates in flow id order, as apply_rate_changes gives them.
  for (size_t word = 0; word < rate_changed_.size(); ++word) {
    for (uint64_t bits = std::exchange(rate_changed_[word], 0); bits != 0; bits &= bits - 1) {
      const size_t id = word * 64 + static_cast<size_t>(std::countr_zero(bits));
      set_rate(static_cast<int32_t>(id), rates[id]);
    }
  }
}

void FlowNetwork::reshare(std::span<const int32_t> changed) {
  // (A cap may have bound since whole_network_ was set.)
  if (whole_network_ && !a_cap_bound_ && ++solves_since_search_ < kSearchEvery) {
    solve_whole_network();
    return;
  }
  solves_since_search_ = 0;
  // Collect the component(s): breadth-first over links. The order it meets them in (that of the flows
  // on each link's list, the result of every earlier insertion and removal) is not the solver's: the
  // links are sorted by id below, and the flows too where a cap binds (the tie order, network.h).
  ++epoch_;
  component_links_.clear();
  component_flows_.clear();
  auto visit_link = [&](int32_t l) {
    if (link_mark_[static_cast<size_t>(l)] == epoch_) return;
    link_mark_[static_cast<size_t>(l)] = epoch_;
    component_links_.push_back(l);
  };
  for (int32_t c : changed)
    visit_link(c);
  for (size_t next = 0; next < component_links_.size(); ++next) {
    const int32_t l = component_links_[next];
    // A host ceiling that carries exactly the flows of a link searched before it: all of them are
    // marked already, so its list would add nothing (a star's NIC link and its host's ceiling, on
    // TCP clusters: half the search's visits).
    if (twin_mark_[static_cast<size_t>(l)] == epoch_) continue;
    for (int32_t id : active_[static_cast<size_t>(l)]) {
      uint64_t& mark = flow_mark_[static_cast<size_t>(id)];
      if (mark == epoch_) continue;
      mark = epoch_;
      component_flows_.push_back(id);
      for (int32_t c : constraints_of(id))
        visit_link(c);
    }
    if (l < ceiling_base_) mark_twin_ceilings(l);
  }
  const size_t found = component_flows_.size();
  whole_network_ = whole_network_allowed_ && !a_cap_bound_ && found >= kWholeNetworkMinFlows &&
                   2 * found >= flows_.size() - free_flows_.size() && 8 * found >= flows_.size() &&
                   8 * found >= capacity_.size();
  if (component_flows_.empty()) return;
  ++rate_solves_;
  // The tie order (network.h): links by id; caps by flow id (below, where a cap may bind).
  sort_distinct_ids(component_links_, capacity_.size(), id_bits_);

  if (component_flows_.size() == 1) {
    const int32_t id = component_flows_.front();
    set_rate(id, lone_rate(id));
    return;
  }
  if (const double level = sole_bottleneck_level(); level > 0) {
    for (int32_t id : component_flows_)
      if (keys_[static_cast<size_t>(id)].rate != level) rate_changes_.push_back({id, level});
    apply_rate_changes();
    return;
  }
  // The solver reads the component in place (Component): its links with flows, less those a ceiling
  // shadows, numbered in component_links_ order, and its flows in component_flows_ order.
  solver_links_.clear();
  for (int32_t l : component_links_) {
    if (active_[static_cast<size_t>(l)].empty()) continue;  // a link the finished flow alone used
    if (shadowed_by_ceiling(l)) {
      link_local_[static_cast<size_t>(l)] = -1;
      continue;
    }
    link_local_[static_cast<size_t>(l)] = static_cast<int32_t>(solver_links_.size());
    solver_links_.push_back(l);
  }
  if (a_cap_bound_) sort_distinct_ids(component_flows_, flows_.size(), id_bits_);
  for (size_t k = 0; k < component_flows_.size(); ++k)
    flow_local_[static_cast<size_t>(component_flows_[k])] = static_cast<int32_t>(k);
  const std::vector<double>& rates = solver_.solve(Component{{*this}});
  for (size_t k = 0; k < component_flows_.size(); ++k)
    if (const int32_t id = component_flows_[k]; keys_[static_cast<size_t>(id)].rate != rates[k])
      rate_changes_.push_back({id, rates[k]});
  apply_rate_changes();
}

void FlowNetwork::apply_rate_changes() {
  // By flow id, as solve_whole_network gives them: each reschedules its flow's completion, and
  // completions due at one nanosecond run in the order they were rescheduled.
  std::sort(rate_changes_.begin(), rate_changes_.end(),
            [](const RateChange& a, const RateChange& b) { return a.id < b.id; });
  for (const RateChange& c : rate_changes_)
    set_rate(c.id, c.rate);
  rate_changes_.clear();
}

double FlowNetwork::sole_bottleneck_level() const {
  // The solver's heap entries, in its item order: the component's links with flows (in
  // component_links_ order, by id), then the capped flows' caps. The first to pop is the lowest
  // (level, item).
  const size_t flows = component_flows_.size();
  double best = MaxMinSolver::kUncapped;
  bool best_carries_all = false;
  for (int32_t l : component_links_) {
    const size_t on_link = active_[static_cast<size_t>(l)].size();
    if (on_link == 0) continue;
    // The solver's level: remaining (the capacity) / unfrozen flows (an int32_t, as there).
    const double level = capacity_[static_cast<size_t>(l)] / static_cast<int32_t>(on_link);
    if (level < best) {
      best = level;
      best_carries_all = on_link == flows;
    }
  }
  if (!best_carries_all) return 0;
  for (int32_t id : component_flows_)
    if (keys_[static_cast<size_t>(id)].cap < best) return 0;  // a cap would pop first
  return best;
}

void FlowNetwork::mark_twin_ceilings(int32_t link) {
  const Shadow& s = shadow_[static_cast<size_t>(link)];
  if (carries_exactly(link, s.egress, s.with_egress))
    twin_mark_[static_cast<size_t>(s.egress)] = epoch_;
  if (carries_exactly(link, s.ingress, s.with_ingress))
    twin_mark_[static_cast<size_t>(s.ingress)] = epoch_;
}

bool FlowNetwork::carries_exactly(int32_t link, int32_t ceiling, int32_t with) const {
  const size_t on_link = active_[static_cast<size_t>(link)].size();
  return ceiling >= 0 && on_link > 0 && static_cast<size_t>(with) == on_link &&
         active_[static_cast<size_t>(ceiling)].size() == on_link;
}

void FlowNetwork::shadow_enter(const Flow& f, int32_t link) {
  Shadow& s = shadow_[static_cast<size_t>(link)];
  const bool ceilings = f.constraints[f.constraints.size() - 1] >= ceiling_base_;
  const int32_t egress = ceilings ? f.constraints[f.constraints.size() - 2] : -1;
  const int32_t ingress = ceilings ? f.constraints[f.constraints.size() - 1] : -1;
  if (active_[static_cast<size_t>(link)].size() == 1) s = {egress, ingress, 0, 0};
  s.with_egress += static_cast<int32_t>(egress >= 0 && egress == s.egress);
  s.with_ingress += static_cast<int32_t>(ingress >= 0 && ingress == s.ingress);
}

void FlowNetwork::shadow_leave(const Flow& f, int32_t link) {
  Shadow& s = shadow_[static_cast<size_t>(link)];
  if (f.constraints[f.constraints.size() - 1] < ceiling_base_) return;  // no ceilings: not counted
  s.with_egress -= static_cast<int32_t>(f.constraints[f.constraints.size() - 2] == s.egress);
  s.with_ingress -= static_cast<int32_t>(f.constraints[f.constraints.size() - 1] == s.ingress);
}

bool FlowNetwork::shadowed_by_ceiling(int32_t link) const {
  if (ceiling_base_ < 0 || link >= ceiling_base_) return false;
  const Shadow& s = shadow_[static_cast<size_t>(link)];
  const auto shadows = [&](int32_t k, int32_t with) {
    return carries_exactly(link, k, with) &&
           capacity_[static_cast<size_t>(k)] <= capacity_[static_cast<size_t>(link)];
  };
  const bool shadowed = shadows(s.egress, s.with_egress) || shadows(s.ingress, s.with_ingress);
  assert(!shadowed || shared_ceiling_below(link));  // the counts never claim what the flows deny
  return shadowed;
}

bool FlowNetwork::shared_ceiling_below(int32_t link) const {
  const std::vector<int32_t>& on_link = active_[static_cast<size_t>(link)];
  // A ceiling that carries the link's flows carries its first flow; it is one of that flow's.
  for (const int32_t k : flows_[static_cast<size_t>(on_link.front())].constraints) {
    if (k < ceiling_base_ || active_[static_cast<size_t>(k)].size() != on_link.size() ||
        capacity_[static_cast<size_t>(k)] > capacity_[static_cast<size_t>(link)])
      continue;
    // Every flow of the link on ceiling k, and as many flows on both: the same flows.
    bool all = true;
    for (size_t i = 1; all && i < on_link.size(); ++i) {
      const Constraints& c = flows_[static_cast<size_t>(on_link[i])].constraints;
      all = std::find(c.begin(), c.end(), k) != c.end();
    }
    if (all) return true;
  }
  return false;
}

void FlowNetwork::set_cap(int32_t id, double cap) {
  FlowKey& k = keys_[static_cast<size_t>(id)];
  k.cap = cap;
  // No cap (no window cap) has nothing to compare.
  k.cap_binds = cap != MaxMinSolver::kUncapped && cap < flows_[static_cast<size_t>(id)].lowest;
  a_cap_bound_ = a_cap_bound_ || k.cap_binds;
}

double FlowNetwork::tcp_join(int32_t id) {
  Flow& f = flows_[static_cast<size_t>(id)];
  TcpConnection& c = tcp_[static_cast<size_t>(f.tcp)];
  if (c.active.empty()) {  // the connection becomes busy: a round starts
    if (c.used)
      c.cwnd = window_after_idle(factors_, c.cwnd, engine_.now() - c.idle_since, c.route_latency);
    c.used = true;
    c.round_base = c.completed;
  }
  c.active.push_back(id);
  return slow_start_cap(factors_, c.cwnd, c.route_latency);
}

void FlowNetwork::tcp_arm(int32_t tcp) {
  TcpConnection& c = tcp_[static_cast<size_t>(tcp)];
  if (c.round_end != EventQueue::kNoEvent || c.cwnd >= static_cast<double>(factors_.tcp_window.count()))
    return;  // a round is under way, or the window no longer grows
  c.round_end =
      engine_.after(c.route_latency * 2, Callback{&tcp_round_event, this, static_cast<uint64_t>(tcp)});
}

void FlowNetwork::tcp_leave(int32_t id, int32_t successor) {
  const Flow& f = flows_[static_cast<size_t>(id)];
  TcpConnection& c = tcp_[static_cast<size_t>(f.tcp)];
  c.completed += static_cast<double>(f.bytes);
  c.active.erase(std::find(c.active.begin(), c.active.end(), id));
  if (successor >= 0) {  // it took this flow's place and cap: the round goes on
    c.active.push_back(successor);
    return;
  }
  if (!c.active.empty()) return;
  // The connection goes idle: its round is cut short, the window grows by what it delivered.
  if (c.round_end != EventQueue::kNoEvent) engine_.cancel(c.round_end);
  c.round_end = EventQueue::kNoEvent;
  const double delivered =
      (c.completed - c.round_base) / static_cast<double>(factors_.connections_per_peer);
  c.cwnd = grown_window(factors_, c.cwnd, /*full=*/false, delivered);
  c.idle_since = engine_.now();
}

void FlowNetwork::tcp_round_event(void* network, uint64_t tcp) {
  static_cast<FlowNetwork*>(network)->tcp_round(static_cast<int32_t>(tcp));
}

double FlowNetwork::tcp_moved(TcpConnection& c) {
  double moved = c.completed;
  for (const int32_t id : c.active) {
    Flow& f = flows_[static_cast<size_t>(id)];
    bring_up_to_date(f);
    moved += static_cast<double>(f.bytes) - f.remaining;
  }
  return moved;
}

void FlowNetwork::tcp_round(int32_t tcp) {
  TcpConnection& c = tcp_[static_cast<size_t>(tcp)];
  c.round_end = EventQueue::kNoEvent;
  c.round_base = tcp_moved(c);
  c.cwnd = grown_window(factors_, c.cwnd, /*full=*/true, 0);
  const double cap = slow_start_cap(factors_, c.cwnd, c.route_latency);
  tcp_changed_.clear();
  for (const int32_t id : c.active) {
    Flow& f = flows_[static_cast<size_t>(id)];
    set_cap(id, cap);
    tcp_changed_.insert(tcp_changed_.end(), f.constraints.begin(), f.constraints.end());
  }
  reshare(tcp_changed_);
  tcp_arm(tcp);  // after the re-solve: a completion due with the next round's end runs first
}

}  // namespace bagua::netsim
