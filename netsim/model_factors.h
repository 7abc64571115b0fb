// The window cap of one flow under a ClusterSpec's model factors (simulation.h). model_factors.cc also
// holds their validation (validate_model) and the cited defaults of the MPI-like and NCCL-like
// transports.
#pragma once

#include <string>

#include "netsim/simulation.h"

namespace bagua::netsim {

// A flow's own rate bound in bytes per second (+infinity for none): flow_window_cap and, for a flow
// between hosts when tcp_window is set, connections_per_peer x tcp_window / RTT with RTT = 2 x
// `route_latency` (a zero-latency route has no window bound).
double window_cap(const ModelFactors& factors, Time route_latency, bool between_hosts);

}  // namespace bagua::netsim
