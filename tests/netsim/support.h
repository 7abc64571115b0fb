// What the exact-time tests of the simulator share (network_test.cc, simulation_test.cc,
// transport_model_test.cc): the cluster their times are worked out on, payloads without storage,
// messages sent at once and when they are received, and readable Time failures.
#pragma once

#include <cstdint>
#include <ostream>
#include <utility>
#include <vector>

#include "netsim/simulation.h"

namespace bagua {
// Readable failures: times print as "1.001 ms".
inline void PrintTo(const Time& t, std::ostream* os) {
  *os << to_string(t) << " (" << t.nanoseconds() << " ns)";
}
}  // namespace bagua

namespace bagua::netsim {

inline constexpr int64_t kMB = 1'000'000;

// Hosts with `devices` devices each. NIC links: 1 GB/s and 0.5 us in each direction, so that a route
// between two hosts (the sender's NIC up-link, the receiver's NIC down-link) has 1 us of latency.
// Device links: 1e18 B/s and 0 latency, so they are never the bottleneck (a lone flow runs at its
// slowest link's capacity, here 1e9 B/s) and add no latency: a host-to-host route is exactly
// L = 1000 ns, B = 1e9 B/s.
// `hosts` hosts of `devices` devices whose device links are `intra_host` and NIC links `nic`; nothing
// else set.
inline ClusterSpec hosts_spec(int hosts, int devices, LinkSpec intra_host, LinkSpec nic) {
  ClusterSpec spec;
  spec.hosts = hosts;
  spec.devices_per_host = devices;
  spec.intra_host = intra_host;
  spec.nic = nic;
  return spec;
}
inline ClusterSpec hosts_spec(int hosts, int devices = 1) {
  return hosts_spec(hosts, devices, {Bandwidth::bytes_per_second(1e18), Time::zero()},
                    {Bandwidth::gigabytes_per_second(1), Time::ns(500)});
}

// `n` bytes with no storage: the simulator charges their transfer, nothing is copied.
inline BufferView meta_bytes(int64_t n) {
  return BufferView(nullptr, static_cast<size_t>(n), DType::kU8, &meta_space());
}

// One message per entry, all sent at 0: {source rank, destination rank, bytes}.
struct SentMessage {
  int src = 0;
  int dst = 0;
  int64_t bytes = 0;
};
// When each message's receive completes, as its receiver sees it: a rank receiving several waits
// for them in `messages` order (list the earlier first).
inline std::vector<Time> receive_times(const ClusterSpec& spec,
                                       const std::vector<SentMessage>& messages) {
  std::vector<Time> done(messages.size());
  Simulation(spec).run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    std::vector<RequestPtr> sends;
    std::vector<std::pair<size_t, RequestPtr>> receives;
    for (size_t k = 0; k < messages.size(); ++k) {
      const SentMessage& m = messages[k];
      if (m.src == t.rank()) sends.push_back(t.isend(meta_bytes(m.bytes), m.dst, static_cast<Tag>(k)));
      if (m.dst == t.rank())
        receives.emplace_back(k, t.irecv(meta_bytes(m.bytes), m.src, static_cast<Tag>(k)));
    }
    for (auto& [k, r] : receives) {
      r->wait();
      done[k] = ctx.clock().now();
    }
    wait_all(sends);
  });
  return done;
}

}  // namespace bagua::netsim
