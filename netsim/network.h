// The flow-level network model.
//
// Terms:
//   flow        one message's bytes moving along its route. Phase 1: the route latency elapses and the
//               flow uses no bandwidth. Phase 2: its bytes move at its current rate; it completes when
//               they are done.
//   rate        a phase-2 flow's share: the max-min fair allocation (max_min.h) over the links'
//               capacities (bandwidth * bandwidth efficiency), each flow also capped by the window cap
//   component   the phase-2 flows connected to a link through shared links; a flow starting or ending
//               changes rates only within the component(s) of its links, so only those are re-solved.
//               A flow alone on all its links is a component by itself, whose rate needs no solver: the
//               capacity of its slowest link, or its cap
//   remaining   a flow's bytes still to move, as of the time it was last brought up to date
//
// When rates are re-solved, a flow whose rate did not change is left untouched (its completion event
// stands); a flow whose rate changed is first brought up to date at its old rate (remaining -= rate *
// the time since its last update), then given its new rate and a new completion event at
//   now + ceil(remaining / rate)     (whole nanoseconds)
// and its old event is cancelled. Every step is a fixed sequence of floating-point operations on values
// visited in a deterministic order, so runs are bit-identical. A single flow of S bytes on a route of
// latency L whose slowest link has capacity B therefore completes after exactly L + ceil(S / B).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "netsim/engine.h"
#include "netsim/max_min.h"
#include "netsim/topology.h"

namespace bagua::netsim {

class FlowNetwork {
 public:
  // `window_cap`: the per-flow rate cap (bytes per second, +infinity for none).
  FlowNetwork(const Topology& topology, Bandwidth window_cap, Engine& engine);

  // Starts a flow of `bytes` along `route` now; `done` runs (as an event) when its last byte arrives.
  // `keep_alive` (may be null) is held until then: whatever `done` refers to lives until it has run, or
  // until the network is destroyed.
  void start(const Route& route, Bytes bytes, Callback done,
             std::shared_ptr<void> keep_alive = nullptr);

  // Bytes carried by each link so far (completed flows), indexed like Topology::links().
  const std::vector<int64_t>& carried() const { return carried_; }

 private:
  struct Flow {
    Route route;
    // Index in each link's active list, by route position (a flow slot is reused, and its capacity
    // with it: no allocation once the slots are warm).
    std::vector<int32_t> position;
    int64_t bytes = 0;
    double remaining = 0;  // bytes, as of `updated`
    double rate = 0;       // bytes per second; 0 until first solved
    Time updated;
    EventQueue::Handle completion = EventQueue::kNoEvent;
    uint64_t mark = 0;  // component search epoch
    Callback done;
    std::shared_ptr<void> keep_alive;
  };

  static void enter_transfer_event(void* network, uint64_t id);
  static void complete_event(void* network, uint64_t id);
  int32_t allocate_flow();
  void enter_transfer(int32_t id);
  void complete(int32_t id);
  // Re-solves the components of the given links and reschedules the flows whose rate changed.
  void reshare(const Route& changed);
  // The max-min rate of a flow alone in its component: its slowest link's capacity or the window cap,
  // exactly what the solver would return (every level it sees is a capacity divided by 1).
  double lone_rate(const Route& route) const;
  // Gives flow `id` its newly solved rate, rescheduling its completion if the rate changed.
  void set_rate(int32_t id, double rate);
  void bring_up_to_date(Flow& f);
  void schedule_completion(int32_t id);

  const Topology& topology_;
  double window_cap_;
  Engine& engine_;
  std::vector<Flow> flows_;
  std::vector<int32_t> free_flows_;
  std::vector<double> capacity_;  // per link: Link::capacity in bytes per second, side by side
  std::vector<std::vector<int32_t>> active_;  // per link: the phase-2 flows crossing it
  std::vector<int64_t> carried_;              // per link

  // Component search and solver scratch.
  uint64_t epoch_ = 0;
  std::vector<uint64_t> link_mark_;
  std::vector<int32_t> link_local_;  // a marked link's index in the solver
  std::vector<int32_t> component_links_;
  std::vector<int32_t> component_flows_;
  MaxMinSolver solver_;
};

}  // namespace bagua::netsim
