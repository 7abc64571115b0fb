// Registries with stand-in components, so that config validation is tested without the real ones.
#pragma once

#include <memory>

#include "experiments/components.h"

namespace bagua::experiments::testing {

inline std::unique_ptr<Components> fake_components() {
  auto c = std::make_unique<Components>();
  c->workloads.add(
      "toy", "a stand-in workload",
      ParamSchema()
          .add_int("dim", 8, "features", 1)
          .add_string("partition", "iid", "split", {"iid", "sorted"}),
      [](const Params&, const WorkloadSetup&) -> std::unique_ptr<Workload> { return nullptr; });
  c->workloads.add(
      "profile", "a stand-in for the profile entry",
      ParamSchema().add_string("file", "", "profile file"),
      [](const Params&, const WorkloadSetup&) -> std::unique_ptr<Workload> { return nullptr; });
  c->optimizers.add(
      "sgd", "a stand-in optimizer", ParamSchema().add_double("lr", 0.1, "step size", 0.0, {}, true),
      [](const Params&, size_t, const BufferView&) -> std::unique_ptr<Optimizer> { return nullptr; });
  c->algorithms.add(
      "toy_allreduce", "a stand-in algorithm",
      ParamSchema().add_bool("hierarchical", false, "two levels").add_int("peers", 1, "peers", 1, 4),
      [](const Params&, const AlgorithmDeps&) -> std::unique_ptr<Algorithm> { return nullptr; });
  c->algorithms.add(
      "toy_decentralized", "another stand-in algorithm", ParamSchema(),
      [](const Params&, const AlgorithmDeps&) -> std::unique_ptr<Algorithm> { return nullptr; });
  register_runtimes(c->runtimes);  // the real ones: configs name them, no world is made here
  // c->topologies: the real ones (netsim::topology_registry), which the config layer parses.
  return c;
}

// A valid config using the stand-ins.
inline const char* fake_config_text() {
  return R"({
    "name": "unit",
    "seed": 7,
    "cluster": {
      "hosts": 2, "devices_per_host": 4,
      "intra_host": {"bandwidth": "150 GB/s", "latency": "1 us"},
      "nic": {"bandwidth": "100 Gbps", "latency": "5 us"}
    },
    // comments are allowed
    "workload": {"name": "toy", "batch_size": 16, "dim": 4},
    "algorithm": {"name": "toy_allreduce", "hierarchical": true},
    "optimizer": {"name": "sgd", "lr": 1},
    "schedule": {"iterations": 10}
  })";
}

}  // namespace bagua::experiments::testing
