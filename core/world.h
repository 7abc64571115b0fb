// World: a runtime's ranks, seen from the composition root. A runtime (the simulator, threads, Open
// MPI, NCCL) provides a RankContext per rank (core/context.h) and a World that runs one function on
// every rank; experiments/ makes worlds through the runtime registry (experiments/runtimes.h) and
// never learns which runtime it drives.
//
// Terms:
//   rank        one participant of the world, 0 .. size() - 1, running `body` with its own context
//   in-process  a runtime whose world runs every rank in this process (sim, threads): rank() is 0
//   job         a runtime whose world is one rank per process, the processes started by a launcher
//               (mpirun); this process runs only rank() of them, and one job lives as long as the
//               process (MPI cannot start twice)
//   report      what a runtime that models virtual time measured in the last run besides the ranks'
//               own results: the end time, per-rank and per-link totals, a timeline (RunReport); a
//               real-time runtime has none
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/transport.h"
#include "core/units.h"

namespace bagua {

// Per-rank totals over a run.
struct RankStats {
  Time compute;    // charged by Clock::compute on any stream
  Time busy_comm;  // time with at least one of this rank's flows or messages in flight
};

// Per-link totals over a run.
struct LinkStats {
  std::string name;  // e.g. "host3.nic.up"
  Bytes carried;
  double utilization;  // carried / (bandwidth * run time)
};

// The report of one run of a virtual-time runtime.
struct RunReport {
  Time end;  // the virtual time at which the last rank finished
  std::vector<RankStats> ranks;
  std::vector<LinkStats> links;
  std::string trace;  // Chrome trace-event JSON, when the runtime was asked to record one
};

class World {
 public:
  virtual ~World() = default;
  // This process's rank: in a job, the one rank it runs; 0 for an in-process runtime.
  virtual int rank() const = 0;
  // The number of ranks.
  virtual int size() const = 0;
  // Runs `body` on every rank this process runs (in a job: its own; in-process: all of them) and
  // returns when they have returned. A rank's exception is rethrown here (a job may instead abort every
  // process: see the runtime's world). May be called any number of times.
  virtual void run(const std::function<void(RankContext&)>& body) = 0;
  // Whether this world is a job (see the terms above).
  virtual bool is_job() const { return false; }
  // The last run's report when the runtime models virtual time; null for a real-time runtime, and
  // before the first run.
  virtual const RunReport* report() const { return nullptr; }
  // The nominal links of the cluster the next runs stand for (nullopt: none), which a real runtime's
  // transports report as Transport::link_hint, so that NCCL's tuner (core/collectives/nccl.h) picks
  // the algorithm and protocol the simulator of the same config picks. The simulator reports its own
  // cluster's links and ignores this.
  virtual void set_link_hint(std::optional<LinkHint> hint) {}
};

}  // namespace bagua
