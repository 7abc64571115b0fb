// Exact simulated times of TCP slow start and its restart after idle (ModelFactors::tcp_slow_start,
// netsim/model_factors.h "slow start"), worked out by hand on two hosts of support.h with NIC links of
// 2.5 ms each way: a route of L = 5 ms, RTT = 10 ms, B = 1e9 B/s; the window W = 4 MiB (W / RTT =
// 419.4 MB/s < B, so the link never limits), IW = 10 x 1448 = 14'480 B, RTO = RTT + 200 ms = 210 ms.
//
// On a new connection round k (k = 0, 1, ...) moves IW x 2^k bytes, so after k full rounds
// IW x (2^k - 1) bytes have moved. A 1 MiB message (1'048'576 B): after 6 rounds 14'480 x 63 =
// 912'240 B, the remaining 136'336 B in round 6 at 14'480 x 64 = 926'720 B per RTT: 136'336 / 926'720
// x 10 ms = 1'471'167.1 -> 1'471'168 ns. It lands at L + 6 RTT + 1'471'168 = 66'471'168 ns, and the
// connection, idle from then, keeps a window of 926'720 + 136'336 (round 6 cut short adds what it
// delivered) = 1'063'056 B. Off, the same message takes L + S / (W / RTT) = 5 ms + 2.5 ms.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/check.h"
#include "netsim/model_factors.h"
#include "netsim/simulation.h"
#include "tests/netsim/support.h"

namespace bagua::netsim {
namespace {

constexpr int64_t kMiB = 1'048'576;

ClusterSpec tcp_spec() {
  ClusterSpec spec = hosts_spec(2);
  spec.nic.latency = Time::us(2500);  // L = 5 ms
  spec.factors.tcp_window = Bytes(4 * kMiB);
  spec.factors.tcp_slow_start = true;  // IW 14'480 B, restart after idle, rto_min 200 ms
  return spec;
}

// Rank 0 sends `first` bytes to rank 1 and waits for it (a send completes at arrival), lets `idle` pass,
// then sends `second` bytes (0: none); returns when each landed.
std::vector<Time> two_messages(const ClusterSpec& spec, int64_t first, Time idle = {},
                               int64_t second = 0) {
  std::vector<Time> landed;
  Simulation(spec).run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    if (t.rank() == 0) {
      t.send(meta_bytes(first), 1, 0);
      if (second == 0) return;
      ctx.clock().sleep(idle);
      t.send(meta_bytes(second), 1, 1);
    } else {
      t.recv(meta_bytes(first), 0, 0);
      landed.push_back(ctx.clock().now());
      if (second == 0) return;
      t.recv(meta_bytes(second), 0, 1);
      landed.push_back(ctx.clock().now());
    }
  });
  return landed;
}

TEST(SlowStart, LinuxFiguresAreTheDefaults) {
  const ModelFactors f;
  EXPECT_FALSE(f.tcp_slow_start);
  EXPECT_EQ(f.tcp_initial_window, Bytes(14'480));  // TCP_INIT_CWND 10 x MSS 1448
  EXPECT_TRUE(f.tcp_restart_after_idle);           // tcp_slow_start_after_idle = 1
  EXPECT_EQ(f.tcp_rto_min, Time::ms(200));         // TCP_RTO_MIN
}

TEST(SlowStart, AMessageOnANewConnectionDoublesItsWindowEachRoundTrip) {
  const ClusterSpec spec = tcp_spec();
  EXPECT_EQ(two_messages(spec, kMiB), std::vector<Time>{Time::ns(66'471'168)});
  EXPECT_EQ(lone_transfer_time(spec, 0, 1, Bytes(kMiB)), Time::ns(66'471'168));
  // Off: exactly today's window cap, 5 ms + 1'048'576 / 419'430'400 B/s = 7.5 ms.
  ClusterSpec off = spec;
  off.factors.tcp_slow_start = false;
  EXPECT_EQ(two_messages(off, kMiB), std::vector<Time>{Time::ns(7'500'000)});
  EXPECT_EQ(lone_transfer_time(off, 0, 1, Bytes(kMiB)), Time::ns(7'500'000));
}

TEST(SlowStart, TheWindowStopsGrowingAtTcpWindow) {
  // 16 MiB: rounds 0..8 move IW x 2^k (the last 3'706'880 B), 14'480 x 511 = 7'399'280 B in all; from
  // round 9 the window is W (7'413'760 > 4'194'304): the remaining 9'377'936 B at 4'194'304 B per RTT
  // take 22'358'741.8 -> 22'358'742 ns. L + 9 RTT + that = 117'358'742 ns.
  const ClusterSpec spec = tcp_spec();
  EXPECT_EQ(two_messages(spec, 16 * kMiB), std::vector<Time>{Time::ns(117'358'742)});
  EXPECT_EQ(lone_transfer_time(spec, 0, 1, Bytes(16 * kMiB)), Time::ns(117'358'742));
}

TEST(SlowStart, OnceTheLinkLimitsTheWindowNoLongerMatters) {
  // L = 1 ms (RTT 2 ms), B = 1e9 B/s: the cap IW x 2^k / RTT = 7.24 MB/s x 2^k passes B at k = 8
  // (1.853 GB/s). 10 MB: rounds 0..7 move 14'480 x 255 = 3'692'400 B in 16 ms, the remaining 6'307'600
  // B at B take 6'307'600 ns: L + 16 ms + 6.3076 ms = 23'307'600 ns (round 9's grown cap, W / RTT =
  // 2.1 GB/s, changes nothing).
  ClusterSpec spec = tcp_spec();
  spec.nic.latency = Time::us(500);
  EXPECT_EQ(two_messages(spec, 10 * kMB), std::vector<Time>{Time::ns(23'307'600)});
  EXPECT_EQ(lone_transfer_time(spec, 0, 1, Bytes(10 * kMB)), Time::ns(23'307'600));
}

TEST(SlowStart, EachOfSeveralConnectionsPerPeerHasItsOwnWindow) {
  // Two connections carry 524'288 B each: after 5 rounds 14'480 x 31 = 448'880 B each, the remaining
  // 75'408 B at 463'360 B per RTT take 1'627'417.1 -> 1'627'418 ns: L + 5 RTT + that = 56'627'418 ns.
  ClusterSpec spec = tcp_spec();
  spec.factors.connections_per_peer = 2;
  EXPECT_EQ(two_messages(spec, kMiB), std::vector<Time>{Time::ns(56'627'418)});
  EXPECT_EQ(lone_transfer_time(spec, 0, 1, Bytes(kMiB)), Time::ns(56'627'418));
}

TEST(SlowStart, AMessageRightAfterKeepsTheGrownWindow) {
  // The second 1 MiB is sent when the first lands (66'471'168 ns) and moves from 5 ms later: idle 5 ms
  // < RTO, the window stays 1'063'056 B > 1 MiB: one round, 1'048'576 / 1'063'056 x 10 ms =
  // 9'863'788.4 -> 9'863'789 ns. It lands at 66'471'168 + 5'000'000 + 9'863'789 = 81'334'957 ns (on a
  // new connection it would take 66'471'168 ns).
  EXPECT_EQ(two_messages(tcp_spec(), kMiB, Time::zero(), kMiB),
            (std::vector<Time>{Time::ns(66'471'168), Time::ns(81'334'957)}));
}

TEST(SlowStart, OnAnOrderedConnectionTheNextMessageContinuesTheRound) {
  // Both 1 MiB posted at once on one ordered byte stream: together 2 MiB on a new connection. After 7
  // rounds (70 ms of phase 2) 14'480 x 127 = 1'838'960 B; the remaining 258'192 B at 1'853'440 B per
  // RTT take 1'393'042.2 -> 1'393'043 ns: the second lands at L + 70 ms + that = 76'393'043 ns, the
  // first at 66'471'168 ns as alone.
  ClusterSpec spec = tcp_spec();
  spec.transport.ordered = true;
  std::vector<Time> landed(2);
  Simulation(spec).run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    if (t.rank() == 0) {
      RequestPtr a = t.isend(meta_bytes(kMiB), 1, 0);
      RequestPtr b = t.isend(meta_bytes(kMiB), 1, 1);
      a->wait();
      b->wait();
    } else {
      t.recv(meta_bytes(kMiB), 0, 0);
      landed[0] = ctx.clock().now();
      t.recv(meta_bytes(kMiB), 0, 1);
      landed[1] = ctx.clock().now();
    }
  });
  EXPECT_EQ(landed, (std::vector<Time>{Time::ns(66'471'168), Time::ns(76'393'043)}));
}

TEST(SlowStart, AfterIdleLongerThanTheRtoTheWindowIsHalvedPerRto) {
  // The second 1 MiB is sent `idle` after the first landed, so the connection idles idle + L.
  const ClusterSpec spec = tcp_spec();
  // 100 ms (95 + 5) < RTO = 210 ms: no restart; as right after, 9'863'789 ns from 66'471'168 + 100 ms.
  EXPECT_EQ(two_messages(spec, kMiB, Time::ms(95), kMiB).at(1), Time::ns(176'334'957));
  // 300 ms > RTO: Linux's tcp_cwnd_restart halves once per RTO the idle time exceeds (300 - 210 > 0,
  // 300 - 420 < 0): 531'528 B. A full round of it, then the remaining 517'048 B at 1'063'056 B per RTT:
  // 4'863'788.4 -> 4'863'789 ns: 14'863'789 ns from 66'471'168 + 300 ms = 381'334'957 ns.
  EXPECT_EQ(two_messages(spec, kMiB, Time::ms(295), kMiB).at(1), Time::ns(381'334'957));
  // 2.005 s: 9 RTOs fit (1.89 s), and 7 halvings already bring 1'063'056 to 8'305 < IW: the window
  // restarts at IW, as on a new connection: 61'471'168 ns of phase 2 from 66'471'168 + 2'005 ms =
  // 2'132'942'336 ns.
  EXPECT_EQ(two_messages(spec, kMiB, Time::ms(2000), kMiB).at(1), Time::ns(2'132'942'336));
  // Restart off (tcp_slow_start_after_idle = 0): the grown window stays: 2'081'334'957 ns.
  ClusterSpec keep = spec;
  keep.factors.tcp_restart_after_idle = false;
  EXPECT_EQ(two_messages(keep, kMiB, Time::ms(2000), kMiB).at(1), Time::ns(2'081'334'957));
}

TEST(SlowStart, TheRestartRuleIsLinuxs) {
  // RTO = 2 x L + rto_min; window_after_idle halves per whole RTO beyond the first, not below
  // min(IW, cwnd).
  ModelFactors f;
  f.tcp_slow_start = true;
  f.tcp_window = Bytes(4 * kMiB);
  const Time latency = Time::ms(5);
  EXPECT_EQ(retransmission_timeout(f, latency), Time::ms(210));
  EXPECT_EQ(window_after_idle(f, 1e6, Time::ms(210), latency), 1e6);  // not longer than the RTO
  EXPECT_EQ(window_after_idle(f, 1e6, Time::ms(211), latency), 5e5);
  EXPECT_EQ(window_after_idle(f, 1e6, Time::ms(421), latency), 2.5e5);
  EXPECT_EQ(window_after_idle(f, 1e6, Time::s(100), latency), 14'480);
  EXPECT_EQ(window_after_idle(f, 10'000, Time::s(100), latency), 10'000);  // below IW: kept
  // Growth: a full round doubles, a cut one adds what it delivered (at most the window), never past W.
  EXPECT_EQ(grown_window(f, 1000, true, 0), 2000);
  EXPECT_EQ(grown_window(f, 1000, false, 300), 1300);
  EXPECT_EQ(grown_window(f, 1000, false, 5000), 2000);
  EXPECT_EQ(grown_window(f, 3e6, true, 0), 4 * kMiB);
}

TEST(SlowStart, ConcurrentMessagesOfAPeerEachMoveUnderItsWindow) {
  // Unordered, two 1 MiB messages at once: each is capped by the connection's window (as tcp_window
  // caps each flow), 2 x 92.7 MB/s < B: both land at 66'471'168 ns.
  const ClusterSpec spec = tcp_spec();
  std::vector<Time> landed(2);
  Simulation(spec).run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    if (t.rank() == 0) {
      RequestPtr a = t.isend(meta_bytes(kMiB), 1, 0);
      RequestPtr b = t.isend(meta_bytes(kMiB), 1, 1);
      a->wait();
      b->wait();
    } else {
      RequestPtr a = t.irecv(meta_bytes(kMiB), 0, 0);
      RequestPtr b = t.irecv(meta_bytes(kMiB), 0, 1);
      a->wait();
      landed[0] = ctx.clock().now();
      b->wait();
      landed[1] = ctx.clock().now();
    }
  });
  EXPECT_EQ(landed, (std::vector<Time>{Time::ns(66'471'168), Time::ns(66'471'168)}));
}

TEST(SlowStart, WithinAHostThereIsNoSlowStart) {
  // One host, two devices, device links 1 GB/s and 2.5 ms (L = 5 ms): L + S / B = 6'048'576 ns.
  ClusterSpec spec = tcp_spec();
  spec.hosts = 1;
  spec.devices_per_host = 2;
  spec.intra_host = {Bandwidth::gigabytes_per_second(1), Time::us(2500)};
  EXPECT_EQ(two_messages(spec, kMiB), std::vector<Time>{Time::ns(6'048'576)});
}

TEST(SlowStart, RunsAreBitIdentical) {
  // A ring of 8 ranks on 4 hosts exchanging 3 MB per step, with idle gaps: twice the same times.
  ClusterSpec spec = tcp_spec();
  spec.hosts = 4;
  spec.devices_per_host = 2;
  spec.transport = TransportModel::nccl();
  auto run = [](const ClusterSpec& cluster) {
    std::vector<Time> done(8);
    Simulation sim(cluster);
    sim.run([&](RankContext& ctx) {
      Transport& t = ctx.transport();
      const int right = (t.rank() + 1) % t.size();
      const int left = (t.rank() + t.size() - 1) % t.size();
      for (int step = 0; step < 6; ++step) {
        RequestPtr r = t.irecv(meta_bytes(3 * kMB), left, step);
        t.send(meta_bytes(3 * kMB), right, step);
        r->wait();
        ctx.clock().sleep(Time::ms(40 * (step % 3)));
      }
      done[static_cast<size_t>(t.rank())] = ctx.clock().now();
    });
    return done;
  };
  const std::vector<Time> first = run(spec);
  EXPECT_EQ(first, run(spec));
  // And slow start made it slower than the window cap alone.
  ClusterSpec off = spec;
  off.factors.tcp_slow_start = false;
  EXPECT_LT(run(off).back(), first.back());
}

TEST(SlowStart, ValidationNamesTheField) {
  auto error_of = [](ClusterSpec spec) -> std::string {
    try {
      validate_model(spec, "cluster.");
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  };
  ClusterSpec spec = tcp_spec();
  EXPECT_EQ(error_of(spec), "");
  spec.factors.tcp_window = Bytes(0);
  EXPECT_EQ(error_of(spec),
            "cluster.factors.tcp_window must be > 0 with factors.tcp_slow_start (the window it "
            "grows to), got 0");
  spec = tcp_spec();
  spec.factors.tcp_initial_window = Bytes(0);
  EXPECT_EQ(error_of(spec), "cluster.factors.tcp_slow_start.initial_window must be >= 1, got 0");
  spec = tcp_spec();
  spec.factors.tcp_rto_min = Time::ns(-1);
  EXPECT_EQ(error_of(spec).substr(0, 47), "cluster.factors.tcp_slow_start.rto_min must be ");
}

}  // namespace
}  // namespace bagua::netsim
