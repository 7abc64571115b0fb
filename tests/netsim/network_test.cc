// Exact simulated times of the flow model on tiny clusters, each worked out in a comment from
//   one flow:  route latency L + ceil(S / B)   (B the capacity of its slowest link)
// and, for shared links, from the max-min shares (max_min_test.cc), piece by piece.
#include "netsim/network.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "netsim/simulation.h"
#include "tests/netsim/support.h"

namespace bagua::netsim {
namespace {

// Rank 0 sends `bytes` (meta) to rank 1; returns the time the send completed (as rank 0 saw it) and
// checks that the receive completed at the same time.
Time one_flow(const ClusterSpec& spec, int64_t bytes) {
  Time sent, received;
  Simulation(spec).run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    if (t.rank() == 0) {
      t.send(meta_bytes(bytes), 1, 0);
      sent = ctx.clock().now();
    } else if (t.rank() == 1) {
      t.recv(meta_bytes(bytes), 0, 0);
      received = ctx.clock().now();
    }
  });
  EXPECT_EQ(sent, received);
  return sent;
}

TEST(FlowModel, SortDistinctIdsIsStdSortAtEveryDensity) {
  // Random sets of distinct ids, from a few in a large universe (std::sort's path) to most of a small
  // one (the bit pass), and at the boundary between the two, each in random order: the same order as
  // std::sort gives, with the scratch left from the previous call.
  std::mt19937_64 rng(11);
  std::vector<uint64_t> bits;
  for (const size_t universe :
       {size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{1000}, size_t{4096}, size_t{100'000}}) {
    for (const double density : {0.001, 0.01, 0.1, 0.5, 1.0}) {
      std::vector<int32_t> all(universe);
      for (size_t i = 0; i < universe; ++i)
        all[i] = static_cast<int32_t>(i);
      std::shuffle(all.begin(), all.end(), rng);
      all.resize(std::max<size_t>(1, static_cast<size_t>(density * static_cast<double>(universe))));
      std::vector<int32_t> expected = all;
      std::sort(expected.begin(), expected.end());
      sort_distinct_ids(all, universe, bits);
      EXPECT_EQ(all, expected) << universe << " ids, " << density;
    }
  }
}

TEST(FlowModel, OneFlowIsLatencyPlusBytesOverBandwidth) {
  // Two hosts, 1 GB/s, 1 us route latency (0.5 us per NIC link), 1 MB: 1000 + 1e6 B / 1e9 B/s =
  // 1000 + 1'000'000 = 1'001'000 ns = 1.001 ms.
  EXPECT_EQ(one_flow(hosts_spec(2), kMB), Time::ns(1'001'000));
}

TEST(FlowModel, NicLatencyCountsOncePerNicLinkCrossed) {
  // With 1 us per NIC link, the route crosses two (sender's up, receiver's down): 2000 + 1'000'000 ns.
  ClusterSpec spec = hosts_spec(2);
  spec.nic.latency = Time::us(1);
  EXPECT_EQ(one_flow(spec, kMB), Time::ns(1'002'000));
}

TEST(FlowModel, DeviceLinksAddTheirLatencyAndCanBeTheBottleneck) {
  // Device links 0.8 GB/s and 100 ns: latency 100 + 500 + 500 + 100 = 1200 ns; the bottleneck is now a
  // device link: 1e6 / 8e8 s = 1'250'000 ns. Total 1'251'200 ns.
  ClusterSpec spec = hosts_spec(2);
  spec.intra_host = {Bandwidth::bytes_per_second(8e8), Time::ns(100)};
  EXPECT_EQ(one_flow(spec, kMB), Time::ns(1'251'200));
}

TEST(FlowModel, LoneTransferTimeIsTheClosedForm) {
  // Hand-computed as in the tests above; and the simulator charges exactly that.
  ClusterSpec spec = hosts_spec(2);
  EXPECT_EQ(lone_transfer_time(spec, 0, 1, Bytes(kMB)), Time::ns(1'001'000));
  EXPECT_EQ(lone_transfer_time(spec, 1, 1, Bytes(kMB)), Time::zero());
  EXPECT_EQ(lone_transfer_time(spec, 0, 1, Bytes(0)), Time::ns(1000));
  // 3 GB/s NIC, 0.9 efficiency (2.7e9), latency factor 3 (3000 ns), 10'000 bytes: 3703.7 -> 3704 ns.
  spec.nic.bandwidth = Bandwidth::gigabytes_per_second(3);
  spec.factors.bandwidth_efficiency = 0.9;
  spec.factors.latency_factor = 3;
  EXPECT_EQ(lone_transfer_time(spec, 0, 1, Bytes(10'000)), Time::ns(3000 + 3704));
  EXPECT_EQ(one_flow(spec, 10'000), Time::ns(3000 + 3704));
}

TEST(FlowModel, BytesRoundUpToWholeNanoseconds) {
  // 1001 bytes at 3e9 B/s (NIC 3 GB/s) = 333.67 ns -> 334 ns; plus 1000 ns of latency.
  ClusterSpec spec = hosts_spec(2);
  spec.nic.bandwidth = Bandwidth::gigabytes_per_second(3);
  EXPECT_EQ(one_flow(spec, 1001), Time::ns(1334));
}

TEST(FlowModel, ZeroByteMessagesPayRouteLatency) {
  EXPECT_EQ(one_flow(hosts_spec(2), 0), Time::ns(1000));
}

TEST(FlowModel, IntraHostRouteUsesOnlyDeviceLinks) {
  // One host, two devices; device links 10 GB/s and 1 us; NIC links irrelevant. Route: dev0.up,
  // dev1.down: 2000 ns + 1e6 / 1e10 s = 100'000 ns. Total 102'000 ns.
  ClusterSpec spec = hosts_spec(1);
  spec.devices_per_host = 2;
  spec.intra_host = {Bandwidth::gigabytes_per_second(10), Time::us(1)};
  EXPECT_EQ(one_flow(spec, kMB), Time::ns(102'000));
}

TEST(FlowModel, TwoFlowsSharingALinkGetHalfEach) {
  // Hosts 0 and 1 each send 1 MB to host 2 at t = 0. Both enter transfer at 1000 ns and share host 2's
  // NIC down-link (1 GB/s): 5e8 B/s each, so 1e6 / 5e8 s = 2'000'000 ns. Both complete at 2'001'000 ns.
  std::vector<Time> done(3);
  Simulation sim(hosts_spec(3));
  sim.run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    if (t.rank() < 2) {
      t.send(meta_bytes(kMB), 2, 0);
    } else {
      auto a = t.irecv(meta_bytes(kMB), 0, 0);
      auto b = t.irecv(meta_bytes(kMB), 1, 0);
      a->wait();
      b->wait();
    }
    done[static_cast<size_t>(t.rank())] = ctx.clock().now();
  });
  EXPECT_EQ(done, (std::vector<Time>(3, Time::ns(2'001'000))));
  // Each link carried what crossed it: host 2's down-link both megabytes.
  for (const LinkStats& l : sim.link_stats()) {
    if (l.name == "host2.nic.down") {
      EXPECT_EQ(l.carried.count(), 2 * kMB);
    } else if (l.name == "host0.nic.up") {
      EXPECT_EQ(l.carried.count(), kMB);
    } else if (l.name == "host2.nic.up") {
      EXPECT_EQ(l.carried.count(), 0);
    }
  }
}

// `senders` each send 4e5 bytes (meta) to rank 0 at t = 0; returns each sender's completion time.
// `solves` (if given): the simulation's rate solves (Simulation::rate_solves).
std::vector<Time> gather_to_rank0(const ClusterSpec& spec, const std::vector<int>& senders,
                                  int64_t bytes = 400'000, uint64_t* solves = nullptr) {
  std::vector<Time> done(static_cast<size_t>(spec.world_size()));
  Simulation sim(spec);
  sim.run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    if (t.rank() == 0) {
      std::vector<RequestPtr> pending;
      for (int s : senders)
        pending.push_back(t.irecv(meta_bytes(bytes), s, 0));
      for (auto& r : pending)
        r->wait();
    } else if (std::find(senders.begin(), senders.end(), t.rank()) != senders.end()) {
      t.send(meta_bytes(bytes), 0, 0);
    }
    done[static_cast<size_t>(t.rank())] = ctx.clock().now();
  });
  if (solves != nullptr) *solves = sim.rate_solves();
  std::vector<Time> out;
  for (int s : senders)
    out.push_back(done[static_cast<size_t>(s)]);
  return out;
}

TEST(FlowModel, AGatherSharesTheReceiversLinkEquallyUnlessACapOrASendersLinkIsLower) {
  // Ranks 1, 2, 3 (hosts 1-3) send 4e5 bytes to rank 0 at 0; NICs 1.2e9 B/s, 0.5 us. All three enter
  // transfer at 1000 ns (the first at its lone rate, 1.2e9, for no time), re-solved once at the end of
  // that instant: host 0's NIC down-link carries all three, its level 1.2e9 / 3 = 4e8 the lowest of the
  // component (every other link carries one flow at 1.2e9), so all three freeze at 4e8:
  // 4e5 / 4e8 s = 1'000'000 ns, done at 1'001'000 ns.
  ClusterSpec spec = hosts_spec(4);
  spec.nic.bandwidth = Bandwidth::bytes_per_second(1.2e9);
  EXPECT_EQ(gather_to_rank0(spec, {1, 2, 3}), std::vector<Time>(3, Time::ns(1'001'000)));
  // A window cap of 3e8 below that level freezes each flow first, at its cap: 4e5 / 3e8 s =
  // 1'333'333.3 -> 1'333'334 ns, done at 1'334'334 ns.
  spec.factors.flow_window_cap = Bandwidth::bytes_per_second(3e8);
  EXPECT_EQ(gather_to_rank0(spec, {1, 2, 3}), std::vector<Time>(3, Time::ns(1'334'334)));
  // A cap equal to the level: the link comes first in the solver's order, the same 4e8.
  spec.factors.flow_window_cap = Bandwidth::bytes_per_second(4e8);
  EXPECT_EQ(gather_to_rank0(spec, {1, 2, 3}), std::vector<Time>(3, Time::ns(1'001'000)));

  // Two devices per host: rank 1 shares host 0 with rank 0 (route: its device up-link, rank 0's
  // device down-link; latency 0), ranks 2 and 4 are on hosts 1 and 2 (latency 1000 ns). Device links
  // 1.2e9 B/s, NICs 3e8 B/s. Rank 0's device down-link carries all three flows (level 4e8), but host
  // 0's NIC down-link, carrying ranks 2 and 4 only, is lower (3e8 / 2 = 1.5e8): they freeze at 1.5e8
  // and rank 1 gets the rest of the device link, 1.2e9 - 3e8 = 9e8.
  //   rank 1: alone at 1.2e9 from 0 to 1000 ns (1200 bytes), then 9e8: 398'800 / 9e8 s =
  //           443'111.1 -> 443'112 ns, done at 444'112 ns;
  //   ranks 2, 4: 1.5e8 from 1000 ns, unchanged when rank 1 leaves (6e8 each on the device link):
  //           4e5 / 1.5e8 s = 2'666'666.7 -> 2'666'667 ns, done at 2'667'667 ns.
  ClusterSpec two = hosts_spec(3, 2);
  two.intra_host = {Bandwidth::bytes_per_second(1.2e9), Time::zero()};
  two.nic.bandwidth = Bandwidth::bytes_per_second(3e8);
  EXPECT_EQ(gather_to_rank0(two, {1, 2, 4}),
            (std::vector<Time>{Time::ns(444'112), Time::ns(2'667'667), Time::ns(2'667'667)}));
}

TEST(FlowModel, AWideGatherOfUnequalSizesFinishesInProcessorSharingSteps) {
  // Ranks 1..32 (hosts 1..32) send to rank 0 at 0, rank r 33 - r = k x 1000 bytes (the largest first,
  // so that the flows come to the event queue in the opposite order of their ends); NICs 1e9 B/s (a byte per ns),
  // 0.5 us: every flow enters transfer at L = 1000 ns, and host 0's NIC down-link is the only link
  // they share. While n flows remain each gets 1e9 / n; flow j leaves when every flow still there has
  // moved j x 1000 bytes, so the step from flow j - 1's end to flow j's is 1000 more bytes for each of
  // the 33 - j flows left: 1000 x (33 - j) ns. Flow k therefore ends at
  //   L + 1000 x sum_{j=1..k} (33 - j) = 1000 + 1000 x k x (65 - k) / 2 ns
  // (flow 1 at 33'000 ns, flow 32 at 529'000 ns). Each arrival re-solves up to 31 flows at once and
  // moves as many completions in the event queue: a wrong order would end the wrong flow first.
  constexpr int kSenders = 32;
  const ClusterSpec spec = hosts_spec(kSenders + 1);
  std::vector<Time> done(static_cast<size_t>(kSenders + 1));
  Simulation(spec).run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    if (t.rank() == 0) {
      std::vector<RequestPtr> pending;
      for (int k = 1; k <= kSenders; ++k)
        pending.push_back(t.irecv(meta_bytes(1000 * (kSenders + 1 - k)), k, 0));
      for (auto& r : pending)
        r->wait();
    } else {
      t.send(meta_bytes(1000 * (kSenders + 1 - t.rank())), 0, 0);
    }
    done[static_cast<size_t>(t.rank())] = ctx.clock().now();
  });
  for (int k = 1; k <= kSenders; ++k) {
    const int rank = kSenders + 1 - k;
    EXPECT_EQ(done[static_cast<size_t>(rank)], Time::ns(1000 + 1000 * k * (65 - k) / 2))
        << "rank " << rank;
  }
}

TEST(FlowModel, AThirdFlowJoiningAndLeavingChangesTheSharesPiecewise) {
  // Hosts 0, 1, 2 send to host 3, all through host 3's NIC down-link (1e9 B/s).
  //   A (0 -> 3, 1 MB) and B (1 -> 3, 1 MB) start at 0 and enter transfer at 1000 ns at 5e8 B/s each.
  //   C (2 -> 3, 100 kB) is sent at 1'000'000 ns and enters transfer at 1'001'000 ns. By then A and B
  //     have moved 5e8 * 1e-3 = 500'000 bytes each; 500'000 left each.
  //   Three flows: 1e9 / 3 B/s each. C's 100'000 bytes take 100'000 / (1e9 / 3) s = 300'000 ns: C
  //     completes at 1'301'000 ns. A and B also moved 100'000 bytes: 400'000 left each.
  //   Two flows again: 5e8 B/s each; 400'000 / 5e8 s = 800'000 ns: A and B complete at 2'101'000 ns.
  // Check: 2.1 MB through one 1 GB/s link from 1000 ns on, never idle: 1000 + 2'100'000 ns.
  std::vector<Time> done(4);
  Simulation(hosts_spec(4)).run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    const int r = t.rank();
    if (r < 2) {
      t.send(meta_bytes(kMB), 3, 0);
    } else if (r == 2) {
      ctx.clock().sleep(Time::ns(1'000'000));
      t.send(meta_bytes(100'000), 3, 0);
    } else {
      auto a = t.irecv(meta_bytes(kMB), 0, 0);
      auto b = t.irecv(meta_bytes(kMB), 1, 0);
      auto c = t.irecv(meta_bytes(100'000), 2, 0);
      c->wait();
      done[3] = ctx.clock().now();
      a->wait();
      b->wait();
      EXPECT_EQ(ctx.clock().now(), Time::ns(2'101'000));
      return;
    }
    done[static_cast<size_t>(r)] = ctx.clock().now();
  });
  EXPECT_EQ(done[0], Time::ns(2'101'000));
  EXPECT_EQ(done[1], Time::ns(2'101'000));
  EXPECT_EQ(done[2], Time::ns(1'301'000));
  EXPECT_EQ(done[3], Time::ns(1'301'000));
}

TEST(FlowModel, FlowsStartingOrEndingAtOneInstantAreReSolvedOnceAtItsEnd) {
  // Ranks 1..16 (hosts 1..16) send 1 MB each to rank 0 at 0. All enter transfer at 1000 ns: the first
  // alone (its lone rate, no solve), the other 15 re-solved together at the end of the instant (one
  // solve; a solve per flow would be 15): 1e9 / 16 B/s each on host 0's NIC down-link, 1e6 / 6.25e7 s
  // = 16'000'000 ns, all done at 16'001'000 ns. They end at one instant too: the links they leave are
  // empty by its end, so nothing is re-solved (one solve per flow but the last would be 15 more).
  std::vector<int> senders;
  for (int r = 1; r <= 16; ++r)
    senders.push_back(r);
  uint64_t solves = 0;
  EXPECT_EQ(gather_to_rank0(hosts_spec(17), senders, kMB, &solves),
            std::vector<Time>(16, Time::ns(16'001'000)));
  EXPECT_EQ(solves, 1u);

  // A flow ending and another entering at one instant, on one link. Ranks 1 (1 MB) and 2 (2 MB) send
  // to rank 0 at 0, rank 3 (1 MB) at 2'000'000 ns (after a sleep).
  //   1000 ns: 1 and 2 enter, 5e8 B/s each (one solve). Rank 1's 1 MB takes 2'000'000 ns: done at
  //            2'001'000 ns; rank 2 has moved 1 MB, 1 MB left.
  //   2'001'000 ns: rank 1's flow ends and rank 3's enters (its latency, 1000 ns after its send): one
  //            solve at the end of the instant, 5e8 B/s each for 2 and 3 (two solves before, the first
  //            giving rank 2 the whole link for no time). 1 MB each at 5e8: 2'000'000 ns, both done at
  //            4'001'000 ns, at one instant (no solve).
  std::vector<Time> done(4);
  Simulation sim(hosts_spec(4));
  sim.run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    const int r = t.rank();
    if (r == 0) {
      auto a = t.irecv(meta_bytes(kMB), 1, 0);
      auto b = t.irecv(meta_bytes(2 * kMB), 2, 0);
      auto c = t.irecv(meta_bytes(kMB), 3, 0);
      a->wait();
      b->wait();
      c->wait();
      return;
    }
    if (r == 3) ctx.clock().sleep(Time::ns(2'000'000));
    t.send(meta_bytes(r == 2 ? 2 * kMB : kMB), 0, 0);
    done[static_cast<size_t>(r)] = ctx.clock().now();
  });
  EXPECT_EQ(done[1], Time::ns(2'001'000));
  EXPECT_EQ(done[2], Time::ns(4'001'000));
  EXPECT_EQ(done[3], Time::ns(4'001'000));
  EXPECT_EQ(sim.rate_solves(), 2u);
}

TEST(FlowModel, ChainedSharingFormsOneComponent) {
  // Host 0 sends to host 2 (A) and host 1 sends to host 2 (B); host 0's NIC up-link is also used by a
  // third flow C from host 0 to host 1, so A and C share host 0's up-link (1e9) while A and B share
  // host 2's down-link (1e9). All three 1 MB, sent at 0, in transfer from 1000 ns.
  //   Max-min: every link has level 5e8 (two flows on each of host0.nic.up and host2.nic.down; C and B
  //   are also alone on host1.nic.down / host1.nic.up at 1e9). Lowest level first: host0.nic.up at 5e8
  //   freezes A and C at 5e8; host 2's down-link has 5e8 left for B alone: B = 5e8 too.
  //   All three at 5e8: 1e6 / 5e8 s = 2'000'000 ns; all complete at 2'001'000 ns.
  // Then with C made 4x smaller (250 kB): C completes at 1000 + 250'000 / 5e8 s = 501'000 ns. A is then
  //   alone on host 0's up-link but still shares host 2's down-link with B (the component re-solved
  //   when C ends reaches B through A): both stay at 5e8 and complete at 2'001'000 ns.
  for (int64_t c_bytes : {kMB, kMB / 4}) {
    std::vector<Time> done(3);
    Simulation(hosts_spec(3)).run([&](RankContext& ctx) {
      Transport& t = ctx.transport();
      const int r = t.rank();
      if (r == 0) {
        auto a = t.isend(meta_bytes(kMB), 2, 0);
        auto c = t.isend(meta_bytes(c_bytes), 1, 1);
        c->wait();
        done[0] = ctx.clock().now();
        a->wait();
      } else if (r == 1) {
        auto c = t.irecv(meta_bytes(c_bytes), 0, 1);
        t.send(meta_bytes(kMB), 2, 0);
        c->wait();
        done[1] = ctx.clock().now();
      } else {
        auto a = t.irecv(meta_bytes(kMB), 0, 0);
        auto b = t.irecv(meta_bytes(kMB), 1, 0);
        a->wait();
        b->wait();
        done[2] = ctx.clock().now();
      }
    });
    const Time c_done = c_bytes == kMB ? Time::ns(2'001'000) : Time::ns(501'000);
    EXPECT_EQ(done[0], c_done) << c_bytes;
    EXPECT_EQ(done[1], Time::ns(2'001'000)) << c_bytes;
    EXPECT_EQ(done[2], Time::ns(2'001'000)) << c_bytes;
  }
}

TEST(FlowModel, UnequalBottlenecksReallocateWhenTheLimitedFlowEnds) {
  // Leaf-spine, 4 hosts, 2 per leaf, leaf uplinks 2.5e8 B/s with no latency.
  //   A: host 0 -> host 2 (250 kB) crosses leaf0.up and leaf1.down (2.5e8) and host 2's NIC down-link.
  //   B: host 3 -> host 2 (1 MB) stays in leaf 1 and shares host 2's NIC down-link (1e9) with A.
  // Max-min: leaf0.up's level 2.5e8 is the lowest: A = 2.5e8; host 2's down-link has 7.5e8 left: B
  // = 7.5e8 (not the equal share 5e8). Both enter transfer at 1000 ns (500 + 0 + 0 + 500; 500 + 500).
  //   A: 250'000 / 2.5e8 s = 1'000'000 ns: completes at 1'001'000 ns; B moved 750'000 bytes meanwhile.
  //   B alone: 250'000 bytes at 1e9 B/s = 250'000 ns: completes at 1'251'000 ns.
  ClusterSpec spec = hosts_spec(4);
  spec.topology = {
      "leaf_spine",
      {{"hosts_per_leaf", int64_t{2}}, {"spine_bandwidth", 2.5e8}, {"spine_latency", int64_t{0}}}};
  std::vector<Time> done(4);
  Simulation(spec).run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    const int r = t.rank();
    if (r == 0) {
      t.send(meta_bytes(250'000), 2, 0);
    } else if (r == 3) {
      t.send(meta_bytes(kMB), 2, 0);
    } else if (r == 2) {
      auto a = t.irecv(meta_bytes(250'000), 0, 0);
      auto b = t.irecv(meta_bytes(kMB), 3, 0);
      a->wait();
      b->wait();
    }
    done[static_cast<size_t>(r)] = ctx.clock().now();
  });
  EXPECT_EQ(done[0], Time::ns(1'001'000));
  EXPECT_EQ(done[3], Time::ns(1'251'000));
  EXPECT_EQ(done[2], Time::ns(1'251'000));
}

TEST(FlowModel, BandwidthEfficiencyScalesEveryLinkCapacity) {
  // Efficiency 0.8: capacity 8e8 B/s; 1e6 / 8e8 s = 1'250'000 ns; plus 1000 ns.
  ClusterSpec spec = hosts_spec(2);
  spec.factors.bandwidth_efficiency = 0.8;
  EXPECT_EQ(one_flow(spec, kMB), Time::ns(1'251'000));
}

TEST(FlowModel, LatencyFactorScalesTheRouteLatency) {
  // Factor 2.5: 1000 ns * 2.5 = 2500 ns; plus 1'000'000 ns.
  ClusterSpec spec = hosts_spec(2);
  spec.factors.latency_factor = 2.5;
  EXPECT_EQ(one_flow(spec, kMB), Time::ns(1'002'500));
}

TEST(FlowModel, WindowCapLimitsEachFlow) {
  // Cap 2e8 B/s below the 1e9 link: 1e6 / 2e8 s = 5'000'000 ns; plus 1000 ns.
  ClusterSpec spec = hosts_spec(2);
  spec.factors.flow_window_cap = Bandwidth::bytes_per_second(2e8);
  EXPECT_EQ(one_flow(spec, kMB), Time::ns(5'001'000));
  // A cap above the link changes nothing.
  spec.factors.flow_window_cap = Bandwidth::bytes_per_second(4e9);
  EXPECT_EQ(one_flow(spec, kMB), Time::ns(1'001'000));
}

// Leaf-spine: 4 hosts, 2 per leaf, leaf uplinks of hosts_per_leaf * nic / oversubscription. Hosts 0 and
// 1 (leaf 0) send 1 MB each to hosts 2 and 3 (leaf 1); both flows cross leaf0.up and leaf1.down.
std::vector<Time> cross_leaf(double oversubscription, Time spine_latency) {
  ClusterSpec spec = hosts_spec(4);
  spec.topology = {"leaf_spine",
                   {{"hosts_per_leaf", int64_t{2}},
                    {"oversubscription", oversubscription},
                    {"spine_latency", spine_latency.nanoseconds()}}};
  std::vector<Time> done(4);
  Simulation(spec).run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    const int r = t.rank();
    if (r < 2)
      t.send(meta_bytes(kMB), r + 2, 0);
    else
      t.recv(meta_bytes(kMB), r - 2, 0);
    done[static_cast<size_t>(r)] = ctx.clock().now();
  });
  return done;
}

TEST(FlowModel, LeafSpineOversubscriptionSharesTheLeafUplink) {
  // Oversubscription 2: uplink 2 * 1e9 / 2 = 1e9 B/s shared by both flows: 5e8 each, 2'000'000 ns.
  // Latency: nic 500 + leaf up 250 + leaf down 250 + nic 500 = 1500 ns. Both complete at 2'001'500 ns.
  EXPECT_EQ(cross_leaf(2, Time::ns(250)), std::vector<Time>(4, Time::ns(2'001'500)));
  // Oversubscription 1: uplink 2e9, each flow limited by its own NIC at 1e9: 1'001'500 ns.
  EXPECT_EQ(cross_leaf(1, Time::ns(250)), std::vector<Time>(4, Time::ns(1'001'500)));
  // Oversubscription 4: uplink 5e8 shared: 2.5e8 each, 4'000'000 ns; no spine latency: 1000 ns.
  EXPECT_EQ(cross_leaf(4, Time::zero()), std::vector<Time>(4, Time::ns(4'001'000)));
}

// Leaf-spine of 4 hosts, 2 per leaf, oversubscription 2 (leaf uplinks 2 x 1e9 / 2 = 1e9 B/s), spine
// latency 250 ns, a host ceiling equal to the NIC (1e9 B/s); receive_times of `messages`.
std::vector<Time> leaf_spine_with_ceiling(const std::vector<SentMessage>& messages) {
  ClusterSpec spec = hosts_spec(4);
  spec.topology = {
      "leaf_spine",
      {{"hosts_per_leaf", int64_t{2}}, {"oversubscription", 2.0}, {"spine_latency", int64_t{250}}}};
  spec.factors.host_bandwidth_ceiling = Bandwidth::gigabytes_per_second(1);
  return receive_times(spec, messages);
}

TEST(FlowModel, ALinkIsLeftOutOfTheSolveOnlyWhereACeilingCarriesAllItsFlows) {
  // Routes across leaves: NIC 500 + leaf up 250 + leaf down 250 + NIC 500 = 1500 ns of latency;
  // within a leaf (host 2 -> host 3) 1000 ns. In each case host 2 also sends 1 MB to host 3, sharing
  // host 3's NIC down-link and ingress ceiling, so that no one link carries every flow and the solver
  // runs (FlowNetwork::sole_bottleneck_level would answer alone). 2 -> 3 moves alone at 1e9 from 1000
  // to 1500 ns (500 bytes), then at 5e8 with a flow into host 3: 999'500 / 5e8 = 1'999'000 ns, ending
  // at 2'000'500.
  // Host 0 sends 1 MB to hosts 2 and 3: leaf 0's uplink carries both, and so does host 0's egress
  // ceiling with no more capacity (1e9): the uplink is left out (network.h, shadowed_by_ceiling). Every
  // level is 5e8 (the ceiling's two flows; host 3's down-link's two): 2'000'000 ns of transfer each.
  EXPECT_EQ(leaf_spine_with_ceiling({{2, 3, kMB}, {0, 2, kMB}, {0, 3, kMB}}),
            (std::vector<Time>{Time::ns(2'000'500), Time::ns(2'001'500), Time::ns(2'001'500)}));
  // Hosts 0 and 1 send 1 MB and 3 MB to hosts 2 and 3: the uplink carries both, no ceiling does
  // (egress 0 and egress 1 one each): the uplink stays and shares 1e9, 5e8 each (host 3's down-link
  // too: 1 -> 3 and 2 -> 3 at 5e8). 0 -> 2 ends at 2'001'500 ns; 1 -> 3 then has
  // 2 MB left alone at 1e9 (its NIC): 4'001'500. The uplink left out by mistake would let 0 -> 2 run at
  // 1e9 (1'001'500).
  EXPECT_EQ(leaf_spine_with_ceiling({{2, 3, kMB}, {0, 2, kMB}, {1, 3, 3 * kMB}}),
            (std::vector<Time>{Time::ns(2'000'500), Time::ns(2'001'500), Time::ns(4'001'500)}));
}

TEST(FlowModel, AFlowReachedOnlyThroughAHostCeilingJoinsTheResolve) {
  // Rail-optimized, 3 hosts of 2 devices in one unit (rank = 2 host + device), a NIC per device
  // (1e9 B/s, 500 ns), rail leaves with the NIC's latency, a host ceiling of 1e9 B/s. B: rank 1 -> 3
  // (rail 1 to rail 1: dev.up, nic.up, nic.down, dev.down, 1000 ns); A: rank 0 -> 5 (rail 0 to rail 1,
  // through the spine: 2000 ns). They share nothing but host 0's egress ceiling. B moves alone at
  // 1e9 from 1000 ns; at 2000 A enters (1000 bytes of B moved) and the re-solve, which starts from
  // A's constraints, must reach B through the ceiling: both at 5e8. B's 999'000 bytes take
  // 1'998'000 ns, to 2'000'000; A has then 1000 bytes left, alone at 1e9: 2'001'000. The component
  // search passes over a ceiling's list only where a link searched before it carries exactly its
  // flows (FlowNetwork::mark_twin_ceilings): A's device and NIC links carry A alone, so it may not
  // here; had it, A would have run alone at 1e9 (1'002'000) and B gone on at 1e9 (1'001'000).
  ClusterSpec spec = hosts_spec(3, 2);
  spec.topology = {"rail_optimized", {{"hosts_per_leaf", int64_t{4}}}};
  spec.factors.host_bandwidth_ceiling = Bandwidth::gigabytes_per_second(1);
  EXPECT_EQ(receive_times(spec, {{1, 3, kMB}, {0, 5, kMB}}),
            (std::vector<Time>{Time::ns(2'000'000), Time::ns(2'001'000)}));
}

TEST(FlowModel, LeafSpineExplicitSpineBandwidthAndIntraLeafTraffic) {
  // spine.bandwidth 4e8 given explicitly. Flows, all 1 MB from 0: a (host 0 -> 2) and c (host 1 -> 3)
  // cross leaf0.up and leaf1.down; b (host 0 -> 1) stays inside leaf 0 but shares host 0's NIC up-link
  // with a. Max-min: leaf0.up's level 4e8 / 2 = 2e8 is the lowest: a = c = 2e8; host 0's up-link has
  // 1e9 - 2e8 = 8e8 left for b. Latencies: 1000 ns each (no spine latency).
  //   b: 1e6 / 8e8 s = 1'250'000 ns: completes at 1'251'000 ns (a and c keep 2e8: their bottleneck is
  //   the leaf uplink). a, c: 1e6 / 2e8 s = 5'000'000 ns: complete at 5'001'000 ns.
  ClusterSpec spec = hosts_spec(4);
  spec.topology = {
      "leaf_spine",
      {{"hosts_per_leaf", int64_t{2}}, {"spine_bandwidth", 4e8}, {"spine_latency", int64_t{0}}}};
  std::vector<Time> done(4);
  Simulation sim(spec);
  sim.run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    const int r = t.rank();
    if (r == 0) {
      auto a = t.isend(meta_bytes(kMB), 2, 0);
      auto b = t.isend(meta_bytes(kMB), 1, 0);
      b->wait();
      done[0] = ctx.clock().now();
      a->wait();
    } else if (r == 1) {
      auto in = t.irecv(meta_bytes(kMB), 0, 0);
      t.send(meta_bytes(kMB), 3, 0);
      done[1] = ctx.clock().now();
      in->wait();
    } else {
      t.recv(meta_bytes(kMB), r - 2, 0);
      done[static_cast<size_t>(r)] = ctx.clock().now();
    }
  });
  EXPECT_EQ(done[0], Time::ns(1'251'000));
  EXPECT_EQ(done[1], Time::ns(5'001'000));
  EXPECT_EQ(done[2], Time::ns(5'001'000));
  EXPECT_EQ(done[3], Time::ns(5'001'000));
  bool found = false;
  for (const LinkStats& l : sim.link_stats()) {
    if (l.name != "leaf0.up") continue;
    found = true;
    EXPECT_EQ(l.carried.count(), 2 * kMB);
    // 2e6 bytes over 4e8 B/s * 5.001e-3 s.
    EXPECT_DOUBLE_EQ(l.utilization, 2e6 / (4e8 * 5.001e-3));
  }
  EXPECT_TRUE(found);
}

TEST(FlowModel, RingExchangeOverAThousandRanksMatchesTheClosedForm) {
  // P = 1024 ranks, one per host; each step every rank sends a chunk of c = 100'000 meta bytes (S = P *
  // c, about 100 MB: a ring allreduce's chunk) to its right neighbour and receives one from its left.
  // Every flow has its own NIC links, so a step takes L + c / B = 1000 + 100'000 ns and the ranks stay
  // in lock step: K steps take K * 101'000 ns. K = 64 here (the full 2(P - 1) = 2046 steps of an
  // allreduce run in bench/netsim_speed.cc; they only repeat the same step, and cost a minute under
  // AddressSanitizer).
  constexpr int kP = 1024;
  constexpr int kSteps = 64;
  constexpr int64_t kChunk = 100'000;
  Simulation sim(hosts_spec(kP));
  const Time end = sim.run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    const int right = (t.rank() + 1) % t.size();
    const int left = (t.rank() + t.size() - 1) % t.size();
    for (int step = 0; step < kSteps; ++step)
      t.sendrecv(meta_bytes(kChunk), right, meta_bytes(kChunk), left, 0);
  });
  EXPECT_EQ(end, Time::ns(kSteps * 101'000));
  // Every NIC link carried K chunks.
  for (const LinkStats& l : sim.link_stats()) {
    if (l.name.find(".nic.") != std::string::npos) {
      EXPECT_EQ(l.carried.count(), kSteps * kChunk) << l.name;
    }
  }
}

}  // namespace
}  // namespace bagua::netsim
