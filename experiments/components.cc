#include "experiments/components.h"

namespace bagua::experiments {

std::unique_ptr<Components> make_components() {
  auto c = std::make_unique<Components>();
  register_workloads(c->workloads);
  register_optimizers(c->optimizers);
  register_compressors(c->compressors);
  register_algorithms(c->algorithms, c->compressors);
  register_runtimes(c->runtimes);
  return c;
}

bool uses_service_ranks(const std::string& name, const Params& params, const Components& c) {
  const AlgorithmDeps deps{c.compressors, c.optimizers};
  return c.algorithms.create(name, params, deps)->uses_service_ranks();
}

}  // namespace bagua::experiments
