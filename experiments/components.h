// The registries of every component the experiments layer can name in a config: workloads, optimizers,
// compressors, algorithms, runtimes and the simulator's topologies. make_components() fills them from
// each folder's register_* function (the runtimes from experiments/runtimes.cc); tests may fill their
// own. The topologies are the simulator's process-wide registry (netsim::topology_registry), the one
// make_topology builds from, so that a config is checked against what will build it.
#pragma once

#include <memory>
#include <string>

#include "core/algorithms/algorithm.h"
#include "core/compress/compressor.h"
#include "core/models/model.h"
#include "core/optim/optimizer.h"
#include "experiments/runtimes.h"
#include "netsim/topology.h"

namespace bagua::experiments {

struct Components {
  WorkloadRegistry workloads{"workload"};
  OptimizerRegistry optimizers{"optimizer"};
  CompressorRegistry compressors{"compressor"};
  AlgorithmRegistry algorithms{"algorithm"};
  RuntimeRegistry runtimes;
  const netsim::TopologyRegistry& topologies = netsim::topology_registry();  // the simulator's own
};

// Every registered component of the project.
std::unique_ptr<Components> make_components();

// Whether the algorithm `name` with `params` (its schema's, defaults filled in) runs a server loop on
// the cluster's service ranks (Algorithm::uses_service_ranks, core/services.h): the runner refuses CPU
// hosts to one that does not, and `bagua recommend` runs such a candidate without them.
bool uses_service_ranks(const std::string& name, const Params& params, const Components& c);

}  // namespace bagua::experiments
