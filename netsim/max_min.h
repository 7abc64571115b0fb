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

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace bagua::netsim {

// A System (MaxMinSolver::solve) that is told of each freeze.
template <class System>
constexpr bool kToldOfFreezes = requires(const System& s) {
  s.frozen(size_t{0}, 0.0);
};

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

  // The same for a system read in place instead of one built with add_link and add_flow (what
  // FlowNetwork::reshare hands a component as, without copying it). `System` has, for links
  // l < links() and flows f < flows() (the solver's indices, which break its ties):
  //   size_t links(), flows();  double capacity(l), cap(f);  size_t flows_on(l);
  //   each_flow_on(l, fn): fn(f) for every flow on link l, in any order;
  //   each_link_of(f, fn): fn(l) for every link flow f crosses, each once;
  // and it may have frozen(f, rate), told of each flow's rate as it freezes (after each_link_of(f)),
  // in which case the rates returned are read only for the flows frozen: those of the others are
  // left as they were, not set to +infinity (a pass over every flow per solve saved).
  // The order of a link's flows does not matter: a bottleneck's flows all freeze at its level, each
  // taking that same amount off each of its other links, and the heap pops by (level, item) alone, so
  // the rates are the same bits whatever it is (MaxMin.SystemsReadInPlaceGetTheTextbookRatesInAnyOrder).
  template <class System>
  const std::vector<double>& solve(const System& system);

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
  // `bottleneck` (kNoLink for a cap) is the link just popped, whose flows these are: its remaining
  // capacity and unfrozen count are never read again (its entry has left the heap, and no entry comes
  // back), so they are not updated, which takes a chain of dependent floating-point updates (each
  // of its flows subtracted in turn from one remaining capacity) out of its freezes. The other
  // links' updates, and so every rate, are the same.
  // Inlined into the bottleneck's loop over its flows (a call saving six registers a flow: BytePS on
  // VGG16 at 4096 ranks, three alternated pairs, 23.2 / 25.4 / 26.4 -> 21.9 / 21.9 / 26.5 s of CPU).
  static constexpr size_t kNoLink = SIZE_MAX;
  template <class System>
  void freeze(const System& system, size_t flow, double rate, size_t bottleneck = kNoLink);
  // The system built with add_link and add_flow, as solve(System) reads one.
  struct Built;
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
  std::vector<int32_t> link_flows_;  // (for the built system)
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

template <class System>
[[gnu::always_inline]] inline void MaxMinSolver::freeze(const System& system, size_t flow, double rate,
                                                        size_t bottleneck) {
  frozen_[flow] = 1;
  ++frozen_count_;
  rate_[flow] = rate;
  system.each_link_of(flow, [&](size_t l) {
    if (l == bottleneck) return;
    remaining_[l] = std::max(0.0, remaining_[l] - rate);
    --unfrozen_[l];
    if (!is_touched_[l]) {
      is_touched_[l] = 1;
      touched_.push_back(static_cast<int32_t>(l));
    }
  });
  if constexpr (kToldOfFreezes<System>) system.frozen(flow, rate);
}

template <class System>
const std::vector<double>& MaxMinSolver::solve(const System& system) {
  const size_t n_links = system.links();
  const size_t n_flows = system.flows();
  remaining_.resize(n_links);
  unfrozen_.resize(n_links);
  for (size_t l = 0; l < n_links; ++l) {
    remaining_[l] = system.capacity(l);
    unfrozen_[l] = static_cast<int32_t>(system.flows_on(l));
  }
  frozen_.assign(n_flows, 0);
  frozen_count_ = 0;
  is_touched_.assign(n_links, 0);
  touched_.clear();
  if constexpr (kToldOfFreezes<System>)
    rate_.resize(n_flows);
  else
    rate_.assign(n_flows, kUncapped);

  heap_.clear();
  // A cap's position is written when it is pushed, and read only while it is in the heap; a link's
  // is read by rekey_touched whether it was pushed or not.
  position_.resize(n_links + n_flows);
  std::fill_n(position_.begin(), n_links, -1);
  for (size_t l = 0; l < n_links; ++l)
    if (unfrozen_[l] > 0) heap_.push_back({remaining_[l] / unfrozen_[l], static_cast<int32_t>(l)});
  // A flow's cap matters only below the capacity of each of its links: every level a link has is at
  // most its capacity (remaining <= capacity, at least one unfrozen flow), so while the flow is
  // unfrozen one of its links has a key below the cap (or equal, and links pop first), and the flow
  // freezes there first; its cap's entry would only ever be skipped.
  for (size_t f = 0; f < n_flows; ++f) {
    const double cap = system.cap(f);
    if (cap == kUncapped) continue;
    double lowest_capacity = kUncapped;
    system.each_link_of(
        f, [&](size_t l) { lowest_capacity = std::min(lowest_capacity, system.capacity(l)); });
    if (cap < lowest_capacity) heap_.push_back({cap, static_cast<int32_t>(n_links + f)});
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
      const size_t flow = static_cast<size_t>(e.item) - n_links;
      if (!frozen_[flow]) {
        freeze(system, flow, e.level);
        rekey_touched();
      }
      continue;
    }
    // A link: every flow still unfrozen on it freezes at its level.
    const auto bottleneck = static_cast<size_t>(e.item);
    system.each_flow_on(bottleneck, [&](size_t f) {
      if (!frozen_[f]) freeze(system, f, e.level, bottleneck);
    });
    rekey_touched();
  }
  // Flows that cross no link and have no cap keep +infinity (where the System is not told of freezes).
  return rate_;
}

}  // namespace bagua::netsim
