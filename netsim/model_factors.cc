#include "netsim/model_factors.h"

#include <cmath>
#include <limits>

#include "core/check.h"

namespace bagua::netsim {

std::string to_string(SendCompletion c) {
  switch (c) {
    case SendCompletion::kArrival:
      return "arrival";
    case SendCompletion::kEagerRendezvous:
      return "eager_rendezvous";
    case SendCompletion::kCreditSlots:
      return "credit_slots";
  }
  return "?";
}

TransportModel TransportModel::mpi() {
  TransportModel t;
  t.completion = SendCompletion::kEagerRendezvous;
  // Open MPI v4.1.8, opal/mca/btl/tcp/btl_tcp_component.c: btl_eager_limit = 64*1024.
  t.eager_limit = Bytes(64 * 1024);
  // Open MPI v4.1.8, opal/mca/btl/vader/btl_vader_component.c: btl_eager_limit = 4 * 1024 without
  // XPMEM (Debian's build has no XPMEM; with it the limit is 32 * 1024).
  t.eager_limit_intra_host = Bytes(4 * 1024);
  return t;
}

TransportModel TransportModel::nccl() {
  TransportModel t;
  t.completion = SendCompletion::kCreditSlots;
  // NVIDIA/nccl src/include/device.h: #define NCCL_STEPS 8 (the slots of one connection's buffer).
  t.slots = 8;
  // NVIDIA/nccl src/init.cc: #define DEFAULT_BUFFSIZE (1 << 22) /* 4MiB */, the Simple protocol's
  // buffer, split into NCCL_STEPS slots: 4 MiB / 8 = 512 KiB each.
  t.slot_bytes = Bytes((int64_t{1} << 22) / 8);
  return t;
}

void validate_model(const ClusterSpec& spec, const std::string& prefix) {
  auto fail = [&](const std::string& field, const std::string& rule, const std::string& got) {
    throw ConfigError(prefix + field + " must " + rule + ", got " + got);
  };
  auto str = [](double v) {
    std::string s = std::to_string(v);
    s.erase(s.find_last_not_of('0') + 1);
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  };
  const ModelFactors& f = spec.factors;
  if (f.tcp_window.count() < 0)
    fail("factors.tcp_window", "be >= 0", std::to_string(f.tcp_window.count()));
  if (f.connections_per_peer < 1)
    fail("factors.connections_per_peer", "be >= 1", std::to_string(f.connections_per_peer));
  if (!(f.host_bandwidth_ceiling.bytes_per_second() > 0))
    fail("factors.host_bandwidth_ceiling", "be > 0", str(f.host_bandwidth_ceiling.bytes_per_second()));
  if (f.message_overhead < Time::zero())
    fail("factors.message_overhead", "be >= 0", to_string(f.message_overhead));
  if (f.message_gap < Time::zero()) fail("factors.message_gap", "be >= 0", to_string(f.message_gap));

  const TransportModel& t = spec.transport;
  switch (t.completion) {
    case SendCompletion::kArrival:
      break;
    case SendCompletion::kEagerRendezvous:
      if (t.eager_limit.count() < 0)
        fail("transport.eager_limit", "be >= 0", std::to_string(t.eager_limit.count()));
      if (t.eager_limit_intra_host.count() < 0)
        fail("transport.eager_limit_intra_host", "be >= 0",
             std::to_string(t.eager_limit_intra_host.count()));
      break;
    case SendCompletion::kCreditSlots:
      if (t.slots < 1) fail("transport.slots", "be >= 1", std::to_string(t.slots));
      if (t.slot_bytes.count() < 1)
        fail("transport.slot_bytes", "be >= 1", std::to_string(t.slot_bytes.count()));
      break;
  }
}

double window_cap(const ModelFactors& factors, Time route_latency, bool between_hosts) {
  double cap = factors.flow_window_cap.bytes_per_second();
  if (between_hosts && factors.tcp_window.count() > 0 && route_latency > Time::zero()) {
    // One window per round trip per connection (RFC 7323, section 1: throughput <= window / RTT).
    const double rtt_seconds = 2.0 * route_latency.seconds();
    const double per_connection = static_cast<double>(factors.tcp_window.count()) / rtt_seconds;
    cap = std::min(cap, static_cast<double>(factors.connections_per_peer) * per_connection);
  }
  return cap;
}

}  // namespace bagua::netsim
