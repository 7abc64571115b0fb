#include "netsim/max_min.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace bagua::netsim {
namespace {

// Progressive filling in its textbook form, the solver's before its heap was indexed: a heap of every
// level ever computed (a link's level pushed again at each freeze, the outdated ones skipped by
// version), popped until empty. The solver must give exactly these rates, bit for bit: the simulator's
// results depend on every rounding.
std::vector<double> textbook_max_min(const std::vector<double>& capacity,
                                     const std::vector<std::vector<int>>& flows,
                                     const std::vector<double>& cap) {
  struct Entry {
    double level;
    int kind;  // 0: a link's level, 1: a flow's cap
    int index;
    unsigned version;
  };
  const auto later = [](const Entry& a, const Entry& b) {
    if (a.level != b.level) return a.level > b.level;
    if (a.kind != b.kind) return a.kind > b.kind;
    return a.index > b.index;
  };
  const size_t links = capacity.size();
  std::vector<double> remaining = capacity;
  std::vector<int> unfrozen(links, 0);
  std::vector<std::vector<int>> on_link(links);
  for (size_t f = 0; f < flows.size(); ++f)
    for (int l : flows[f]) {
      ++unfrozen[static_cast<size_t>(l)];
      on_link[static_cast<size_t>(l)].push_back(static_cast<int>(f));
    }
  std::vector<unsigned> version(links, 0);
  std::vector<bool> frozen(flows.size(), false);
  std::vector<double> rate(flows.size(), MaxMinSolver::kUncapped);
  std::vector<Entry> heap;
  const auto push = [&](Entry e) {
    heap.push_back(e);
    std::push_heap(heap.begin(), heap.end(), later);
  };
  const auto freeze = [&](int f, double r) {
    frozen[static_cast<size_t>(f)] = true;
    rate[static_cast<size_t>(f)] = r;
    for (int l : flows[static_cast<size_t>(f)]) {
      const auto i = static_cast<size_t>(l);
      remaining[i] = std::max(0.0, remaining[i] - r);
      --unfrozen[i];
      ++version[i];
      if (unfrozen[i] > 0) push({remaining[i] / unfrozen[i], 0, l, version[i]});
    }
  };
  for (size_t l = 0; l < links; ++l)
    if (unfrozen[l] > 0) push({remaining[l] / unfrozen[l], 0, static_cast<int>(l), 0});
  for (size_t f = 0; f < flows.size(); ++f)
    if (cap[f] != MaxMinSolver::kUncapped) push({cap[f], 1, static_cast<int>(f), 0});
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const Entry e = heap.back();
    heap.pop_back();
    const auto i = static_cast<size_t>(e.index);
    if (e.kind == 1) {
      if (!frozen[i]) freeze(e.index, e.level);
      continue;
    }
    if (e.version != version[i] || unfrozen[i] == 0) continue;
    for (int f : on_link[i])
      if (!frozen[static_cast<size_t>(f)]) freeze(f, e.level);
  }
  return rate;
}

// A random route: 1 to 4 distinct links of `links`, in random order.
std::vector<int> random_route(std::mt19937_64& rng, int links) {
  std::vector<int> all(static_cast<size_t>(links));
  for (int l = 0; l < links; ++l)
    all[static_cast<size_t>(l)] = l;
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(std::min<size_t>(all.size(), 1 + rng() % 4));
  return all;
}

std::vector<double> solve(MaxMinSolver& s) {
  return s.solve();
}

TEST(MaxMin, OneFlowGetsItsBottleneck) {
  // One flow over links of capacity 10 and 4: the tighter one, 4.
  MaxMinSolver s;
  const int a = s.add_link(10), b = s.add_link(4);
  s.add_flow(std::vector<int>{a, b});
  EXPECT_EQ(solve(s), (std::vector<double>{4}));
}

TEST(MaxMin, TwoFlowsShareALinkEqually) {
  // Two flows on one link of capacity 10: 5 each.
  MaxMinSolver s;
  const int l = s.add_link(10);
  s.add_flow(std::vector<int>{l});
  s.add_flow(std::vector<int>{l});
  EXPECT_EQ(solve(s), (std::vector<double>{5, 5}));
}

TEST(MaxMin, ALinkWhoseLevelRoseWhileItWaitedIsNotTheBottleneckAtItsOldLevel) {
  // A (capacity 10) carries f0 and f1, B (12) carries f1 and f2, C (3) carries f0. Levels: A 5, B 6,
  // C 3. C pops first: f0 = 3, and A's level rises to (10 - 3) / 1 = 7 while its heap key stays 5
  // (left stale). The least key is then A's 5, but A's level is 7: B, at 6, is the bottleneck, so
  // f1 = f2 = 6. A popped at its stale key would give f1 5 (and f2 7).
  MaxMinSolver s;
  const int a = s.add_link(10), b = s.add_link(12), c = s.add_link(3);
  s.add_flow(std::vector<int>{a, c});
  s.add_flow(std::vector<int>{a, b});
  s.add_flow(std::vector<int>{b});
  EXPECT_EQ(solve(s), (std::vector<double>{3, 6, 6}));
}

TEST(MaxMin, TwoFlowsAFlowLimitedElsewhereLeavesCapacityToTheOther) {
  // L0 (capacity 10) carries f0 and f1; f0 also crosses L1 (capacity 4).
  // Levels: L0 10/2 = 5, L1 4/1 = 4. L1 is the bottleneck: f0 = 4. L0 has 10 - 4 = 6 left for f1 alone:
  // f1 = 6 (not the equal share 5).
  MaxMinSolver s;
  const int l0 = s.add_link(10), l1 = s.add_link(4);
  s.add_flow(std::vector<int>{l0, l1});
  s.add_flow(std::vector<int>{l0});
  EXPECT_EQ(solve(s), (std::vector<double>{4, 6}));
}

TEST(MaxMin, ThreeFlowsWithALinkBottleneckAndACap) {
  // L0 (12) carries f0, f1, f2; f0 also crosses L1 (2); f2 has its own cap 3.
  // Levels: L0 12/3 = 4, L1 2/1 = 2, cap(f2) = 3.
  //   1. L1 at 2: f0 = 2; L0 has 10 left for 2 flows: level 5.
  //   2. cap(f2) at 3 < 5: f2 = 3; L0 has 7 left for f1: level 7.
  //   3. L0 at 7: f1 = 7.                                  Rates (2, 7, 3), summing to L0's 12.
  MaxMinSolver s;
  const int l0 = s.add_link(12), l1 = s.add_link(2);
  s.add_flow(std::vector<int>{l0, l1});
  s.add_flow(std::vector<int>{l0});
  s.add_flow(std::vector<int>{l0}, /*cap=*/3);
  EXPECT_EQ(solve(s), (std::vector<double>{2, 7, 3}));
}

TEST(MaxMin, ThreeFlowsParkingLot) {
  // The parking lot: f0 on L0, f1 on L1, f2 on both. L0 capacity 1, L1 capacity 2.
  // Levels: L0 1/2 = 0.5, L1 2/2 = 1. L0 first: f0 = f2 = 0.5. L1 has 2 - 0.5 = 1.5 for f1.
  MaxMinSolver s;
  const int l0 = s.add_link(1), l1 = s.add_link(2);
  s.add_flow(std::vector<int>{l0});
  s.add_flow(std::vector<int>{l1});
  s.add_flow(std::vector<int>{l0, l1});
  EXPECT_EQ(solve(s), (std::vector<double>{0.5, 1.5, 0.5}));
}

TEST(MaxMin, ThreeFlowsEqualCapacitiesEverybodyGetsAThird) {
  // Three flows on one link of capacity 3e9: 1e9 each (exact in binary floating point).
  MaxMinSolver s;
  const int l = s.add_link(3e9);
  for (int i = 0; i < 3; ++i)
    s.add_flow(std::vector<int>{l});
  EXPECT_EQ(solve(s), (std::vector<double>{1e9, 1e9, 1e9}));
}

TEST(MaxMin, CapBelowEveryShareAndUncappedFlowWithoutLinks) {
  // f0: cap 1 on a link of 100 shared with f1: f0 = 1, f1 = 99. f2 crosses nothing, has no cap:
  // infinite.
  MaxMinSolver s;
  const int l = s.add_link(100);
  s.add_flow(std::vector<int>{l}, 1);
  s.add_flow(std::vector<int>{l});
  s.add_flow(std::vector<int>{});
  const std::vector<double> r = solve(s);
  EXPECT_EQ(r[0], 1);
  EXPECT_EQ(r[1], 99);
  EXPECT_EQ(r[2], MaxMinSolver::kUncapped);
}

TEST(MaxMin, TiedLinksSharingAFlowRoundDependingOnWhichIsAddedFirst) {
  // Links A and B of 12.5e9 (100 Gbit/s) carry three flows each, one of them (f2) on both: both
  // levels are 12.5e9 / 3, a tie, broken by the order the links were added. The first to pop freezes
  // its three flows at x = fl(12.5e9 / 3) = 4166666666.6666665; the other is left 12.5e9 - x for two
  // flows, y = fl((12.5e9 - x) / 2) = 4166666666.666667, one ulp above x. In exact arithmetic every
  // flow gets 12.5e9 / 3; in floating point which two flows get y depends on the order of the links.
  // So the rates of a component depend on the order of its links: FlowNetwork hands the solver a
  // component's links in id order (network.h, "tie order"), not in the order its search met them.
  const double c = 12.5e9;
  const double x = c / 3;
  const double y = (c - x) / 2;
  ASSERT_NE(x, y);
  const auto rates = [&](bool a_first) {
    MaxMinSolver s;
    const int first = s.add_link(c);
    const int second = s.add_link(c);
    const int a = a_first ? first : second;
    const int b = a_first ? second : first;
    s.add_flow(std::vector<int>{a});
    s.add_flow(std::vector<int>{a});
    s.add_flow(std::vector<int>{a, b});
    s.add_flow(std::vector<int>{b});
    s.add_flow(std::vector<int>{b});
    return solve(s);
  };
  EXPECT_EQ(rates(true), (std::vector<double>{x, x, x, y, y}));
  EXPECT_EQ(rates(false), (std::vector<double>{y, y, x, x, x}));
}

TEST(MaxMin, DisjointSystemsSolvedTogetherGetTheRatesEachGetsAlone) {
  // What FlowNetwork's whole-network re-solve relies on: two systems that share no link, solved as
  // one with their links and their flows merged in any order that keeps each system's own order,
  // give each flow the rate it gets when its system is solved alone, bit for bit (a pop of one
  // system changes nothing of the other's, and the heap pops each system's entries in the same
  // relative order). Random systems as below: few values, so that levels and caps tie.
  std::mt19937_64 rng(2024);
  const double kValues[] = {1, 2, 3, 4.5, 10, 1e9 / 3};
  struct System {
    std::vector<double> capacity, cap;
    std::vector<std::vector<int>> routes;
  };
  const auto random_system = [&] {
    System sys;
    const int links = 1 + static_cast<int>(rng() % 10);
    const int flows = 1 + static_cast<int>(rng() % 30);
    for (int l = 0; l < links; ++l)
      sys.capacity.push_back(kValues[rng() % 6]);
    for (int f = 0; f < flows; ++f) {
      sys.routes.push_back(random_route(rng, links));
      sys.cap.push_back(rng() % 3 == 0 ? kValues[rng() % 6] : MaxMinSolver::kUncapped);
    }
    return sys;
  };
  const auto alone = [](const System& sys) {
    MaxMinSolver s;
    for (double c : sys.capacity)
      s.add_link(c);
    for (size_t f = 0; f < sys.routes.size(); ++f)
      s.add_flow(sys.routes[f], sys.cap[f]);
    return solve(s);
  };
  // A random merge of n items of system 0 and m of system 1, each in its own order.
  const auto merge = [&](size_t n, size_t m) {
    std::vector<int> from(n, 0);
    from.resize(n + m, 1);
    std::shuffle(from.begin(), from.end(), rng);
    return from;
  };
  int shared = 0;
  for (int trial = 0; trial < 500; ++trial) {
    const System sys[2] = {random_system(), random_system()};
    const std::vector<double> expected[2] = {alone(sys[0]), alone(sys[1])};
    MaxMinSolver s;
    std::vector<int> link_index[2];
    for (const int which : merge(sys[0].capacity.size(), sys[1].capacity.size())) {
      const size_t l = link_index[which].size();
      link_index[which].push_back(s.add_link(sys[which].capacity[l]));
    }
    std::vector<std::pair<int, size_t>> flow_of;  // merged flow -> (system, its flow)
    size_t next[2] = {0, 0};
    for (const int which : merge(sys[0].routes.size(), sys[1].routes.size())) {
      const size_t f = next[which]++;
      std::vector<int> route;
      for (int l : sys[which].routes[f])
        route.push_back(link_index[which][static_cast<size_t>(l)]);
      shared += route.size() > 1;
      s.add_flow(route, sys[which].cap[f]);
      flow_of.push_back({which, f});
    }
    const std::vector<double> together = solve(s);
    for (size_t k = 0; k < together.size(); ++k)
      ASSERT_EQ(together[k], expected[flow_of[k].first][flow_of[k].second]) << "trial " << trial;
  }
  EXPECT_GT(shared, 1000);  // flows do cross several links
}

TEST(MaxMin, ALinkShadowedByAnotherChangesNoRate) {
  // FlowNetwork leaves out of the solver a link whose flows are exactly another's and whose capacity
  // is no lower (network.h, shadowed_by_ceiling). Random systems (as below) solved as they are and
  // with shadows added: for some links a copy carrying the same flows, of the same or a higher
  // capacity, placed before or after the original in the solver's order. Every rate must be the same,
  // bit for bit, ties included (equal capacities, drawn from a few values).
  std::mt19937_64 rng(5);
  const double kValues[] = {1, 2, 3, 4.5, 10, 1e9 / 3, 12.5e9, 9.6e9};
  int shadows_added = 0;
  for (int system = 0; system < 3000; ++system) {
    const int links = 1 + static_cast<int>(rng() % 10);
    const int flows = 1 + static_cast<int>(rng() % 30);
    std::vector<double> capacity, cap;
    for (int l = 0; l < links; ++l)
      capacity.push_back(kValues[rng() % 8]);
    std::vector<std::vector<int>> routes;
    for (int f = 0; f < flows; ++f) {
      const std::vector<int> all = random_route(rng, links);
      routes.push_back(all);
      cap.push_back(rng() % 4 == 0 ? kValues[rng() % 8] : MaxMinSolver::kUncapped);
    }
    MaxMinSolver plain;
    for (double c : capacity)
      plain.add_link(c);
    for (size_t f = 0; f < routes.size(); ++f)
      plain.add_flow(routes[f], cap[f]);
    const std::vector<double> expected = plain.solve();
    // The shadowed system: link l at position at[l], its shadow (if any) just before or after it.
    std::vector<int> at(static_cast<size_t>(links)), shadow_at(static_cast<size_t>(links), -1);
    MaxMinSolver shadowed;
    for (int l = 0; l < links; ++l) {
      const bool shadow = rng() % 2 == 0;
      const bool before = rng() % 2 == 0;
      const double higher =
          rng() % 2 == 0 ? capacity[static_cast<size_t>(l)] : capacity[static_cast<size_t>(l)] * 1.5;
      if (shadow && before) shadow_at[static_cast<size_t>(l)] = shadowed.add_link(higher);
      at[static_cast<size_t>(l)] = shadowed.add_link(capacity[static_cast<size_t>(l)]);
      if (shadow && !before) shadow_at[static_cast<size_t>(l)] = shadowed.add_link(higher);
      shadows_added += shadow;
    }
    for (size_t f = 0; f < routes.size(); ++f) {
      std::vector<int> route;
      for (int l : routes[f]) {
        route.push_back(at[static_cast<size_t>(l)]);
        if (shadow_at[static_cast<size_t>(l)] >= 0) route.push_back(shadow_at[static_cast<size_t>(l)]);
      }
      shadowed.add_flow(route, cap[f]);
    }
    EXPECT_EQ(shadowed.solve(), expected) << "system " << system;
    if (::testing::Test::HasFailure()) break;
  }
  EXPECT_GT(shadows_added, 5000);
}

TEST(MaxMin, ClearAndReuse) {
  MaxMinSolver s;
  s.add_flow(std::vector<int>{s.add_link(10)});
  EXPECT_EQ(solve(s), (std::vector<double>{10}));
  s.clear();
  const int l = s.add_link(6);
  s.add_flow(std::vector<int>{l});
  s.add_flow(std::vector<int>{l});
  s.add_flow(std::vector<int>{l});
  EXPECT_EQ(solve(s), (std::vector<double>{2, 2, 2}));
}

// `systems` random systems of up to `max_links` links and `max_flows` flows, each solved by the solver
// and by textbook_max_min(); returns how many links of them carry more than one flow.
int expect_random_systems_textbook(uint64_t seed, int systems, int max_links, int max_flows) {
  std::mt19937_64 rng(seed);
  const double kValues[] = {1, 2, 3, 4.5, 10, 1e9 / 3};
  int multi_flow_links = 0;
  for (int system = 0; system < systems; ++system) {
    const int links = 1 + static_cast<int>(rng() % static_cast<uint64_t>(max_links));
    const int flows = 1 + static_cast<int>(rng() % static_cast<uint64_t>(max_flows));
    const bool round_values = rng() % 2 == 0;
    const auto value = [&] {
      return round_values ? kValues[rng() % 6]
                          : 0.5 + std::uniform_real_distribution<double>(0, 100)(rng);
    };
    std::vector<double> capacity, cap;
    std::vector<std::vector<int>> routes;
    MaxMinSolver s;
    for (int l = 0; l < links; ++l) {
      capacity.push_back(value());
      s.add_link(capacity.back());
    }
    std::vector<int> uses(static_cast<size_t>(links), 0);
    for (int f = 0; f < flows; ++f) {
      const std::vector<int> all = random_route(rng, links);
      for (int l : all)
        ++uses[static_cast<size_t>(l)];
      routes.push_back(all);
      cap.push_back(rng() % 3 == 0 ? value() : MaxMinSolver::kUncapped);
      s.add_flow(routes.back(), cap.back());
    }
    for (int u : uses)
      multi_flow_links += u > 1;
    const std::vector<double> expected = textbook_max_min(capacity, routes, cap);
    EXPECT_EQ(s.solve(), expected) << "system " << system << " of seed " << seed;
    if (::testing::Test::HasFailure()) break;
  }
  return multi_flow_links;
}

TEST(MaxMin, RandomSystemsGetExactlyTheTextbookRates) {
  // 2000 random systems: up to 12 links and 40 flows of 1 to 4 distinct links, capacities and caps
  // drawn from a few values (so that levels tie) or at random, a third of the flows capped. Every
  // rate must equal the textbook form's exactly (EXPECT_EQ on doubles), including ties and flows whose
  // cap is their bottleneck.
  EXPECT_GT(expect_random_systems_textbook(12, 2000, 12, 40), 2000);  // the systems do share links
}

TEST(MaxMin, LargeRandomSystemsGetExactlyTheTextbookRates) {
  // 100 systems of up to 300 links and 1500 flows: a link's level rises many times before it pops
  // (its heap key stale, brought up to date at the top), and filling stops with stale keys left.
  EXPECT_GT(expect_random_systems_textbook(7, 100, 300, 1500), 5000);
}

// A system read in place (MaxMinSolver::solve(System)) whose links list their flows, and flows their
// links, in a shuffled order.
struct ShuffledSystem {
  std::vector<double> capacity_of, cap_of;
  std::vector<std::vector<int>> links_of;  // per flow
  std::vector<std::vector<int>> flows_of;  // per link
  size_t links() const { return capacity_of.size(); }
  size_t flows() const { return cap_of.size(); }
  double capacity(size_t l) const { return capacity_of[l]; }
  double cap(size_t f) const { return cap_of[f]; }
  size_t flows_on(size_t l) const { return flows_of[l].size(); }
  template <class Fn>
  void each_flow_on(size_t l, Fn&& fn) const {
    for (int f : flows_of[l])
      fn(static_cast<size_t>(f));
  }
  template <class Fn>
  void each_link_of(size_t f, Fn&& fn) const {
    for (int l : links_of[f])
      fn(static_cast<size_t>(l));
  }
};

TEST(MaxMin, SystemsReadInPlaceGetTheTextbookRatesInAnyOrder) {
  // What FlowNetwork hands the solver: its links' flow lists in the order flows came and went, not
  // in the solver's flow order. 2000 random systems as in RandomSystemsGetExactlyTheTextbookRates
  // (tied levels among them), each link's flows and each flow's links shuffled: every rate must be
  // the textbook form's, bit for bit. The solver's own built systems are solved the same way.
  std::mt19937_64 rng(5);
  const double kValues[] = {1, 2, 3, 4.5, 10, 1e9 / 3};
  int reordered = 0;
  for (int system = 0; system < 2000; ++system) {
    const int links = 1 + static_cast<int>(rng() % 12);
    const int flows = 1 + static_cast<int>(rng() % 40);
    const bool round_values = rng() % 2 == 0;
    const auto value = [&] {
      return round_values ? kValues[rng() % 6]
                          : 0.5 + std::uniform_real_distribution<double>(0, 100)(rng);
    };
    ShuffledSystem in_place;
    std::vector<std::vector<int>> routes;
    for (int l = 0; l < links; ++l)
      in_place.capacity_of.push_back(value());
    in_place.flows_of.resize(static_cast<size_t>(links));
    for (int f = 0; f < flows; ++f) {
      const std::vector<int> all = random_route(rng, links);
      routes.push_back(all);
      in_place.cap_of.push_back(rng() % 3 == 0 ? value() : MaxMinSolver::kUncapped);
      for (int l : all)
        in_place.flows_of[static_cast<size_t>(l)].push_back(f);
    }
    in_place.links_of = routes;
    for (auto& on_link : in_place.flows_of) {
      const std::vector<int> before = on_link;
      std::shuffle(on_link.begin(), on_link.end(), rng);
      reordered += on_link != before;
    }
    for (auto& route : in_place.links_of)
      std::shuffle(route.begin(), route.end(), rng);
    const std::vector<double> expected =
        textbook_max_min(in_place.capacity_of, routes, in_place.cap_of);
    MaxMinSolver s;
    EXPECT_EQ(s.solve(in_place), expected) << "system " << system;
    if (::testing::Test::HasFailure()) break;
  }
  EXPECT_GT(reordered, 2000);  // the orders did differ from the solver's
}

// ShuffledSystem, told of each freeze (MaxMinSolver::solve's optional System::frozen).
struct ToldSystem : ShuffledSystem {
  std::vector<int>* told_times;
  std::vector<double>* told_rate;
  void frozen(size_t f, double rate) const {
    ++(*told_times)[f];
    (*told_rate)[f] = rate;
  }
};
static_assert(kToldOfFreezes<ToldSystem> && !kToldOfFreezes<ShuffledSystem>);

TEST(MaxMin, ASystemToldOfFreezesHearsOfEachFlowOnceAtItsRate) {
  // What a whole-network re-solve relies on to find the flows whose rate changed without a pass over
  // every flow: every flow that freezes is told once, at the rate solve() returns for it (the
  // textbook's), and a flow that crosses no link and has no cap is never told. By hand, two links of
  // capacity 6 and 10, flow 0 on both, flow 1 on the first, flow 2 on the second, flow 3 on none:
  // link 0's level 3 pops first and freezes flows 0 and 1 at 3; link 1 is left 10 - 3 = 7 for flow 2.
  {
    std::vector<int> times(4, 0);
    std::vector<double> told(4, -1);
    ToldSystem s;
    s.capacity_of = {6, 10};
    s.cap_of = {MaxMinSolver::kUncapped, MaxMinSolver::kUncapped, MaxMinSolver::kUncapped,
                MaxMinSolver::kUncapped};
    s.links_of = {{0, 1}, {0}, {1}, {}};
    s.flows_of = {{1, 0}, {2, 0}};
    s.told_times = &times;
    s.told_rate = &told;
    MaxMinSolver solver;
    const std::vector<double>& rates = solver.solve(s);
    EXPECT_EQ(times, (std::vector<int>{1, 1, 1, 0}));
    EXPECT_EQ(told[0], 3.0);
    EXPECT_EQ(told[1], 3.0);
    EXPECT_EQ(told[2], 7.0);
    for (size_t f = 0; f < 3; ++f)
      EXPECT_EQ(rates[f], told[f]) << "flow " << f;
  }
  // And on 500 random systems (as in SystemsReadInPlaceGetTheTextbookRatesInAnyOrder, caps among
  // them), against the textbook form: told once with its rate where that rate is finite.
  std::mt19937_64 rng(11);
  for (int system = 0; system < 500; ++system) {
    const int links = 1 + static_cast<int>(rng() % 12);
    const int flows = 1 + static_cast<int>(rng() % 40);
    std::vector<int> times(static_cast<size_t>(flows), 0);
    std::vector<double> told(static_cast<size_t>(flows), -1);
    ToldSystem s;
    s.told_times = &times;
    s.told_rate = &told;
    std::vector<std::vector<int>> routes;
    for (int l = 0; l < links; ++l)
      s.capacity_of.push_back(0.5 + std::uniform_real_distribution<double>(0, 100)(rng));
    s.flows_of.resize(static_cast<size_t>(links));
    for (int f = 0; f < flows; ++f) {
      // Some flows cross no link (and have no cap): the solver never freezes them.
      std::vector<int> route = rng() % 8 == 0 ? std::vector<int>{} : random_route(rng, links);
      const bool capped = !route.empty() && rng() % 3 == 0;
      s.cap_of.push_back(capped ? 0.5 + std::uniform_real_distribution<double>(0, 100)(rng)
                                : MaxMinSolver::kUncapped);
      for (int l : route)
        s.flows_of[static_cast<size_t>(l)].push_back(f);
      routes.push_back(route);
    }
    s.links_of = routes;
    const std::vector<double> expected = textbook_max_min(s.capacity_of, routes, s.cap_of);
    MaxMinSolver solver;
    const std::vector<double>& rates = solver.solve(s);
    for (size_t f = 0; f < static_cast<size_t>(flows); ++f) {
      const bool frozen = expected[f] != MaxMinSolver::kUncapped;
      EXPECT_EQ(times[f], frozen ? 1 : 0) << "system " << system << " flow " << f;
      if (frozen) {
        EXPECT_EQ(told[f], expected[f]) << "system " << system << " flow " << f;
        EXPECT_EQ(rates[f], expected[f]) << "system " << system << " flow " << f;
      }
    }
    if (::testing::Test::HasFailure()) break;
  }
}

}  // namespace
}  // namespace bagua::netsim
