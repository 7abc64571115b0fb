// The registries of every component the experiments layer can name in a config: workloads, optimizers,
// compressors, algorithms, runtimes and the simulator's topologies. make_components() fills them from
// each folder's register_* function (the runtimes from experiments/runtimes.cc); tests may fill their
// own.
#pragma once

#include <memory>

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
  netsim::TopologyRegistry topologies{"topology"};
};

// Every registered component of the project.
std::unique_ptr<Components> make_components();

}  // namespace bagua::experiments
