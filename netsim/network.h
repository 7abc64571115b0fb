// The flow-level network model.
//
// Terms:
//   flow        one message's bytes moving along its route. Phase 1: the route latency elapses and the
//               flow uses no bandwidth. Phase 2: its bytes move at its current rate; it completes when
//               they are done.
//   rate        a phase-2 flow's share: the max-min fair allocation (max_min.h) over the links'
//               capacities (bandwidth * bandwidth efficiency), each flow also capped by its window cap
//               (model_factors.h: flow_window_cap, and for a flow between hosts the TCP window per RTT)
//   constraint  what a flow's rate is shared on: its route's links and, for a flow between hosts when a
//               host bandwidth ceiling is set, its source host's egress and destination host's ingress
//               ceilings (capacity host_bandwidth_ceiling each, indexed after the links)
//   component   the phase-2 flows connected to a link through shared links; a flow starting or ending
//               changes rates only within the component(s) of its links, so only those are re-solved.
//               A flow alone on all its constraints is a component by itself, whose rate needs no
//               solver: the capacity of its slowest constraint, or its cap
//   tie order   the solver breaks ties between equal levels by constraint id (links, then ceilings)
//               and, between caps, by flow id: a component's rates are a function of its flows alone,
//               not of where the search for it started, so that solving several components at once
//               (or the whole network) gives each the same bits as solving it alone (see reshare)
//   remaining   a flow's bytes still to move, as of the time it was last brought up to date
//   connection  (optional, FlowNetwork::start's `connection`) an ordered byte stream the flow belongs
//               to: its phase 2 starts at max(the end of its own phase 1, the end of the phase 2 of the
//               connection's previous flow, in start() order), so at most one flow per connection is in
//               phase 2 and its window cap bounds the connection, not each message. Phase 1 is
//               unchanged. A flow whose phase 1 ends while its connection is busy waits, first-come
//               first-served (flows of one connection share a route, so their phase 1 ends in start()
//               order); an empty flow at its turn completes at once, in order. When a flow completes
//               and the next flow of its connection waits with the same constraints and cap (one
//               route, one pair of hosts), that flow takes its place on every constraint at the same
//               rate: the max-min problem is unchanged, nothing is re-solved
//   TCP connection  (ModelFactors::tcp_slow_start) the congestion window a flow between hosts moves
//               under (model_factors.h, "slow start"): FlowHosts::tcp_connection, the ordered pair of
//               world ranks, whatever the `connection` above. A flow entering phase 2 takes its
//               connection's cap (and makes it busy); at the end of each full round the connection's
//               flows are brought up to date, get the grown cap and their components are re-solved:
//               one re-solve per RTT until cwnd reaches the window, about log2(W / IW) per busy period.
//               A flow taking a finished one's place (above) inherits its cap, and the round goes on
//
// When rates are re-solved, a flow whose rate did not change is left untouched (its completion event
// stands); a flow whose rate changed is first brought up to date at its old rate (remaining -= rate *
// the time since its last update), then given its new rate and a new completion event at
//   now + ceil(remaining / rate)     (whole nanoseconds)
// and its old event is cancelled. Every step is a fixed sequence of floating-point operations on values
// visited in a deterministic order, so runs are bit-identical. A single flow of S bytes on a route of
// latency L whose slowest link has capacity B therefore completes after exactly L + ceil(S / B).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "netsim/engine.h"
#include "netsim/flat_map.h"
#include "netsim/max_min.h"
#include "netsim/model_factors.h"
#include "netsim/topology.h"

namespace bagua::netsim {

// The two hosts a flow runs between; kWithinHost for a route inside one host (no TCP window, no host
// ceiling).
struct FlowHosts {
  static constexpr int kWithinHost = -1;
  int src = kWithinHost;
  int dst = kWithinHost;
  // The TCP connection between hosts (>= 0: the ordered pair of world ranks, source x ranks +
  // destination), for slow start; -1: none.
  int64_t tcp_connection = -1;
};

// Sorts `ids`, distinct and each below `universe`, in ascending order: std::sort's, or, where n log n
// comparisons would cost more than a pass over one bit per id of the universe, by setting their
// bits in `bits` (scratch) and reading them back in order: the same result, the ids being distinct.
// The component's links and flows are put in id order at every searched re-solve (the tie order);
// on the paper's TCP clusters std::sort's was 5.6 % of the ResNet-50 latency sweep (perf).
void sort_distinct_ids(std::vector<int32_t>& ids, size_t universe, std::vector<uint64_t>& bits);

class FlowNetwork {
 public:
  // `factors`: the window caps and host ceiling (the link capacities are the topology's); `hosts`: the
  // number of hosts (for the host ceilings).
  FlowNetwork(const Topology& topology, const ModelFactors& factors, int hosts, Engine& engine);

  // No connection: the flow shares its links with every other flow at once (the default).
  static constexpr int64_t kNoConnection = -1;

  // Starts a flow of `bytes` along `route` (a Topology::route) now; `done` runs (as an event) when its
  // last byte arrives: whatever it refers to must live until then (the mailbox parks the message), or
  // until the network is destroyed. `connection` (>= 0, or kNoConnection): the ordered byte stream the
  // flow belongs to (see the terms above).
  void start(const Route& route, Bytes bytes, Callback done, FlowHosts hosts = {},
             int64_t connection = kNoConnection);

  // Bytes carried by each link so far (completed flows), indexed like Topology::links().
  const std::vector<int64_t>& carried() const { return carried_; }
  // Re-solves so far of a component with flows in it (reshare()); a flow alone on its constraints
  // when it enters phase 2 takes its lone rate without one.
  uint64_t rate_solves() const { return rate_solves_; }
  // Whether a re-solve may cover every flow in phase 2 at once instead of searching for the changed
  // component(s) first (on by default; see reshare). The rates are the same bits either way (the tie
  // order above); off, for tests that check that, and for benchmarks.
  void set_solve_whole_network(bool allowed) { whole_network_allowed_ = allowed; }
  // Of rate_solves(), those that covered the whole network.
  uint64_t whole_network_solves() const { return whole_network_solves_; }

 private:
  // A flow's constraints: its route's links, then its two host ceilings (if any), in a list that keeps
  // up to LinkList::kInlineLinks in place (a flow slot is reused, and its list with it).
  struct Constraints {
    LinkList<int32_t> ids;
    const int32_t* begin() const { return ids.begin(); }
    const int32_t* end() const { return ids.end(); }
    size_t size() const { return static_cast<size_t>(ids.size()); }
    int32_t operator[](size_t i) const { return ids[static_cast<int>(i)]; }
    void clear() { ids.clear(); }
    void push_back(int32_t id) { ids.push_back(id); }
    operator std::span<const int32_t>() const { return ids.span(); }
  };

  // What a re-solve reads of every flow of a component, apart from the rest of Flow and dense: its
  // cap, its rate and (up to kKeyConstraints of) its constraints, one cache line a flow (and its
  // component search mark, flow_mark_, 8 bytes a flow). The search visits a flow once for each
  // constraint it crosses (a flow between hosts of a fat tree: up to 8 links and 2 ceilings) and
  // reads only the mark after the first; a solve then reads the constraints and cap of each, and
  // set_rate its rate, which most re-solves leave as it was. Within Flow (six cache lines) each visit
  // was a cache miss: FlowNetwork::reshare was 24 to 44 % of BytePS's and QAdam's runs at 512 and
  // 1024 ranks, most of it on those loads, and set_rate's read of Flow::rate 15 % of BytePS's at 4096.
  // The key holds 10 constraints in place, a fat tree's longest route with its two ceilings.
  static constexpr int kKeyConstraints = 10;
  struct alignas(64) FlowKey {
    double cap = 0;    // the window cap, bytes per second (+infinity for none); set by set_cap
    double rate = 0;   // Flow::rate, mirrored (start, hand_over, set_rate write both)
    int32_t size = 0;  // constraints held in `ids`; -1: more than kKeyConstraints, in Flow's list
    // cap < the capacity of each of its constraints (static), so that it can bind: the only caps a
    // solve takes (MaxMinSolver::solve(System) leaves the others out, as any cap at or above a link's
    // capacity never pops before that link freezes the flow). Found once per cap, not by walking
    // the flow's constraints at each re-solve, which was most of the solve's own time on TCP clusters
    // (every flow capped by its window, no window below the NIC).
    bool cap_binds = false;
    std::array<int32_t, kKeyConstraints> ids{};
  };
  static_assert(sizeof(FlowKey) == 64, "a flow's key is one cache line");
  // Flow `id`'s constraints, from its key where they fit.
  std::span<const int32_t> constraints_of(int32_t id) const {
    const FlowKey& k = keys_[static_cast<size_t>(id)];
    if (k.size >= 0) return {k.ids.data(), static_cast<size_t>(k.size)};
    return flows_[static_cast<size_t>(id)].constraints;
  }

  // What a re-solve reads and writes of every flow of a component besides its key (rate, remaining,
  // updated, completion) comes first.
  struct Flow {
    double rate = 0;       // bytes per second; 0 until first solved
    double remaining = 0;  // bytes, as of `updated`
    Time updated;
    EventQueue::Handle completion = EventQueue::kNoEvent;
    Constraints constraints;
    int64_t bytes = 0;
    int32_t route_links = 0;     // the first route_links constraints are its route's links
    double lowest = 0;           // lowest_capacity() of its constraints, found once in start()
    LinkList<int32_t> position;  // index in each constraint's active list
    Callback done;
    int32_t connection = -1;          // index into connections_; -1: none
    int32_t next_in_connection = -1;  // the next flow waiting for its connection
    int32_t tcp = -1;                 // index into tcp_ (slow start); -1: none
  };

  // An ordered byte stream: whether one of its flows is in phase 2 (or, empty, completing at its
  // turn), and the flows whose phase 1 has ended waiting for it, first-come first-served.
  struct Connection {
    bool busy = false;
    int32_t head = -1;
    int32_t tail = -1;
  };
  // A TCP connection's slow start (model_factors.h): its window and the flows in phase 2 on it.
  struct TcpConnection {
    Time route_latency;
    double cwnd = 0;              // bytes, per connection
    std::vector<int32_t> active;  // its phase-2 flows, in the order they entered
    bool used = false;            // has had a busy period (idle is measured from its end)
    Time idle_since;              // the end of the last busy period
    double completed = 0;         // bytes of its flows completed so far, all n streams together
    double round_base = 0;        // completed + the active flows' moved bytes at the round's start
    EventQueue::Handle round_end = EventQueue::kNoEvent;
  };
  struct ConnectionHash {
    size_t operator()(int64_t c) const {
      return static_cast<size_t>(static_cast<uint64_t>(c) * 0x9e3779b97f4a7c15ull);
    }
  };

  static void enter_transfer_event(void* network, uint64_t id);
  static void complete_event(void* network, uint64_t id);
  static void latency_elapsed_event(void* network, uint64_t id);
  int32_t allocate_flow();
  int32_t connection_index(int64_t connection);
  // Phase 1 of a flow on a connection has ended: its phase 2 begins now, or it waits for its turn.
  void latency_elapsed(int32_t id);
  // Flow `id` begins its phase 2 now (an empty one completes).
  void begin_transfer(int32_t id);
  // A flow of connection `c` has completed and none took its place: the next waiting flow, if any,
  // begins its phase 2 (an empty one completes by an event now, after the flow's own `done`).
  void release(int32_t c);
  // The first waiting flow of `id`'s connection, when it has bytes to move and `id`'s constraints and
  // cap, takes `id`'s place on every constraint at `id`'s rate; returns whether it did.
  bool hand_over(int32_t id);
  void enter_transfer(int32_t id);
  void complete(int32_t id);
  // Slow start. Flow `id` enters phase 2 on its TCP connection: returns its cap (a connection becoming
  // busy first has its window restarted after idle).
  double tcp_join(int32_t id);
  // Arms the end of the first round of a connection that has just become busy (after the flow's rate
  // is set, so that a completion due at the same time runs first).
  void tcp_arm(int32_t tcp);
  // Flow `id` has completed on its TCP connection; `successor` (or -1) took its place at once.
  void tcp_leave(int32_t id, int32_t successor);
  static void tcp_round_event(void* network, uint64_t tcp);
  // A full round of connection `tcp` has ended: its window grows and its flows get the new cap.
  void tcp_round(int32_t tcp);
  // completed + the bytes the active flows have moved (brought up to date now).
  double tcp_moved(TcpConnection& c);
  // Re-solves the components of the given constraints and reschedules the flows whose rate changed.
  // The search for the components visits every flow of them and reads its key, a cache miss each
  // where they are many (BytePS at 4096 ranks: one component of 20,000 flows, 30 % of the run). When
  // the last search found most of the phase-2 flows in one component, and it was large, the next
  // re-solves cover every phase-2 flow at once instead (solve_whole_network), which reads no mark and
  // looks no flow up: the components not changed get the rates they have, bit for bit (tie order
  // above), which no flow's rate then changes. Every kSearchEvery-th re-solve searches again, to see
  // whether the network is still one component. Never in a run where a flow's cap has bound
  // (a_cap_bound_, set by set_cap): a flow that took a finished one's place (hand_over) keeps its
  // rate without a re-solve but has another id, which the caps' tie order reads, so a re-solve of its
  // component could give it other bits. (TCP clusters' window caps are far above their NICs and
  // never bind; flow_window_cap below a link, or slow start's first rounds, do.)
  void reshare(std::span<const int32_t> changed);
  void solve_whole_network();
  static constexpr uint32_t kSearchEvery = 64;
  // A component this large, with at least half as many flows as there are flows in the network (in
  // any phase: a bound on those in phase 2 that costs no count) and an eighth as many as the flow
  // slots and constraints a whole-network solve passes over (a few bytes each, in order, where the
  // search reads a cache line at random for each of its flows), makes the next re-solves cover the
  // whole network.
  static constexpr size_t kWholeNetworkMinFlows = 256;
  // reshare(changed), at the end of the current instant (Engine::defer), together with every other
  // constraint changed in it: flows that start or end at one instant (an alltoall's P (P - 1) flows,
  // equal and tied) are re-solved once, not once each. Between events of one instant no time passes,
  // so no flow moves a byte at a rate that is not yet re-solved: the rates at the end of the instant
  // are the max-min solution of the flows then in phase 2, as with a re-solve per flow. What may differ
  // is the order of completions tied at one nanosecond, and the last bits of a rate where progressive
  // filling meets the flows in another order (netsim/README.md, "Re-solving once per instant").
  void reshare_later(std::span<const int32_t> changed);
  // What a flow entering or leaving phase 2 asks for: reshare_later, or, for a flow under TCP slow
  // start, reshare at once (its round's timer is armed after its rate is set, and the rounds of its
  // connection interleave with the completions in that order).
  void reshare_for(bool slow_start, std::span<const int32_t> changed) {
    if (slow_start)
      reshare(changed);
    else
      reshare_later(changed);
  }
  static void reshare_pending_event(void* network, uint64_t);
  // The max-min rate of a flow alone in its component: its slowest constraint's capacity or its cap,
  // exactly what the solver would return (every level it sees is a capacity divided by 1).
  double lone_rate(int32_t id) const {
    return std::min(keys_[static_cast<size_t>(id)].cap, flows_[static_cast<size_t>(id)].lowest);
  }
  // The capacity of flow `id`'s slowest constraint (constant: capacities never change).
  double lowest_capacity(int32_t id) const {
    double lowest = MaxMinSolver::kUncapped;
    for (const int32_t c : constraints_of(id))
      lowest = std::min(lowest, capacity_[static_cast<size_t>(c)]);
    return lowest;
  }
  // The max-min rate of every flow of the component just collected when one link carries them all and
  // is the solver's first bottleneck (its level, capacity / flows, the lowest of the component's link
  // levels and flow caps; ties go to the earlier link, and to any link before a cap, as in the
  // solver's (level, kind, index) order): progressive filling freezes every flow at that level and
  // stops, so this is exactly the solver's answer, found in one pass (a results gather: P - 1 flows
  // into one link, re-solved as each comes and goes). 0 when that does not hold.
  double sole_bottleneck_level() const;
  // Whether a host ceiling carries exactly the flows `link` carries and has no more capacity (a star's
  // NIC link and its host's egress or ingress ceiling, on a cluster with a ceiling below the NIC):
  // then the solver's answer is the same without `link`, which is left out (an entry fewer in its heap
  // and in each freeze of those flows). Progressive filling subtracts the same frozen rates from both,
  // so the link's remaining capacity never falls below the ceiling's and, with as many unfrozen flows,
  // its level never below the ceiling's: the ceiling pops first and freezes all of the link's flows,
  // or the two tie and the link, earlier in the solver's order, pops first and freezes the same flows
  // at the same level. Either way nothing else ever reads the link's state; the other entries keep
  // their order (MaxMin.ALinkShadowedByAnotherChangesNoRate).
  // Found in O(1) from shadow_: the candidates are the two ceilings of the first flow to enter the link
  // since it was last empty (a ceiling all the link's flows share is one of them while that flow is
  // on it), and shadow_ counts, as flows enter and leave, how many of the link's flows have each (a
  // flow's ceilings are its last two constraints). A shadow this misses (the first flow gone, the
  // others sharing another ceiling) leaves the link in the solve, which gives the same rates
  // (MaxMin.ALinkShadowedByAnotherChangesNoRate). Scanning every flow's constraints instead was 25 %
  // of BytePS's run at 4096 ranks.
  bool shadowed_by_ceiling(int32_t link) const;
  // A link's two candidate ceilings (-1: none) and how many of its flows have each.
  struct Shadow {
    int32_t egress = -1;
    int32_t ingress = -1;
    int32_t with_egress = 0;
    int32_t with_ingress = 0;
  };
  // The definition, by scanning the link's flows: a ceiling of its first flow that every flow on it
  // has, carrying no other flow, with no more capacity. Debug builds check shadowed_by_ceiling against
  // it (a shadow claimed where this finds none would change rates).
  bool shared_ceiling_below(int32_t link) const;
  // The component search has just gone through `link`'s flows (a link, not a ceiling, on a network
  // with ceilings): each of its two candidate ceilings (Shadow) that carries exactly those flows is
  // marked in twin_mark_, so that the search passes over its list (every flow on it is marked).
  void mark_twin_ceilings(int32_t link);
  // Whether `ceiling`, one of `link`'s two candidates (Shadow), carries exactly the link's flows, and
  // at least one: `with` of them have it (the candidate's count), and it carries as many.
  bool carries_exactly(int32_t link, int32_t ceiling, int32_t with) const;
  // Flow `f` has just entered (left) `link`, a link (not a ceiling), on a network with ceilings.
  void shadow_enter(const Flow& f, int32_t link);
  void shadow_leave(const Flow& f, int32_t link);
  // Flow `id`'s cap, and whether it binds (FlowKey::cap_binds), from its constraints (set first).
  void set_cap(int32_t id, double cap);
  // Gives flow `id` its newly solved rate, rescheduling its completion if the rate changed.
  void set_rate(int32_t id, double rate);
  // The rates a component search's re-solve changed, given in flow id order (rate_changes_).
  struct RateChange {
    int32_t id;
    double rate;
  };
  void apply_rate_changes();
  void bring_up_to_date(Flow& f);
  void schedule_completion(int32_t id);

  const Topology& topology_;
  ModelFactors factors_;
  // The first host ceiling constraint (host h: egress 2h, ingress 2h + 1); -1: none.
  int ceiling_base_ = -1;
  Engine& engine_;
  std::vector<Flow> flows_;
  std::vector<FlowKey> keys_;        // per flow, as flows_
  std::vector<uint64_t> rate_changed_;  // a bit a flow slot: its rate changed in a whole-network solve
  std::vector<uint64_t> flow_mark_;  // per flow: its component search epoch
  std::vector<int32_t> free_flows_;
  std::vector<double>
      capacity_;  // per constraint: Link::capacity in bytes per second, then the ceilings
  std::vector<std::vector<int32_t>> active_;  // per constraint: the phase-2 flows sharing it
  std::vector<Shadow> shadow_;                // per link, where there are ceilings
  std::vector<int64_t> carried_;              // per link
  std::vector<int32_t> changed_;              // the constraints of a flow that just completed
  Time first_completion_delay_ = Time::ns(-1);                  // of the latest flow's first completion
  // schedule_completion's last delay, ceil_ns(remaining * 1e9 / rate), and what it was found from.
  struct LastDelay {
    double remaining = -1;
    double rate = 0;
    Time delay;
  } last_delay_;
  FlatMap<int64_t, int32_t, ConnectionHash> connection_index_;  // connection -> connections_ index
  std::vector<Connection> connections_;
  FlatMap<int64_t, int32_t, ConnectionHash> tcp_index_;  // FlowHosts::tcp_connection -> tcp_ index
  std::vector<TcpConnection> tcp_;
  std::vector<int32_t> tcp_changed_;  // the constraints of a connection's flows, for a re-solve
  // reshare_later's constraints, each once (pending_mark_), until the end of the instant.
  std::vector<int32_t> pending_;
  std::vector<int32_t> pending_solved_;
  std::vector<bool> pending_mark_;

  uint64_t rate_solves_ = 0;
  uint64_t whole_network_solves_ = 0;
  // Component search and solver scratch.
  uint64_t epoch_ = 0;
  std::vector<uint64_t> link_mark_;
  std::vector<uint64_t> twin_mark_;  // per constraint: epoch_ where mark_twin_ceilings marked it
  std::vector<int32_t> link_local_;  // a marked link's index in the solver, -1: left out
  std::vector<int32_t> flow_local_;  // a component flow's index in the solver (component_flows_)
  std::vector<int32_t> component_links_;
  std::vector<int32_t> component_flows_;
  std::vector<uint64_t> id_bits_;      // sort_distinct_ids's scratch (network.cc)
  std::vector<int32_t> solver_links_;  // the solver's links: component links with flows, unshadowed
  std::vector<RateChange> rate_changes_;
  struct SolverLinks;                  // what the next two share (network.cc)
  struct Component;                    // the component as the solver reads it (network.cc)
  struct WholeNetwork;                 // every phase-2 flow, as the solver reads them (network.cc)
  bool whole_network_allowed_ = true;
  bool whole_network_ = false;  // the next re-solves cover every phase-2 flow (reshare)
  uint32_t solves_since_search_ = 0;
  bool a_cap_bound_ = false;  // some flow's cap could bind (FlowKey::cap_binds), this run
  MaxMinSolver solver_;
};

}  // namespace bagua::netsim
