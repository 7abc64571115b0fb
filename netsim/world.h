// Everything one simulation shares between its ranks: the engine, the fibers, the topology and flow
// network, the mailbox that matches messages, the per-rank totals, the first failure and the trace.
// Owned by a Simulation; nothing in netsim/ is static.
#pragma once

#include <cstdint>
#include <exception>
#include <map>
#include <tuple>
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

// Meetings of a group's ranks that take no time (SimTransport::start_together): the n-th call for a
// group's tag on each of its ranks meets the n-th on every other; the fibers that came before the last
// one wait, and are woken, in the order they came, when it comes.
class Meetings {
 public:
  // Blocks the calling fiber until `size` ranks of `group` have met for `tag` this time.
  void meet(Fibers& fibers, uint64_t group, Tag tag, int group_rank, int size,
            bool subgroup);

 private:
  struct Meeting {
    int came = 0;
    WaitList waiters;
  };
  std::map<std::tuple<uint64_t, Tag, int>, uint64_t> calls_;  // (group, tag, rank): its meetings so far
  std::map<std::tuple<uint64_t, Tag, uint64_t>, Meeting> open_;  // (group, tag, n): the ones not yet met
};

class World {
 public:
  World(const ClusterSpec& spec, const SimOptions& options);

  // A message of `rank`'s starts / stops being on the wire (for RankStats::busy_comm).
  void comm_begin(int rank) {
    RankTotals& t = totals[static_cast<size_t>(rank)];
    if (t.in_flight++ == 0) t.busy_since = engine.now();
  }
  void comm_end(int rank) {
    RankTotals& t = totals[static_cast<size_t>(rank)];
    if (--t.in_flight == 0) t.busy_comm += engine.now() - t.busy_since;
  }
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
  Meetings meetings;
  // The subgroup SimTransport::make_subgroup built last and its id (subgroup_id of its members), for
  // the next rank that builds the same one, which shares its list of members; id 0: none yet.
  struct LastSubgroup {
    uint64_t parent = 0;
    std::shared_ptr<const std::vector<int>> members;
    uint64_t id = 0;
  } last_subgroup;
  Fibers fibers;  // last: destroyed first, so that unwinding fibers still find everything above
};

}  // namespace bagua::netsim
