// What the exact-time tests of the simulator share (network_test.cc, simulation_test.cc): the cluster
// their times are worked out on, payloads without storage, and readable Time failures.
#pragma once

#include <cstdint>
#include <ostream>

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
inline ClusterSpec hosts_spec(int hosts, int devices = 1) {
  ClusterSpec spec;
  spec.hosts = hosts;
  spec.devices_per_host = devices;
  spec.nic = {Bandwidth::gigabytes_per_second(1), Time::ns(500)};
  spec.intra_host = {Bandwidth::bytes_per_second(1e18), Time::zero()};
  return spec;
}

// `n` bytes with no storage: the simulator charges their transfer, nothing is copied.
inline BufferView meta_bytes(int64_t n) {
  return BufferView(nullptr, static_cast<size_t>(n), DType::kU8, &meta_space());
}

}  // namespace bagua::netsim
