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

std::string to_string(NicPath path) {
  switch (path) {
    case NicPath::kPix:
      return "pix";
    case NicPath::kPxb:
      return "pxb";
    case NicPath::kPhb:
      return "phb";
    case NicPath::kSys:
      return "sys";
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
  if (f.tcp_slow_start) {
    if (f.tcp_window.count() <= 0)
      fail("factors.tcp_window", "be > 0 with factors.tcp_slow_start (the window it grows to)",
           std::to_string(f.tcp_window.count()));
    if (f.tcp_initial_window.count() < 1)
      fail("factors.tcp_slow_start.initial_window", "be >= 1",
           std::to_string(f.tcp_initial_window.count()));
    if (f.tcp_rto_min < Time::zero())
      fail("factors.tcp_slow_start.rto_min", "be >= 0", to_string(f.tcp_rto_min));
  }

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

bool slow_start_applies(const ModelFactors& factors, Time route_latency, bool between_hosts) {
  return factors.tcp_slow_start && between_hosts && factors.tcp_window.count() > 0 &&
         route_latency > Time::zero();
}

double slow_start_cap(const ModelFactors& factors, double cwnd, Time route_latency) {
  // window_cap's arithmetic with the window min(cwnd, W): at cwnd >= W exactly window_cap.
  const double rtt_seconds = 2.0 * route_latency.seconds();
  const double window = std::min(cwnd, static_cast<double>(factors.tcp_window.count()));
  const double per_connection = window / rtt_seconds;
  return std::min(factors.flow_window_cap.bytes_per_second(),
                  static_cast<double>(factors.connections_per_peer) * per_connection);
}

double grown_window(const ModelFactors& factors, double cwnd, bool full, double delivered) {
  // Slow start: cwnd grows by the bytes acknowledged (RFC 5681 section 3.1), a window per full round.
  const double growth = full ? cwnd : std::min(delivered, cwnd);
  return std::min(cwnd + growth, static_cast<double>(factors.tcp_window.count()));
}

Time retransmission_timeout(const ModelFactors& factors, Time route_latency) {
  // Linux: rto = srtt + rttvar, rttvar >= TCP_RTO_MIN (__tcp_set_rto, tcp_rtt_estimator); with a
  // constant RTT the variance is 0 and rttvar its floor.
  return route_latency * 2 + factors.tcp_rto_min;
}

double window_after_idle(const ModelFactors& factors, double cwnd, Time idle, Time route_latency) {
  if (!factors.tcp_restart_after_idle) return cwnd;
  const Time rto = retransmission_timeout(factors, route_latency);
  if (idle <= rto) return cwnd;  // tcp_slow_start_after_idle_check: delta > icsk_rto
  // tcp_cwnd_restart: restart_cwnd = min(IW, cwnd); while ((delta -= rto) > 0 && cwnd >
  // restart_cwnd) cwnd >>= 1; cwnd = max(cwnd, restart_cwnd).
  const double restart = std::min(static_cast<double>(factors.tcp_initial_window.count()), cwnd);
  double window = cwnd;
  Time delta = idle;
  while ((delta = delta - rto) > Time::zero() && window > restart)
    window /= 2;
  return std::max(window, restart);
}

}  // namespace bagua::netsim
