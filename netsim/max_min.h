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
// The heap holds at most one entry per link and one per flow whose cap is below the capacity of each
// of its links (any other cap never pops before its flow is frozen). A link's key is at most its
// current level: when its flows freeze elsewhere its level rises and its key is left as it was
// (stale), unless rounding made the level fall, when the key follows at once; a stale key that
// reaches the top is re-keyed to the level and sifted down, and only a top whose key is its level
// pops. Every other entry's level is then at least its key, so what pops is the least (level, kind,
// index) of all: the entries pop in the same order as a heap of every level ever pushed with the
// outdated ones skipped, so the freezes, their order and their arithmetic are those of that textbook
// form, while the heap stays as small as the system and a link whose flows freeze elsewhere costs
// no sift until it reaches the top (most never do: filling stops once every flow is frozen). A
// bottleneck's flows are all frozen before the links they left are looked at (once each).
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
  // Heap items: link l is item l, flow f's cap is item links() + f, so that ordering entries by
  // (level, item) is ordering them by (level, kind, index).
  struct Entry {
    double level;
    int32_t item;
  };
  static bool before(const Entry& a, const Entry& b) {
    return a.level != b.level ? a.level < b.level : a.item < b.item;
  }
  void place(size_t at, const Entry& e) {
    heap_[at] = e;
    position_[static_cast<size_t>(e.item)] = static_cast<int32_t>(at);
  }
  void sift_up(size_t at);
  void sift_down(size_t at);
  // Removes and returns the first entry.
  Entry pop();
  // Freezes `flow` at `rate`, taking it off its links; the links it leaves with unfrozen flows are
  // listed in touched_ (once each) for rekey_touched().
  void freeze(int flow, double rate);
  // Every touched link's entry whose level fell below its key gets its level (one that rose is left
  // stale for solve()).
  void rekey_touched();

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
  std::vector<uint8_t> frozen_;
  std::vector<uint8_t> is_touched_;  // per link: listed in touched_
  std::vector<int32_t> touched_;
  size_t frozen_count_ = 0;
  std::vector<double> rate_;
  // A 4-ary heap, first by before(): half a binary heap's depth, a node's children side by side
  // (64 bytes). Keys are distinct (item breaks ties), so any heap pops the entries in the same order.
  static constexpr size_t kArity = 4;
  std::vector<Entry> heap_;
  std::vector<int32_t> position_;  // per item: its index in heap_, -1 when not there
};

}  // namespace bagua::netsim
