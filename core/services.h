// Service ranks: ranks of a World that serve and do not train.
//
// A World holds its workers (the ranks that train) and, after them, its service ranks: processes an
// algorithm runs its own server loop on, each on a host of its own that has no accelerator (BytePS's
// summation servers on CPU-only machines: DMLC_ROLE=server with DMLC_NUM_SERVER of them, bytedance/byteps
// docs/step-by-step-tutorial.md). A world without service ranks is exactly what it was before they
// existed: every rank trains.
//
// Terms:
//   worker        a rank that trains: job ranks 0 .. workers - 1; its algorithm, trainer and results
//                 see only the workers (the worker group)
//   service rank  job ranks workers .. workers + count - 1; service s is job rank workers + s. It runs
//                 Algorithm::serve (core/algorithms/algorithm.h) instead of the trainer, is not timed
//                 and gives no result row
//   job group     the transport over every rank of the world, workers first, then the service ranks:
//                 the only group in which a worker and a service rank can talk
//   worker group  the subgroup of the workers, numbered as in the job group; what a worker's
//                 RankContext::transport() returns
//
// Who asks for them: the cluster gives the service ranks' hosts (cluster.cpu_hosts, one service rank on
// each), an algorithm declares that it runs a server loop on them (Algorithm::uses_service_ranks), and
// the composition root refuses one without the other. The runtime places them (the simulator on the
// CPU hosts of its topology, the threads runtime each on a host of its own).
#pragma once

#include <memory>
#include <string>

#include "core/context.h"

namespace bagua {

// What a worker (or a service rank) knows of the world's service ranks.
struct ServiceRanks {
  Transport* job = nullptr;  // the job group: workers first, then the service ranks
  int workers = 0;           // job ranks 0 .. workers - 1 train
  int count = 0;             // service ranks
  // The job rank of service `s` (0 .. count - 1).
  int rank_of(int s) const { return workers + s; }
};

// A worker's context in a world with service ranks: `inner`'s clock, streams and space, with the worker
// group as its transport and `services()` naming the service ranks. Collective over the workers (it
// makes the worker group); service ranks do not make one.
class WorkerContext final : public ForwardingContext {
 public:
  WorkerContext(RankContext& inner, int workers);

  Transport& transport() override { return *workers_; }
  const ServiceRanks* services() const override { return &services_; }

 private:
  std::unique_ptr<Transport> workers_;
  ServiceRanks services_;
};

}  // namespace bagua
