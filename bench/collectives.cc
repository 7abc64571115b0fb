// The collectives' speed, two ways.
//
// BM_ThreadsAllreduce: real time of one allreduce of f32 sums among P threads of this process (the
// threads runtime), per algorithm, P and buffer size. Each iteration runs a world that leaves a barrier
// (a one-element allreduce) and then runs kRepeats allreduces; the iteration's time is rank 0's time
// for them divided by kRepeats.
//
// BM_SimulatedAllreduce: simulated time of one allreduce of a 100 MB meta buffer on a simulated cluster
// of P / 8 hosts with 8 devices each, flat and hierarchical, per algorithm; the benchmark's own time is
// the simulator's wall time. Counter sim_ms is the simulated time, to compare with docs/algorithms.md.
#include "core/collectives/collectives.h"

#include <benchmark/benchmark.h>

#include <chrono>

#include "core/ops.h"
#include "netsim/simulation.h"
#include "runtime/threads/world.h"

namespace {

using namespace bagua;
using collectives::AllreduceAlgo;

constexpr int kRepeats = 5;

void BM_ThreadsAllreduce(benchmark::State& state) {
  const auto algo = static_cast<AllreduceAlgo>(state.range(0));
  const int ranks = static_cast<int>(state.range(1));
  const auto count = static_cast<size_t>(state.range(2)) / 4;
  for (auto _ : state) {
    double seconds = 0;
    runtime::threads::ThreadsWorld(ranks).run([&](RankContext& ctx) {
      Transport& t = ctx.transport();
      Buffer data = Buffer::host(DType::kF32, count);
      fill(data, 1);
      const Buffer token = Buffer::host(DType::kF32, 1);
      collectives::allreduce(t, token, ReduceOp::kSum, 0);  // barrier
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < kRepeats; ++i)
        collectives::allreduce(t, data, ReduceOp::kSum, 1, algo);
      if (t.rank() == 0)
        seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    });
    state.SetIterationTime(seconds / kRepeats);
  }
  state.SetLabel(collectives::to_string(algo));
  state.SetBytesProcessed(state.iterations() * state.range(2));
}

void threads_args(benchmark::internal::Benchmark* b) {
  for (int algo = 0; algo < 3; ++algo)
    for (int ranks : {4, 8})
      for (int64_t bytes : {int64_t{1} << 12, int64_t{1} << 20, int64_t{1} << 24})
        b->Args({algo, ranks, bytes});
}
BENCHMARK(BM_ThreadsAllreduce)->Apply(threads_args)->UseManualTime()->Unit(benchmark::kMicrosecond);

netsim::ClusterSpec cluster(int ranks) {
  netsim::ClusterSpec spec;
  spec.devices_per_host = 8;
  spec.hosts = ranks / 8;
  // Round figures of a current GPU server class (NVLink-like device fabric, 100 Gbit/s NICs); what this
  // program compares is the algorithms, not these values.
  spec.intra_host = {Bandwidth::gigabytes_per_second(150), Time::us(1)};
  spec.nic = {Bandwidth::gbps(100), Time::us(2)};
  return spec;
}

void BM_SimulatedAllreduce(benchmark::State& state) {
  const auto algo = static_cast<AllreduceAlgo>(state.range(0));
  const int ranks = static_cast<int>(state.range(1));
  const bool hierarchical = state.range(2) != 0;
  const Buffer data = Buffer::meta(DType::kF32, 100'000'000 / 4);  // 100 MB of gradients
  double simulated = 0;
  for (auto _ : state) {
    netsim::Simulation sim(cluster(ranks));
    simulated = sim.run([&](RankContext& ctx) {
                     if (hierarchical) {
                       collectives::HierarchicalGroups groups(ctx.transport());
                       collectives::hierarchical_allreduce(groups, data, ReduceOp::kSum, 1, algo);
                     } else {
                       collectives::allreduce(ctx.transport(), data, ReduceOp::kSum, 1, algo);
                     }
                   })
                    .milliseconds();
  }
  state.SetLabel(std::string(hierarchical ? "hierarchical " : "flat ") + collectives::to_string(algo));
  state.counters["sim_ms"] = simulated;
}

void sim_args(benchmark::internal::Benchmark* b) {
  for (int algo = 0; algo < 3; ++algo)
    for (int ranks : {16, 64})
      for (int hierarchical : {0, 1})
        b->Args({algo, ranks, hierarchical});
}
BENCHMARK(BM_SimulatedAllreduce)->Apply(sim_args)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
