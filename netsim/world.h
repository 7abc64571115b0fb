// Everything one simulation shares between its ranks: the engine, the fibers, the topology and flow
// network, the mailbox that matches messages, the per-rank totals, the first failure and the trace.
// Owned by a Simulation; nothing in netsim/ is static.
#pragma once

#include <exception>
#include <memory>
#include <optional>
#include <vector>

#include "netsim/engine.h"
#include "netsim/fibers.h"
#include "netsim/network.h"
#include "netsim/simulation.h"
#include "netsim/topology.h"
#include "core/trace.h"
#include "netsim/transport.h"

namespace bagua::netsim {

struct RankTotals {
  Time compute;
  Time busy_comm;
  int in_flight = 0;  // this rank's messages (sent or received) currently on the wire
  Time busy_since;
};

// An exception that stops the run: the first by simulated time, ties broken by rank.
struct Failure {
  Time at;
  int rank;
  std::exception_ptr error;
};

class World {
 public:
  World(const ClusterSpec& spec, const SimOptions& options);

  // A message of `rank`'s starts / stops being on the wire (for RankStats::busy_comm).
  void comm_begin(int rank);
  void comm_end(int rank);
  // Records `error` as thrown by `rank` at `at`; the run stops once every event due by then has run.
  void fail(int rank, Time at, std::exception_ptr error);

  const ClusterSpec& spec;
  const bool tracing;
  Engine engine;
  const std::unique_ptr<Topology> topology_owner;
  const Topology& topology;
  FlowNetwork network;
  TraceLog trace;
  std::vector<RankTotals> totals;
  std::optional<Failure> failure;
  Mailbox mailbox;
  Fibers fibers;  // last: destroyed first, so that unwinding fibers still find everything above
};

}  // namespace bagua::netsim
