// A regression guard for the simulator's speed work, NOT an independent check of the model: every
// expected value below was recorded from the simulator as it was before its hot paths were optimized
// (the heap-only event queue, std::function events, std::unordered_map matching, solver-only max-min
// rates). Optimizations must not change a single simulated result, so these runs must keep producing
// exactly those per-rank completion times, busy times, per-link byte counts and trace texts (by their
// FNV-1a hash). The model's correctness is established by the closed-form tests of network_test.cc and
// simulation_test.cc; regenerate these values only for a change that is meant to alter results.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "netsim/simulation.h"

namespace bagua::netsim {
namespace {

// Two runs whose every observable result the regression guard pins down.
struct Observed {
  std::vector<int64_t> finish_ns;  // per rank
  std::vector<int64_t> busy_ns;    // per rank
  std::vector<int64_t> carried;    // per link
  uint64_t trace_hash = 0;         // FNV-1a of the trace text
  size_t trace_size = 0;
};

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// What a finished run shows besides the ranks' finish times (which its body records): busy times, link
// byte counts and the trace.
void observe(const Simulation& sim, Observed* out) {
  for (const RankStats& r : sim.rank_stats())
    out->busy_ns.push_back(r.busy_comm.nanoseconds());
  for (const LinkStats& l : sim.link_stats())
    out->carried.push_back(l.carried.count());
  std::ostringstream trace;
  sim.write_trace(trace);
  out->trace_hash = fnv1a(trace.str());
  out->trace_size = trace.str().size();
}

// Random point-to-point traffic: contention on shared links (multi-flow components re-solved as flows
// come and go), zero-byte and self messages, streams and events, compute between operations.
Observed random_traffic(const ClusterSpec& spec, uint32_t seed, int messages) {
  const int P = spec.world_size();
  struct Op {
    bool send;
    int peer;
    Tag tag;
    int64_t bytes;
    Time compute_before;
  };
  std::mt19937 gen(seed);
  std::vector<std::vector<Op>> ops(static_cast<size_t>(P));
  for (int m = 0; m < messages; ++m) {
    const int src = static_cast<int>(gen() % static_cast<uint32_t>(P));
    const int dst = static_cast<int>(gen() % static_cast<uint32_t>(P));
    const Tag tag = gen() % 3;
    const int64_t bytes = gen() % 8 == 0 ? 0 : static_cast<int64_t>(gen() % 300'000);
    ops[static_cast<size_t>(src)].push_back({true, dst, tag, bytes, Time::ns(gen() % 20'000)});
    ops[static_cast<size_t>(dst)].push_back({false, src, tag, bytes, Time::ns(gen() % 20'000)});
  }
  SimOptions options;
  options.trace = true;
  Simulation sim(spec, options);
  Observed out;
  out.finish_ns.resize(static_cast<size_t>(P));
  sim.run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    const auto& mine = ops[static_cast<size_t>(t.rank())];
    std::vector<RequestPtr> requests;
    auto stream = ctx.make_stream("side");
    EventPtr go = ctx.make_event();
    EventPtr side = stream->submit([&ctx, go] {
      go->wait();
      ctx.clock().compute({0, Bytes(0), Time::ns(777)});
    });
    for (size_t k = 0; k < mine.size(); ++k) {
      const Op& op = mine[k];
      ctx.clock().compute({1e3 * static_cast<double>(op.bytes), Bytes(op.bytes), op.compute_before});
      const BufferView meta(nullptr, static_cast<size_t>(op.bytes), DType::kU8, &meta_space());
      requests.push_back(op.send ? t.isend(meta, op.peer, op.tag) : t.irecv(meta, op.peer, op.tag));
      if (k == mine.size() / 2) go->set();
    }
    go->set();
    wait_all(requests);
    side->wait();
    out.finish_ns[static_cast<size_t>(t.rank())] = ctx.clock().now().nanoseconds();
  });
  observe(sim, &out);
  return out;
}

// 8 hosts of 2 devices behind 4 leaves, uplinks oversubscribed 2:1, calibrated factors and a window
// cap.
ClusterSpec leaf_spine_cluster() {
  ClusterSpec spec;
  spec.hosts = 8;
  spec.devices_per_host = 2;
  spec.intra_host = {Bandwidth::gigabytes_per_second(5), Time::ns(300)};
  spec.nic = {Bandwidth::gigabytes_per_second(1), Time::ns(500)};
  spec.topology = {
      "leaf_spine",
      {{"hosts_per_leaf", int64_t{2}}, {"oversubscription", 2.0}, {"spine_latency", int64_t{700}}}};
  spec.device = {1e12, Bandwidth::gigabytes_per_second(100)};
  spec.factors.bandwidth_efficiency = 0.93;
  spec.factors.latency_factor = 1.3;
  spec.factors.flow_window_cap = Bandwidth::gigabytes_per_second(0.45);
  return spec;
}

// The ring neighbour exchange of bench/netsim_speed.cc at 32 ranks (4 hosts of 8 devices).
Observed ring_exchange() {
  ClusterSpec spec;
  spec.hosts = 4;
  spec.devices_per_host = 8;
  spec.intra_host = {Bandwidth::gigabytes_per_second(150), Time::us(1)};
  spec.nic = {Bandwidth::gbps(100), Time::us(2)};
  const int P = spec.world_size();
  SimOptions options;
  options.trace = true;
  Simulation sim(spec, options);
  Observed out;
  out.finish_ns.resize(static_cast<size_t>(P));
  sim.run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    const BufferView piece(nullptr, 100'000'000 / 32, DType::kU8, &meta_space());
    const int right = (t.rank() + 1) % t.size();
    const int left = (t.rank() + t.size() - 1) % t.size();
    for (int step = 0; step < 2 * (t.size() - 1); ++step)
      t.sendrecv(piece, right, piece, left, 0);
    out.finish_ns[static_cast<size_t>(t.rank())] = ctx.clock().now().nanoseconds();
  });
  observe(sim, &out);
  return out;
}

TEST(Regression, RandomTrafficOnALeafSpineKeepsEveryResult) {
  const Observed o = random_traffic(leaf_spine_cluster(), 2718, 600);
  const std::vector<int64_t> finish_ns{19016395, 19174615, 18959832, 19124530, 17997536, 16099896,
                                       19016395, 17114516, 18995608, 19106683, 18652443, 19174615,
                                       18788247, 19008687, 18110598, 19124530};
  const std::vector<int64_t> busy_ns{18746593, 18952636, 18644791, 18809489, 17676463, 15952224,
                                     18939156, 17065995, 18826917, 18889422, 18504771, 18828428,
                                     18338184, 18853028, 17978817, 18744439};
  const std::vector<int64_t> carried{
      5115603,  3730438,  7294736,  3453401,  5042152,  4656306,  4363291, 7307738, 4530383,  3993730,
      4475074,  3617326,  4978756,  4332239,  3698599,  4371130,  4062667, 3436727, 4774666,  4032983,
      3767371,  6087435,  3736405,  3705456,  4053840,  4596721,  3783720, 6542517, 5183223,  4181926,
      3803829,  4618242,  11261943, 6035443,  8590586,  11149187, 8689076, 7294675, 7576084,  7602098,
      8659008,  7291385,  7338282,  9627397,  7121599,  10423277, 8196417, 8009533, 17395606, 14727707,
      13546640, 12178253, 13785429, 14706921, 12503305, 15618099};
  EXPECT_EQ(o.finish_ns, finish_ns);
  EXPECT_EQ(o.busy_ns, busy_ns);
  EXPECT_EQ(o.carried, carried);
  EXPECT_EQ(o.trace_size, 237963u);
  EXPECT_EQ(o.trace_hash, 0xef98d089f158f358ull);
}

TEST(Regression, RingExchangeKeepsEveryResult) {
  const Observed o = ring_exchange();
  const std::vector<int64_t> finish_ns{
      15872000, 15638834, 15405668, 15172502, 14939336, 14706170, 14473004, 15872000,
      15872000, 15638834, 15405668, 15172502, 14939336, 14706170, 14473004, 15872000,
      15872000, 15638834, 15405668, 15172502, 14939336, 14706170, 14473004, 15872000,
      15872000, 15638834, 15405668, 15172502, 14939336, 14706170, 14473004, 15872000};
  const std::vector<int64_t> busy_ns{15872000, 2808582,  2785748,  2762914,  2740080, 2717246, 2694412,
                                     15872000, 15872000, 2808582,  2785748,  2762914, 2740080, 2717246,
                                     2694412,  15872000, 15872000, 2808582,  2785748, 2762914, 2740080,
                                     2717246,  2694412,  15872000, 15872000, 2808582, 2785748, 2762914,
                                     2740080,  2717246,  2694412,  15872000};
  EXPECT_EQ(o.finish_ns, finish_ns);
  EXPECT_EQ(o.busy_ns, busy_ns);
  // Every link carries one message per step, 62 steps (2 x 31) of 100 MB / 32 = 3'125'000 bytes.
  EXPECT_EQ(o.carried, std::vector<int64_t>(o.carried.size(), 62 * 3'125'000));
  EXPECT_EQ(o.trace_size, 462171u);
  EXPECT_EQ(o.trace_hash, 0xa9ab28762bbdb9b1ull);
}

}  // namespace
}  // namespace bagua::netsim
