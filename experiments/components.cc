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

}  // namespace bagua::experiments
