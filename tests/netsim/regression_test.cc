// A regression guard for the simulator's speed work, NOT an independent check of the model: every
// expected value below was recorded from the simulator as it was before its hot paths were optimized
// (the heap-only event queue, std::function events, std::unordered_map matching, solver-only max-min
// rates). Optimizations must not change a single simulated result, so these runs must keep producing
// exactly those per-rank completion times, busy times, per-link byte counts and trace texts (by their
// FNV-1a hash). The model's correctness is established by the closed-form tests of network_test.cc and
// simulation_test.cc; regenerate these values only for a change that is meant to alter results.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "netsim/simulation.h"
#include "tests/netsim/support.h"

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

// Runs `body` (which records each rank's finish time) on every rank of a traced simulation of `spec`,
// whole-network re-solves allowed as `whole_network` says, and returns what the run shows;
// `whole_solves` (if given): the re-solves that covered the whole network.
Observed observed_run(const ClusterSpec& spec, bool whole_network, uint64_t* whole_solves,
                      const std::function<void(RankContext&, Observed&)>& body) {
  SimOptions options;
  options.trace = true;
  options.solve_whole_network = whole_network;
  Simulation sim(spec, options);
  Observed out;
  out.finish_ns.resize(static_cast<size_t>(spec.world_size()));
  sim.run([&](RankContext& ctx) { body(ctx, out); });
  observe(sim, &out);
  if (whole_solves != nullptr) *whole_solves = sim.whole_network_solves();
  return out;
}

// Every observable result of two runs the same.
void expect_same(const Observed& a, const Observed& b) {
  EXPECT_EQ(a.finish_ns, b.finish_ns);
  EXPECT_EQ(a.busy_ns, b.busy_ns);
  EXPECT_EQ(a.carried, b.carried);
  EXPECT_EQ(a.trace_size, b.trace_size);
  EXPECT_EQ(a.trace_hash, b.trace_hash);
}

// Random point-to-point traffic: contention on shared links (multi-flow components re-solved as flows
// come and go), zero-byte and self messages, streams and events, compute between operations.
// `whole_network`: SimOptions::solve_whole_network; `whole_solves` (if given): the re-solves that
// covered the whole network.
Observed random_traffic(const ClusterSpec& spec, uint32_t seed, int messages, bool whole_network = true,
                        uint64_t* whole_solves = nullptr) {
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
  return observed_run(spec, whole_network, whole_solves, [&](RankContext& ctx, Observed& out) {
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
}

// 8 hosts of 2 devices behind 4 leaves, uplinks oversubscribed 2:1, calibrated factors and a window
// cap.
ClusterSpec leaf_spine_cluster() {
  ClusterSpec spec = hosts_spec(8, 2, {Bandwidth::gigabytes_per_second(5), Time::ns(300)},
                                {Bandwidth::gigabytes_per_second(1), Time::ns(500)});
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

// 16 hosts of 8 devices on a star, with a TCP window and a host ceiling below the NIC as on the paper's
// TCP testbed (configs/clusters/paper_tcp.json): every flow between hosts has a window cap, which
// does not bind (4 MiB per 10 us of round trip is far above the NIC), and its host's two ceilings.
ClusterSpec tcp_star_cluster() {
  ClusterSpec spec = hosts_spec(16, 8, {Bandwidth::gigabytes_per_second(150), Time::us(1)},
                                {Bandwidth::gbps(100), Time::us(5)});
  spec.factors.tcp_window = Bytes(4 << 20);
  spec.factors.host_bandwidth_ceiling = Bandwidth::gbps(76.8);
  return spec;
}

// Each rank sends to one rank of each other host (its own device index shifted by the host distance
// h) and receives from as many, (1 + h % 4) x `bytes` each: links carry as many flows each, whose
// levels tie at every step of progressive filling, and end at four different times; each rank posts
// its sends a few microseconds apart, as its own index has it.
Observed exchange_traffic(const ClusterSpec& spec, int64_t bytes, bool whole_network,
                          uint64_t* whole_solves) {
  const int P = spec.world_size();
  const int D = spec.devices_per_host;
  return observed_run(spec, whole_network, whole_solves, [&](RankContext& ctx, Observed& out) {
    Transport& t = ctx.transport();
    std::vector<RequestPtr> requests;
    for (int h = 1; h < spec.hosts; ++h) {
      const BufferView meta(nullptr, static_cast<size_t>(bytes * (1 + h % 4)), DType::kU8,
                            &meta_space());
      const int to = (t.rank() + h * D + h % D) % P;
      const int from = ((t.rank() - h * D - h % D) % P + P) % P;
      ctx.clock().compute({0, Bytes(0), Time::us(t.rank() % 5)});
      requests.push_back(t.isend(meta, to, 0));
      requests.push_back(t.irecv(meta, from, 0));
    }
    wait_all(requests);
    out.finish_ns[static_cast<size_t>(t.rank())] = ctx.clock().now().nanoseconds();
  });
}

TEST(Regression, WholeNetworkResolvesGiveTheComponentSearchesBits) {
  // 2000 messages among 128 ranks, all posted at once: one component of hundreds of flows, which
  // the flow model re-solves whole (FlowNetwork::reshare). Every observable result must be the
  // same, bit for bit, as with every re-solve searching for its component first: the tie order
  // (network.h) makes a component's rates a function of its flows alone, and the rates changed are
  // given in flow id order either way (their completions tied at one nanosecond run in that order).
  const ClusterSpec spec = tcp_star_cluster();
  uint64_t whole = 0, none = 0;
  const Observed searched = random_traffic(spec, 31337, 2000, /*whole_network=*/false, &none);
  const Observed at_once = random_traffic(spec, 31337, 2000, /*whole_network=*/true, &whole);
  EXPECT_EQ(none, 0u);
  EXPECT_GT(whole, 100u);  // the path under test ran
  expect_same(at_once, searched);
}

TEST(Regression, WholeNetworkResolvesOfTiedFlowsGiveTheComponentSearchesBits) {
  // The same for an exchange of equal flows (exchange_traffic), where levels tie throughout.
  const ClusterSpec spec = tcp_star_cluster();
  uint64_t whole = 0, none = 0;
  const Observed searched = exchange_traffic(spec, 3'000'000, /*whole_network=*/false, &none);
  const Observed at_once = exchange_traffic(spec, 3'000'000, /*whole_network=*/true, &whole);
  EXPECT_EQ(none, 0u);
  EXPECT_GT(whole, 100u);
  expect_same(at_once, searched);
}

TEST(Regression, AWindowCapThatBindsLaterEndsTheWholeNetworkResolves) {
  // 16 hosts of 8 devices under two leaves, 16 KiB TCP windows, 0.1 us per NIC link and 10 ns per
  // device link: within a leaf the round trip is 2 x 0.22 us and the window cap 37 GB/s, above the
  // 12.5 GB/s NIC; across the spine (40 us each way up and down) it is 2 x 80.22 us, a cap of
  // 0.1 GB/s, which binds. Every
  // rank sends to the same device of each other host of its leaf (448 flows a leaf, 56 on each NIC:
  // re-solved whole), each send a few microseconds after the last, as the rank's index has it;
  // 200 us on, while those still move, device 7 of every host sends to device 7 of the host 8 on,
  // across the spine, a cap below its share (12.5 / 57 GB/s). Once its cap is set no re-solve of the
  // run may be whole (a whole one hands the solver no cap), and every rank must finish when it does
  // in a run that never re-solves whole.
  ClusterSpec spec = tcp_star_cluster();
  spec.nic.latency = Time::ns(100);
  spec.intra_host.latency = Time::ns(10);
  spec.factors.host_bandwidth_ceiling =
      Bandwidth::bytes_per_second(std::numeric_limits<double>::infinity());
  spec.factors.tcp_window = Bytes(16 << 10);
  spec.topology = {"leaf_spine", {{"hosts_per_leaf", int64_t{8}}, {"spine_latency", int64_t{40'000}}}};
  const auto run = [&](bool whole_network, uint64_t* whole_solves) {
    return observed_run(spec, whole_network, whole_solves, [&](RankContext& ctx, Observed& out) {
      Transport& t = ctx.transport();
      const int host = t.rank() / 8, leaf = host / 8, device = t.rank() % 8;
      std::vector<RequestPtr> requests;
      for (int h = 1; h < 8; ++h) {
        const BufferView meta(nullptr, static_cast<size_t>(1'000'000 * (1 + h % 3)), DType::kU8,
                              &meta_space());
        ctx.clock().compute({0, Bytes(0), Time::us(t.rank() % 7)});
        requests.push_back(t.isend(meta, (leaf * 8 + (host + h) % 8) * 8 + device, 0));
        requests.push_back(t.irecv(meta, (leaf * 8 + (host + 8 - h) % 8) * 8 + device, 0));
      }
      if (device == 7) {
        const BufferView meta(nullptr, 1'000'000, DType::kU8, &meta_space());
        ctx.clock().compute({0, Bytes(0), Time::us(200) - ctx.clock().now()});
        requests.push_back(t.isend(meta, ((host + 8) % 16) * 8 + device, 1));
        requests.push_back(t.irecv(meta, ((host + 8) % 16) * 8 + device, 1));
      }
      wait_all(requests);
      out.finish_ns[static_cast<size_t>(t.rank())] = ctx.clock().now().nanoseconds();
    });
  };
  uint64_t whole = 0, none = 0;
  const Observed searched = run(false, &none);
  const Observed at_once = run(true, &whole);
  EXPECT_EQ(none, 0u);
  EXPECT_GT(whole, 10u);
  expect_same(at_once, searched);
}

TEST(Regression, NoWholeNetworkResolveWhereACapBinds) {
  // The same traffic with a window cap below the NIC: every flow between hosts is capped, and in a
  // run where a cap binds every re-solve keeps to its component (a flow taking a finished one's
  // place has another id, which the caps' tie order reads).
  ClusterSpec spec = tcp_star_cluster();
  spec.factors.tcp_window = Bytes(0);
  spec.factors.flow_window_cap = Bandwidth::gbps(40);
  uint64_t whole = 0;
  random_traffic(spec, 31337, 2000, /*whole_network=*/true, &whole);
  EXPECT_EQ(whole, 0u);
}

}  // namespace
}  // namespace bagua::netsim
