// The simulator against SimGrid (libsimgrid-dev 3.32, its CM02 model: max-min sharing, latency then
// bandwidth, no TCP factors; bench/simgrid/ring.cc), on the platform both build the same way: a star
// of single-device hosts, each behind a split-duplex NIC link of bandwidth B and latency L, so a message
// crosses its sender's up link and its receiver's down link (2 L, then the bytes at the links' share).
// Each case is also worked out by hand; the engine counts whole nanoseconds and rounds every completion
// up, so ours may exceed the exact time by at most a nanosecond per step.
//
//   ring    2 (P - 1) sendrecv steps of S / P bytes to the right neighbour (the bulk-synchronous ring,
//           `"allreduce": "ring"`): 2 (P - 1) (2 L + S / (P B)).
//   incast  every rank but 0 sends S bytes to rank 0 at once: the P - 1 flows share rank 0's down link
//           equally, so all end at 2 L + (P - 1) S / B.
//   mixed   4 ranks: 0 -> 1 (S bytes), 0 -> 2 (2 S), 3 -> 2 (3 S). Rank 0's up link carries the first
//           two, rank 2's down link the last two: every flow at B / 2 until 0 -> 1 ends at 2 L + 2 S / B;
//           0 -> 2 still shares rank 2's link, B / 2, its last S ends at 2 L + 4 S / B; then 3 -> 2,
//           S left, alone at B: 2 L + 5 S / B.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "netsim/simulation.h"

#ifndef BAGUA_SIMGRID_RING
#error "BAGUA_SIMGRID_RING (the path of bench_simgrid_ring) must be defined by the build"
#endif

namespace bagua::netsim {
namespace {

struct Case {
  const char* pattern;
  int ranks;
  int64_t bytes;
  double gbps;
  double latency_s;
};

ClusterSpec star(const Case& c) {
  ClusterSpec spec;
  spec.hosts = c.ranks;
  spec.devices_per_host = 1;
  spec.intra_host = {Bandwidth::gbps(10000), Time::zero()};  // never on a route between hosts
  spec.nic = {Bandwidth::gbps(c.gbps), Time::s(c.latency_s)};
  spec.topology = {"star", {}};
  return spec;
}

// Our prediction, in seconds.
double ours(const Case& c) {
  Simulation sim(star(c));
  const bool ring = std::string(c.pattern) == "ring";
  const Time end = sim.run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    if (ring) {
      const BufferView piece(nullptr, static_cast<size_t>(c.bytes / c.ranks), DType::kU8,
                             &meta_space());
      for (int step = 0; step < 2 * (t.size() - 1); ++step)
        t.sendrecv(piece, (t.rank() + 1) % t.size(), piece, (t.rank() + t.size() - 1) % t.size(), 0);
      return;
    }
    auto bytes = [&](int64_t k) {
      return BufferView(nullptr, static_cast<size_t>(k * c.bytes), DType::kU8, &meta_space());
    };
    if (std::string(c.pattern) == "mixed") {
      std::vector<RequestPtr> requests;
      if (t.rank() == 0) {
        requests.push_back(t.isend(bytes(1), 1, 0));
        requests.push_back(t.isend(bytes(2), 2, 0));
      } else if (t.rank() == 3) {
        requests.push_back(t.isend(bytes(3), 2, 0));
      } else if (t.rank() == 1) {
        requests.push_back(t.irecv(bytes(1), 0, 0));
      } else {
        requests.push_back(t.irecv(bytes(2), 0, 0));
        requests.push_back(t.irecv(bytes(3), 3, 0));
      }
      wait_all(requests);
      return;
    }
    const BufferView message = bytes(1);
    if (t.rank() != 0) {
      t.send(message, 0, 0);
      return;
    }
    std::vector<RequestPtr> receives;
    for (int src = 1; src < t.size(); ++src)
      receives.push_back(t.irecv(message, src, 0));
    wait_all(receives);
  });
  return end.seconds();
}

// SimGrid's prediction, in seconds.
double simgrid(const Case& c) {
  char command[512];
  std::snprintf(command, sizeof command, "'%s' %s %d %lld %.17g %.17g --log=root.thres:critical",
                BAGUA_SIMGRID_RING, c.pattern, c.ranks, static_cast<long long>(c.bytes), c.gbps * 1e9,
                c.latency_s);
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command, "r"), pclose);
  if (!pipe) throw std::runtime_error(std::string("cannot run ") + command);
  std::string out;
  char buffer[256];
  while (std::fgets(buffer, sizeof buffer, pipe.get()) != nullptr)
    out += buffer;
  return nlohmann::json::parse(out).at("simulated_s").get<double>();
}

double by_hand(const Case& c) {
  const double b = c.gbps * 1e9 / 8;  // bytes per second
  if (std::string(c.pattern) == "ring") {
    const double chunk = static_cast<double>(c.bytes / c.ranks);  // integer bytes, as both send
    return 2.0 * (c.ranks - 1) * (2 * c.latency_s + chunk / b);
  }
  if (std::string(c.pattern) == "incast")
    return 2 * c.latency_s + (c.ranks - 1) * static_cast<double>(c.bytes) / b;
  return 2 * c.latency_s + 5 * static_cast<double>(c.bytes) / b;
}

TEST(SimGridAgreement, RingIncastAndMixedSharingOnAStar) {
  const Case cases[] = {
      {"ring", 4, 100'000'000, 100, 1e-6},   // bandwidth-bound: 6 x (2 us + 2 ms) = 12.012 ms
      {"ring", 16, 1'000'000, 10, 1e-3},     // latency-bound: 30 x (2 ms + 50 us) = 61.5 ms
      {"ring", 64, 100'000'000, 100, 5e-6},  // 126 x (10 us + 125 us) = 17.01 ms
      {"incast", 5, 1'000'000, 100, 1e-6},   // 2 us + 4 x 80 us = 322 us
      {"incast", 33, 4'000'000, 25, 2e-6},   // 4 us + 32 x 1.28 ms = 40.964 ms
      {"mixed", 4, 10'000'000, 40, 1e-5},    // 20 us + 5 x 2 ms = 10.02 ms
  };
  for (const Case& c : cases) {
    const double mine = ours(c), theirs = simgrid(c), exact = by_hand(c);
    const int steps = std::string(c.pattern) == "ring" ? 2 * (c.ranks - 1) : 3;
    const std::string where = std::string(c.pattern) + " on " + std::to_string(c.ranks) + " ranks";
    EXPECT_NEAR(theirs, exact, exact * 1e-9) << where << ": SimGrid against the hand-worked time";
    EXPECT_GE(mine, exact - 1e-12) << where;
    EXPECT_LE(mine, exact + steps * 1e-9 + 1e-12) << where << ": ours against the hand-worked time";
    std::printf("%-26s ours %.9f s  SimGrid %.9f s  by hand %.9f s  ours - SimGrid %+.0f ns\n",
                where.c_str(), mine, theirs, exact, (mine - theirs) * 1e9);
  }
}

}  // namespace
}  // namespace bagua::netsim
