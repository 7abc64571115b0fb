// Exact simulated times of the transport models (netsim/transport.h: eager / rendezvous, credit slots)
// and of the network model factors (netsim/simulation.h ModelFactors: TCP window, connections per
// peer, host bandwidth ceiling, LogGP overhead and gap), each worked out by hand in its comment on the
// cluster of support.h: two (or three) hosts, NIC links 1 GB/s, a host-to-host route of L = 1000 ns
// (0.5 us per NIC link) and B = 1e9 B/s, device links never the bottleneck and without latency.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "netsim/simulation.h"
#include "tests/netsim/support.h"

namespace bagua::netsim {
namespace {

// When rank 0's send and rank 1's receive of `bytes` completed, rank 1 posting its receive at
// `receive_posted`.
struct SendReceive {
  Time sent;
  Time received;
};

SendReceive send_receive(const ClusterSpec& spec, int64_t bytes, Time receive_posted, int dst = 1) {
  SendReceive out;
  Simulation(spec).run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    if (t.rank() == 0) {
      t.send(meta_bytes(bytes), dst, 0);
      out.sent = ctx.clock().now();
    } else if (t.rank() == dst) {
      ctx.clock().sleep(receive_posted);
      t.recv(meta_bytes(bytes), 0, 0);
      out.received = ctx.clock().now();
    }
  });
  return out;
}

ClusterSpec mpi_spec() {
  ClusterSpec spec = hosts_spec(2);
  spec.transport = TransportModel::mpi();
  return spec;
}

TEST(TransportModel, MpiAndNcclDefaultsAreTheCitedFigures) {
  // Open MPI 4.1 btl_tcp_eager_limit 64 KiB and btl_vader eager limit 4 KiB; NCCL_STEPS 8 slots of
  // DEFAULT_BUFFSIZE / NCCL_STEPS = 4 MiB / 8 (netsim/model_factors.cc cites the source lines).
  EXPECT_EQ(TransportModel::mpi().eager_limit, Bytes(65'536));
  EXPECT_EQ(TransportModel::mpi().eager_limit_intra_host, Bytes(4096));
  EXPECT_EQ(TransportModel::nccl().slots, 8);
  EXPECT_EQ(TransportModel::nccl().slot_bytes, Bytes(524'288));
  EXPECT_EQ(TransportModel().completion, SendCompletion::kArrival);
}

TEST(TransportModel, EagerSendCompletesWhenBuffered) {
  // 1 KiB <= the 64 KiB eager limit: the send completes at once (0 ns); the bytes still take
  // L + S / B = 1000 + 1024 = 2024 ns, when the receive (posted at 0) completes.
  SendReceive early = send_receive(mpi_spec(), 1024, Time::zero());
  EXPECT_EQ(early.sent, Time::zero());
  EXPECT_EQ(early.received, Time::ns(2024));
  // The receive posted late, at 10 us: the message waits, stashed; the receive completes when posted.
  SendReceive late = send_receive(mpi_spec(), 1024, Time::us(10));
  EXPECT_EQ(late.sent, Time::zero());
  EXPECT_EQ(late.received, Time::ns(10'000));
  // Without a transport model (alpha-beta) the send waits for the bytes: 2024 ns.
  EXPECT_EQ(send_receive(hosts_spec(2), 1024, Time::zero()).sent, Time::ns(2024));
}

TEST(TransportModel, RendezvousPaysAHandshakeRoundTripBeforeTheBytes) {
  // 1 MiB > 64 KiB: request-to-send reaches rank 1 at L = 1000 ns; the receive is posted (at 0), so
  // the clear-to-send is back at 2000 ns; the flow then takes L + S / B = 1000 + 1'048'576 ns. Send and
  // receive complete together at 2000 + 1000 + 1'048'576 = 1'051'576 ns.
  SendReceive early = send_receive(mpi_spec(), 1'048'576, Time::zero());
  EXPECT_EQ(early.sent, Time::ns(1'051'576));
  EXPECT_EQ(early.received, Time::ns(1'051'576));
  EXPECT_EQ(lone_transfer_time(mpi_spec(), 0, 1, Bytes(1'048'576)), Time::ns(1'051'576));
  // The receive posted at 10 us: the request-to-send waits for it; clear-to-send back at 11'000 ns;
  // then 1000 + 1'048'576: both complete at 1'060'576 ns.
  SendReceive late = send_receive(mpi_spec(), 1'048'576, Time::us(10));
  EXPECT_EQ(late.sent, Time::ns(1'060'576));
  EXPECT_EQ(late.received, Time::ns(1'060'576));
}

TEST(TransportModel, WithinAHostTheSharedMemoryEagerLimitApplies) {
  // One host of two devices, device links 1 GB/s and 1 us each: the route dev0.up + dev1.down has
  // L = 2000 ns, B = 1e9 B/s. 8 KiB is above the 4 KiB shared-memory limit: rendezvous, 2 x 2000 ns
  // of handshake, then 2000 + 8192 ns: 14'192 ns. Between two hosts 8 KiB is eager (below 64 KiB).
  ClusterSpec spec = hosts_spec(1, 2);
  spec.intra_host = {Bandwidth::gigabytes_per_second(1), Time::us(1)};
  spec.transport = TransportModel::mpi();
  SendReceive intra = send_receive(spec, 8192, Time::zero());
  EXPECT_EQ(intra.sent, Time::ns(14'192));
  EXPECT_EQ(intra.received, Time::ns(14'192));
  EXPECT_EQ(lone_transfer_time(spec, 0, 1, Bytes(8192)), Time::ns(14'192));
  SendReceive inter = send_receive(mpi_spec(), 8192, Time::zero());
  EXPECT_EQ(inter.sent, Time::zero());
  EXPECT_EQ(inter.received, Time::ns(1000 + 8192));
}

TEST(TransportModel, ABufferedSendMayReuseItsBufferAtOnce) {
  // Eager (mpi) and in a slot (nccl), the 12-byte send completes at 0, before its bytes land at
  // 1012 ns; the sender then overwrites its buffer. The receiver, posted at 0 or at 10 us, gets the
  // values as they were when the send completed.
  for (const TransportModel& model : {TransportModel::mpi(), TransportModel::nccl()}) {
    for (Time posted : {Time::zero(), Time::us(10)}) {
      ClusterSpec spec = hosts_spec(2);
      spec.transport = model;
      std::vector<float> sent = {1, 2, 3};
      std::vector<float> received(3, 0);
      Simulation(spec).run([&](RankContext& ctx) {
        Transport& t = ctx.transport();
        if (t.rank() == 0) {
          t.send(BufferView(sent.data(), sent.size(), DType::kF32, &host_space()), 1, 0);
          EXPECT_EQ(ctx.clock().now(), Time::zero());
          sent = {7, 8, 9};
        } else {
          ctx.clock().sleep(posted);
          t.recv(BufferView(received.data(), received.size(), DType::kF32, &host_space()), 0, 0);
        }
      });
      EXPECT_EQ(received, (std::vector<float>{1, 2, 3})) << to_string(model.completion);
    }
  }
}

// Rank 0 isends three 1000-byte messages to rank 1 back to back (one tag) and waits for each in turn;
// rank 1 sleeps `receive_posted`, then irecvs three and waits for each in turn.
struct ThreeSends {
  std::vector<Time> sent;
  std::vector<Time> received;
};

ThreeSends three_sends(const ClusterSpec& spec, Time receive_posted) {
  ThreeSends out;
  Simulation(spec).run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    std::vector<RequestPtr> requests;
    if (t.rank() == 0) {
      for (int k = 0; k < 3; ++k)
        requests.push_back(t.isend(meta_bytes(1000), 1, 0));
      for (auto& r : requests) {
        r->wait();
        out.sent.push_back(ctx.clock().now());
      }
    } else {
      ctx.clock().sleep(receive_posted);
      for (int k = 0; k < 3; ++k)
        requests.push_back(t.irecv(meta_bytes(1000), 0, 0));
      for (auto& r : requests) {
        r->wait();
        out.received.push_back(ctx.clock().now());
      }
    }
  });
  return out;
}

TEST(TransportModel, CreditSlotsBoundTheMessagesInFlight) {
  ClusterSpec spec = hosts_spec(2);
  spec.transport = TransportModel::nccl();
  spec.transport.slots = 2;
  // Receives posted at 0. Messages 0 and 1 take the two slots at 0: their sends complete at once.
  // Both flows share the NIC links after L: 5e8 B/s each, 1000 bytes in 2000 ns: both arrive and their
  // receives complete at 3000 ns, freeing the slots. Message 2 takes one at 3000 ns (its send
  // completes) and arrives alone at 3000 + 1000 + 1000 = 5000 ns.
  ThreeSends early = three_sends(spec, Time::zero());
  EXPECT_EQ(early.sent, (std::vector<Time>{Time::zero(), Time::zero(), Time::ns(3000)}));
  EXPECT_EQ(early.received, (std::vector<Time>{Time::ns(3000), Time::ns(3000), Time::ns(5000)}));
  // Receives posted at 10 us: messages 0 and 1 arrive at 3000 ns but hold their slots until rank 1
  // takes them at 10'000 ns; message 2 then takes a slot (send complete at 10'000 ns) and arrives at
  // 10'000 + 2000 = 12'000 ns.
  ThreeSends late = three_sends(spec, Time::us(10));
  EXPECT_EQ(late.sent, (std::vector<Time>{Time::zero(), Time::zero(), Time::ns(10'000)}));
  EXPECT_EQ(late.received, (std::vector<Time>{Time::ns(10'000), Time::ns(10'000), Time::ns(12'000)}));
}

TEST(TransportModel, AMessageLargerThanASlotCompletesAtArrival) {
  // slot_bytes 512 KiB; 1 MB does not fit: the send completes when its bytes land, 1000 + 1e6 ns.
  ClusterSpec spec = hosts_spec(2);
  spec.transport = TransportModel::nccl();
  EXPECT_EQ(send_receive(spec, kMB, Time::zero()).sent, Time::ns(1'001'000));
  // 1000 bytes fit: at once.
  EXPECT_EQ(send_receive(spec, 1000, Time::zero()).sent, Time::zero());
}

// A route of latency L = 100 us (50 us per NIC link), B = 1e9 B/s.
ClusterSpec wan_spec(int hosts = 2) {
  ClusterSpec spec = hosts_spec(hosts);
  spec.nic.latency = Time::us(50);
  return spec;
}

TEST(ModelFactors, TcpWindowCapsAFlowAtOneWindowPerRoundTrip) {
  // time = L + S / min(B, W / 2L). W = 64 KiB, L = 100 us: W / 2L = 65'536 / 2e-4 s = 3.2768e8 B/s
  // < B. 1 MB: 1e6 / 3.2768e8 s = 3'051'757.8 -> 3'051'758 ns; plus L: 3'151'758 ns.
  ClusterSpec spec = wan_spec();
  spec.factors.tcp_window = Bytes(65'536);
  EXPECT_EQ(send_receive(spec, kMB, Time::zero()).received, Time::ns(3'151'758));
  EXPECT_EQ(lone_transfer_time(spec, 0, 1, Bytes(kMB)), Time::ns(3'151'758));
  // A window whose W / 2L exceeds B does not bind: W = 1 MiB gives 5.2e9 B/s: L + S / B = 1'100'000.
  spec.factors.tcp_window = Bytes(1'048'576);
  EXPECT_EQ(send_receive(spec, kMB, Time::zero()).received, Time::ns(1'100'000));
  // Within a host no TCP: one host of two devices, device links 1 GB/s and 50 us (L = 100 us), a
  // 64 KiB window: still L + S / B = 1'100'000 ns.
  ClusterSpec intra = hosts_spec(1, 2);
  intra.intra_host = {Bandwidth::gigabytes_per_second(1), Time::us(50)};
  intra.factors.tcp_window = Bytes(65'536);
  EXPECT_EQ(send_receive(intra, kMB, Time::zero()).received, Time::ns(1'100'000));
}

TEST(ModelFactors, ConnectionsPerPeerMultiplyTheWindowCap) {
  // Two connections of a 64 KiB window over L = 100 us: 2 x 3.2768e8 = 6.5536e8 B/s. 1 MB:
  // 1'525'878.9 -> 1'525'879 ns; plus L: 1'625'879 ns. Four: 1.31e9 B/s > B: 1'100'000 ns.
  ClusterSpec spec = wan_spec();
  spec.factors.tcp_window = Bytes(65'536);
  spec.factors.connections_per_peer = 2;
  EXPECT_EQ(send_receive(spec, kMB, Time::zero()).received, Time::ns(1'625'879));
  EXPECT_EQ(lone_transfer_time(spec, 0, 1, Bytes(kMB)), Time::ns(1'625'879));
  spec.factors.connections_per_peer = 4;
  EXPECT_EQ(send_receive(spec, kMB, Time::zero()).received, Time::ns(1'100'000));
}

// Completion times of the receives of 1 MB flows started at 0, one per (src, dst).
std::vector<Time> flows(const ClusterSpec& spec, const std::vector<std::pair<int, int>>& pairs) {
  std::vector<SentMessage> messages;
  for (const auto& [src, dst] : pairs)
    messages.push_back({src, dst, kMB});
  return receive_times(spec, messages);
}

TEST(ModelFactors, HostCeilingBoundsTheFlowsLeavingAndEnteringOneHost) {
  ClusterSpec spec = hosts_spec(3);
  // Without a ceiling, host 0 sending 1 MB to hosts 1 and 2 shares its NIC up-link: 5e8 B/s each,
  // 1000 + 2'000'000 = 2'001'000 ns.
  EXPECT_EQ(flows(spec, {{0, 1}, {0, 2}}),
            (std::vector<Time>{Time::ns(2'001'000), Time::ns(2'001'000)}));
  // A ceiling of 0.8 GB/s per host direction: 4e8 B/s each, 1000 + 2'500'000 = 2'501'000 ns; the
  // same into one host (hosts 1 and 2 sending to host 0).
  spec.factors.host_bandwidth_ceiling = Bandwidth::gigabytes_per_second(0.8);
  EXPECT_EQ(flows(spec, {{0, 1}, {0, 2}}),
            (std::vector<Time>{Time::ns(2'501'000), Time::ns(2'501'000)}));
  EXPECT_EQ(flows(spec, {{1, 0}, {2, 0}}),
            (std::vector<Time>{Time::ns(2'501'000), Time::ns(2'501'000)}));
  // Alone, a flow gets min(B, 0.8 GB/s): 1000 + 1'250'000 ns; and so do 0 -> 1 and 1 -> 2 together
  // (host 1's egress and ingress are separate constraints).
  EXPECT_EQ(lone_transfer_time(spec, 0, 1, Bytes(kMB)), Time::ns(1'251'000));
  EXPECT_EQ(flows(spec, {{0, 1}, {1, 2}}),
            (std::vector<Time>{Time::ns(1'251'000), Time::ns(1'251'000)}));
  // A ceiling equal to the NIC (1 GB/s): host 0's NIC up-link and egress ceiling carry the same two
  // flows at the same level, a tie (the NIC link is left out of the solver: network.h,
  // shadowed_by_ceiling): 5e8 B/s each, as without a ceiling; one flow 1000 + 1'000'000 ns.
  spec.factors.host_bandwidth_ceiling = Bandwidth::gigabytes_per_second(1);
  EXPECT_EQ(flows(spec, {{0, 1}, {0, 2}}),
            (std::vector<Time>{Time::ns(2'001'000), Time::ns(2'001'000)}));
  EXPECT_EQ(lone_transfer_time(spec, 0, 1, Bytes(kMB)), Time::ns(1'001'000));
}

TEST(ModelFactors, OverheadAndGapOnSmallMessages) {
  // o = 2 us, g = 5 us, three 1000-byte messages isent at 0 (alpha-beta transport: a send completes
  // at arrival). Injections begin max(o, g) = 5 us apart: 0, 5000, 10'000 ns; each flow starts o later
  // (2000, 7000, 12'000) and takes L + S / B = 2000 ns alone: arrivals 4000, 9000, 14'000 ns (the
  // sends); the receives complete o after: 6000, 11'000, 16'000 ns.
  ClusterSpec spec = hosts_spec(2);
  spec.factors.message_overhead = Time::us(2);
  spec.factors.message_gap = Time::us(5);
  ThreeSends r = three_sends(spec, Time::zero());
  EXPECT_EQ(r.sent, (std::vector<Time>{Time::ns(4000), Time::ns(9000), Time::ns(14'000)}));
  EXPECT_EQ(r.received, (std::vector<Time>{Time::ns(6000), Time::ns(11'000), Time::ns(16'000)}));
  // One message alone: o + L + S / B + o = 2000 + 1000 + 1000 + 2000.
  EXPECT_EQ(lone_transfer_time(spec, 0, 1, Bytes(1000)), Time::ns(6000));
  // Within a host (NVLink or shared memory) neither o nor g: one host of two devices, device links
  // 1 GB/s and 500 ns each (L = 1000 ns): 1000 + 1000 ns.
  ClusterSpec intra = hosts_spec(1, 2);
  intra.intra_host = {Bandwidth::gigabytes_per_second(1), Time::ns(500)};
  intra.factors = spec.factors;
  EXPECT_EQ(send_receive(intra, 1000, Time::zero()).received, Time::ns(2000));
  EXPECT_EQ(lone_transfer_time(intra, 0, 1, Bytes(1000)), Time::ns(2000));
  // g below o: injections o = 2 us apart, flows at 2000, 4000, 6000: arrivals 4000, 6000, 8000.
  spec.factors.message_gap = Time::us(1);
  EXPECT_EQ(three_sends(spec, Time::zero()).sent,
            (std::vector<Time>{Time::ns(4000), Time::ns(6000), Time::ns(8000)}));
}

// Random messages among 4 hosts of 2 devices, with contention: every rank's completion times.
std::vector<int64_t> random_run(const ClusterSpec& spec, uint32_t seed) {
  const int P = spec.world_size();
  struct Op {
    bool send;
    int peer;
    int64_t bytes;
    Time before;
  };
  std::mt19937 gen(seed);
  std::vector<std::vector<Op>> ops(static_cast<size_t>(P));
  for (int m = 0; m < 200; ++m) {
    const int src = static_cast<int>(gen() % static_cast<uint32_t>(P));
    const int dst = static_cast<int>(gen() % static_cast<uint32_t>(P));
    const int64_t bytes = static_cast<int64_t>(gen() % 200'000);
    ops[static_cast<size_t>(src)].push_back({true, dst, bytes, Time::ns(gen() % 5000)});
    ops[static_cast<size_t>(dst)].push_back({false, src, bytes, Time::ns(gen() % 5000)});
  }
  std::vector<int64_t> times;
  std::vector<std::vector<int64_t>> per_rank(static_cast<size_t>(P));
  Simulation(spec).run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    std::vector<RequestPtr> requests;
    for (const Op& op : ops[static_cast<size_t>(t.rank())]) {
      ctx.clock().sleep(op.before);
      requests.push_back(op.send ? t.isend(meta_bytes(op.bytes), op.peer, 0)
                                 : t.irecv(meta_bytes(op.bytes), op.peer, 0));
    }
    for (auto& r : requests) {
      r->wait();
      per_rank[static_cast<size_t>(t.rank())].push_back(ctx.clock().now().nanoseconds());
    }
  });
  for (const auto& v : per_rank)
    times.insert(times.end(), v.begin(), v.end());
  return times;
}

TEST(ModelFactors, WithEverythingOffTheModelIsAlphaBeta) {
  std::mt19937 gen(2024);
  for (int trial = 0; trial < 20; ++trial) {
    // A lone message on a random two-host cluster: exactly L + ceil(S / B), L the two NIC links'
    // latencies, B the NIC bandwidth (device links never the bottleneck).
    ClusterSpec spec = hosts_spec(2);
    const int64_t bandwidth = 100'000'000 + static_cast<int64_t>(gen() % 10'000) * 1'000'000;
    const int64_t nic_latency = static_cast<int64_t>(gen() % 50'000);
    const int64_t bytes = static_cast<int64_t>(gen() % 5'000'000);
    spec.nic = {Bandwidth::bytes_per_second(static_cast<double>(bandwidth)), Time::ns(nic_latency)};
    // ceil(S * 1e9 / B) ns in integers.
    const Time expected =
        Time::ns(2 * nic_latency + (bytes * 1'000'000'000 + bandwidth - 1) / bandwidth);
    const SendReceive r = send_receive(spec, bytes, Time::zero());
    EXPECT_EQ(r.sent, expected) << "trial " << trial;
    EXPECT_EQ(r.received, expected) << "trial " << trial;
    EXPECT_EQ(lone_transfer_time(spec, 0, 1, Bytes(bytes)), expected) << "trial " << trial;
  }
  // Contended random traffic: factors set to values that never bind (a window worth 1e20 B/s, a host
  // ceiling of 1e30 B/s, four connections) leave every completion time exactly as without them; so
  // the extra constraints and caps change no arithmetic of the max-min sharing.
  ClusterSpec base = hosts_spec(4, 2);
  base.intra_host = {Bandwidth::gigabytes_per_second(3), Time::ns(200)};
  for (uint32_t seed : {1u, 2u, 3u}) {
    ClusterSpec loose = base;
    loose.factors.tcp_window = Bytes(int64_t{1} << 50);
    loose.factors.connections_per_peer = 4;
    loose.factors.host_bandwidth_ceiling = Bandwidth::bytes_per_second(1e30);
    const std::vector<int64_t> off = random_run(base, seed);
    EXPECT_EQ(random_run(loose, seed), off) << "seed " << seed;
    EXPECT_EQ(random_run(base, seed), off) << "seed " << seed << " (determinism)";
  }
}

TEST(ModelFactors, ValidationNamesTheField) {
  auto error_of = [](auto edit) {
    ClusterSpec spec = hosts_spec(2);
    edit(spec);
    try {
      Simulation sim(spec);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of([](ClusterSpec& s) { s.factors.connections_per_peer = 0; }),
            "factors.connections_per_peer must be >= 1, got 0");
  EXPECT_EQ(error_of([](ClusterSpec& s) { s.factors.tcp_window = Bytes(-1); }),
            "factors.tcp_window must be >= 0, got -1");
  EXPECT_EQ(error_of([](ClusterSpec& s) {
              s.factors.host_bandwidth_ceiling = Bandwidth::bytes_per_second(0);
            }),
            "factors.host_bandwidth_ceiling must be > 0, got 0");
  EXPECT_EQ(error_of([](ClusterSpec& s) { s.factors.message_gap = Time::ns(-5); }),
            "factors.message_gap must be >= 0, got " + to_string(Time::ns(-5)));
  EXPECT_EQ(error_of([](ClusterSpec& s) {
              s.transport = TransportModel::nccl();
              s.transport.slots = 0;
            }),
            "transport.slots must be >= 1, got 0");
}

// A ring of `steps` sendrecv steps of `bytes` per message on 2 hosts of 2 ranks (0 -> 1 -> 2 -> 3 -> 0):
// each step, ranks 0 -> 1 and 2 -> 3 send within a host, 1 -> 2 and 3 -> 0 between hosts. `base`: the
// steps through Transport::sendrecv's own isend / irecv / wait (the qualified call skips the
// simulator's override). Returns the end time, the NIC links' carried bytes and the fiber switches.
struct RingRun {
  Time end;
  std::vector<int64_t> carried;
  uint64_t switches = 0;
};
RingRun sendrecv_ring(ClusterSpec spec, int steps, int64_t bytes, bool base) {
  Simulation sim(std::move(spec));
  RingRun out;
  out.end = sim.run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    const int right = (t.rank() + 1) % t.size();
    const int left = (t.rank() + t.size() - 1) % t.size();
    for (int step = 0; step < steps; ++step) {
      if (base)
        t.Transport::sendrecv(meta_bytes(bytes), right, meta_bytes(bytes), left, 0);
      else
        t.sendrecv(meta_bytes(bytes), right, meta_bytes(bytes), left, 0);
    }
  });
  for (const LinkStats& l : sim.link_stats())
    out.carried.push_back(l.carried.count());
  out.switches = sim.fiber_switches();
  return out;
}

TEST(TransportModel, SendrecvWhoseReceiveLandsAfterItsSendSwitchesIntoItsFiberOnce) {
  // hosts_spec(2, 2): within a host the flows take 0 ns (no latency, 1e18 B/s); between hosts
  // L = 1000 ns and 1000 bytes at 1e9 B/s take 1000 ns more. A step therefore ends at + 2000 ns for
  // every rank (each has one message between hosts, sent or received): K steps end at 2000 K.
  // Ranks 0 and 2 send within their host and receive from the other: their send lands first. Through
  // isend / irecv / wait their fiber is resumed when the send lands, finds the receive pending and
  // blocks again: 2 switches a step, 1 for ranks 1 and 3 (their receive lands first), so 6 per step
  // plus the 4 fibers' starts. The simulator's sendrecv keeps the fiber blocked on the receive
  // (Fibers::Gate): 4 per step. Same times, same bytes on every link.
  constexpr int kSteps = 5;
  const RingRun fast = sendrecv_ring(hosts_spec(2, 2), kSteps, 1000, /*base=*/false);
  const RingRun base = sendrecv_ring(hosts_spec(2, 2), kSteps, 1000, /*base=*/true);
  EXPECT_EQ(fast.end, Time::ns(kSteps * 2000));
  EXPECT_EQ(base.end, fast.end);
  EXPECT_EQ(base.carried, fast.carried);
  EXPECT_EQ(base.switches, 4u + 6u * kSteps);
  EXPECT_EQ(fast.switches, 4u + 4u * kSteps);
}

TEST(TransportModel, SendrecvTimesAreThoseOfIsendIrecvAndWaitUnderEveryTransportModel) {
  // The override must not change a time: eager, rendezvous (its handshake waits for the posted
  // receive), credit slots, ordered connections, LogGP's overhead and gap, a TCP window; message
  // sizes on both sides of the limits.
  std::vector<ClusterSpec> specs;
  for (int k = 0; k < 5; ++k) {
    ClusterSpec spec = hosts_spec(2, 2);
    if (k == 1) spec.transport = TransportModel::mpi();
    if (k == 2) spec.transport = TransportModel::nccl();
    if (k == 3) {
      spec.transport = TransportModel::mpi();
      spec.transport.ordered = true;
      spec.factors.message_overhead = Time::ns(700);
      spec.factors.message_gap = Time::ns(300);
    }
    if (k == 4) spec.factors.tcp_window = Bytes(65'536);
    specs.push_back(spec);
  }
  for (size_t k = 0; k < specs.size(); ++k) {
    for (const int64_t bytes : {int64_t{100}, int64_t{70'000}, int64_t{3'000'000}}) {
      const RingRun fast = sendrecv_ring(specs[k], 4, bytes, /*base=*/false);
      const RingRun base = sendrecv_ring(specs[k], 4, bytes, /*base=*/true);
      EXPECT_EQ(fast.end, base.end) << "model " << k << ", " << bytes << " bytes";
      EXPECT_EQ(fast.carried, base.carried) << "model " << k << ", " << bytes << " bytes";
      EXPECT_LE(fast.switches, base.switches);
    }
  }
}

}  // namespace
}  // namespace bagua::netsim
