#include "netsim/max_min.h"

#include <gtest/gtest.h>

#include <vector>

namespace bagua::netsim {
namespace {

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

}  // namespace
}  // namespace bagua::netsim
