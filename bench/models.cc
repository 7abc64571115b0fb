// Speed of the synthetic workloads with their default parameters: building the workload (data set,
// partition, closed-form optimum) and one rank's forward/backward pass at 32 samples per rank.
// The defaults are meant for 100 iterations x 8 ranks in well under a second of real time.
#include <benchmark/benchmark.h>

#include "core/models/model.h"
#include "core/models/synthetic.h"

namespace {

using namespace bagua;

const char* const kNames[] = {"linear_regression", "logistic_regression", "mlp"};

void BM_BuildWorkload(benchmark::State& state) {
  WorkloadRegistry registry("workload");
  register_workloads(registry);
  const char* name = kNames[state.range(0)];
  for (auto _ : state) {
    auto w = registry.create(name, Params(registry.at(name).schema), WorkloadSetup{8, 32, 1});
    benchmark::DoNotOptimize(w);
  }
  state.SetLabel(name);
}
BENCHMARK(BM_BuildWorkload)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);

// 100 iterations of 8 ranks (800 forward/backward passes), float32.
void BM_HundredIterationsEightRanks(benchmark::State& state) {
  WorkloadRegistry registry("workload");
  register_workloads(registry);
  const char* name = kNames[state.range(0)];
  auto workload = registry.create(name, Params(registry.at(name).schema), WorkloadSetup{8, 32, 1});
  std::vector<std::unique_ptr<Model>> models;
  for (int r = 0; r < 8; ++r)
    models.push_back(workload->make_model(r));
  const size_t n = models[0]->num_params();
  Buffer w = Buffer::host(DType::kF32, n), g = Buffer::host(DType::kF32, n);
  models[0]->init_weights(w);
  for (auto _ : state) {
    for (int64_t step = 0; step < 100; ++step)
      for (auto& m : models)
        benchmark::DoNotOptimize(m->forward_backward(w, g, step, nullptr));
  }
  state.SetLabel(name);
}
BENCHMARK(BM_HundredIterationsEightRanks)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
