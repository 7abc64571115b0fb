// Max-min fair sharing of link capacities among flows, by progressive filling (SimGrid's LMM without
// weights): flows are the variables, links the constraints.
//
// Terms:
//   capacity    what a link can carry (bytes per second); the flows crossing it share it
//   cap         a flow's own upper bound (e.g. a window cap), +infinity when it has none
//   level       the rate every still-unfrozen flow on a link would get if it were the tightest:
//               (capacity - rates of frozen flows on it) / (number of unfrozen flows on it)
//   bottleneck  the link (or flow cap) with the lowest level; its unfrozen flows are frozen at that
//               level
//
// Progressive filling raises all unfrozen rates together; the first constraint to fill is the
// bottleneck, its flows are frozen, the capacity they take is removed from every other link they cross,
// and filling goes on with the rest. A link's level never decreases when another link's flows freeze
// (they freeze at a rate no higher than its level), so a heap of levels with stale entries skipped
// gives the bottlenecks in order. Ties are broken by (level, kind, index): the result is deterministic.
//
// Only a link's latest entry counts (an older one is stale and skipped), and every entry is popped in
// that (level, kind, index) order whatever the heap's layout; so the heap is built at once, a
// bottleneck's flows are all frozen before the links they touched get their one new entry each, and
// filling stops once every flow is frozen (what is left in the heap would all be skipped): the same
// freezes, in the same order, with the same arithmetic as pushing an entry at every freeze and popping
// the heap empty, in time linear in the system's size for the common one-bottleneck component.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace bagua::netsim {

class MaxMinSolver {
 public:
  static constexpr double kUncapped = std::numeric_limits<double>::infinity();

  void clear();
  // Returns the new link's index.
  int add_link(double capacity);
  // `links` are indices returned by add_link; returns the new flow's index.
  int add_flow(std::span<const int> links, double cap = kUncapped);
  int links() const { return static_cast<int>(capacity_.size()); }
  int flows() const { return static_cast<int>(cap_.size()); }
  // The max-min fair rate of every flow, indexed by flow. Valid until the next call that changes the
  // system.
  const std::vector<double>& solve();

 private:
  struct Entry {
    double level;
    uint8_t kind;  // 0: a link's level, 1: a flow's cap
    int32_t index;
    uint32_t version;
  };
  // The heap's order: `a` pops after `b`. A function object, so that the heap's code inlines it.
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const {
      if (a.level != b.level) return a.level > b.level;
      if (a.kind != b.kind) return a.kind > b.kind;
      return a.index > b.index;
    }
  };
  void push(Entry e);
  // Freezes `flow` at `rate`, taking it off its links; the links it leaves with unfrozen flows are
  // listed in touched_ (once each) for push_touched().
  void freeze(int flow, double rate);
  // A new entry for every touched link that still has unfrozen flows.
  void push_touched();

  // The system.
  std::vector<double> capacity_;
  std::vector<double> cap_;
  std::vector<int32_t> flow_begin_{
      0};  // flow f crosses flow_links_[flow_begin_[f] .. flow_begin_[f + 1])
  std::vector<int32_t> flow_links_;
  // Scratch, reused between solves.
  std::vector<int32_t> link_begin_;  // link l carries link_flows_[link_begin_[l] .. link_begin_[l + 1])
  std::vector<int32_t> link_flows_;
  std::vector<double> remaining_;
  std::vector<int32_t> unfrozen_;
  std::vector<uint32_t> version_;
  std::vector<uint8_t> frozen_;
  std::vector<uint8_t> is_touched_;  // per link: listed in touched_
  std::vector<int32_t> touched_;
  size_t frozen_count_ = 0;
  std::vector<double> rate_;
  std::vector<Entry> heap_;
};

}  // namespace bagua::netsim
