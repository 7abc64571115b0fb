// The window cap of one flow under a ClusterSpec's model factors (simulation.h), and the congestion
// window of TCP slow start (ModelFactors::tcp_slow_start). model_factors.cc also holds their
// validation (validate_model) and the cited defaults of the MPI-like and NCCL-like transports.
#pragma once

#include <string>

#include "netsim/simulation.h"

namespace bagua::netsim {

// A flow's own rate bound in bytes per second (+infinity for none): flow_window_cap and, for a flow
// between hosts when tcp_window is set, connections_per_peer x tcp_window / RTT with RTT = 2 x
// `route_latency` (a zero-latency route has no window bound).
double window_cap(const ModelFactors& factors, Time route_latency, bool between_hosts);

// Slow start, as Linux's TCP (CUBIC, its default, leaves slow start to the kernel's common code) runs
// it on a connection that loses nothing.
//
// Terms:
//   connection  one TCP stream between two processes on two hosts, one direction of it: FlowNetwork
//               keys it by the ordered pair of world ranks. With connections_per_peer = n a message
//               is striped over n such streams, which carry equal parts of every message and so have
//               equal windows: one cwnd stands for each of them
//   IW          tcp_initial_window, the cwnd of a new connection (RFC 5681 section 3.1, RFC 6928)
//   W           tcp_window, the most a connection may have in flight whatever its cwnd (the socket
//               buffer): cwnd never grows past it
//   RTT         2 x the route latency, as window_cap
//   cap         the flow's rate bound: min(flow_window_cap, n x min(cwnd, W) / RTT), window_cap's
//               formula with the window min(cwnd, W)
//   busy        a connection is busy while at least one of its flows is in phase 2 (moving bytes)
//   round       one RTT of a busy connection, the first starting when it becomes busy; the cap is
//               constant within a round (piecewise constant: the fluid model's form of a window's
//               worth of acknowledgements arriving per RTT)
//   delivered   the bytes per connection (a message's bytes / n) its flows moved in a round
//   growth      at the end of a full round cwnd := min(W, 2 x cwnd): slow start grows cwnd by the
//               bytes acknowledged (RFC 5681 section 3.1; tcp_slow_start, net/ipv4/tcp_cong.c in
//               Linux), a whole window per round when the window is what limits. A round cut short
//               by the connection going idle adds what it delivered: cwnd := min(W, cwnd +
//               min(delivered, cwnd)). No loss is modelled, so ssthresh stays infinite and slow start
//               never gives way to congestion avoidance
//   RTO         the retransmission timeout: Linux's srtt + rttvar (__tcp_set_rto, include/net/
//               tcp.h), whose rttvar never falls below TCP_RTO_MIN (tcp_rtt_estimator, net/ipv4/
//               tcp_input.c): with a constant RTT, RTT + tcp_rto_min
//   idle        from the end of a connection's last busy period to the start of its next one
//   restart     (tcp_restart_after_idle, net.ipv4.tcp_slow_start_after_idle) a connection becoming
//               busy after idle > RTO has its cwnd halved once per RTO the idle time exceeds, not
//               below min(IW, cwnd): tcp_slow_start_after_idle_check and tcp_cwnd_restart (RFC 2861),
//               net/ipv4/tcp_output.c in Linux, which halve `while ((delta -= rto) > 0 && cwnd >
//               restart_cwnd)`
// Flows within a host, routes of zero latency and a factor set without tcp_window have no slow start.

// Whether a flow of this route has slow start (the factor on, a window set, between hosts, RTT > 0).
bool slow_start_applies(const ModelFactors& factors, Time route_latency, bool between_hosts);
// The cap of a flow whose connection's window is `cwnd` bytes (slow_start_applies holds).
double slow_start_cap(const ModelFactors& factors, double cwnd, Time route_latency);
// The window after a round: `full` (the connection was busy the whole round) doubles it, otherwise it
// grows by `delivered`; never past W.
double grown_window(const ModelFactors& factors, double cwnd, bool full, double delivered);
Time retransmission_timeout(const ModelFactors& factors, Time route_latency);
// The window a connection starts a busy period with after `idle` (restart).
double window_after_idle(const ModelFactors& factors, double cwnd, Time idle, Time route_latency);

}  // namespace bagua::netsim
