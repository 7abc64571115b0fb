// Simulator speed: a ring-style neighbour exchange (the traffic of a ring allreduce) at growing rank
// counts. Each of P ranks sends S / P meta bytes to its right neighbour and receives as much from its
// left, 2(P - 1) times; S = 100 MB. The cluster is a star of hosts with 8 devices each (NVLink-like
// device links, 100 Gbit/s NICs), so every step mixes intra-host and inter-host flows.
//
// Counters: the CPU time of one run (the Simulation's construction, run and destruction, on this
// thread: the machines are shared, so wall time is no measure) per message, events per message (a run
// is P x 2(P - 1) messages), events processed per wall-clock second, simulated seconds, simulated time
// per wall time, and the process's peak resident memory per rank (getrusage's ru_maxrss: the peak so
// far, so with the sizes run in increasing order it is that of the largest run yet; scripts/bench runs
// each size in a process of its own).
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <chrono>
#include <ctime>

#include "netsim/simulation.h"

namespace {

using namespace bagua;

constexpr int64_t kTotalBytes = 100'000'000;  // S: 100 MB, a mid-sized model's gradients

// This thread's CPU time in seconds.
double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

netsim::ClusterSpec ring_cluster(int ranks) {
  netsim::ClusterSpec spec;
  spec.devices_per_host = ranks < 8 ? ranks : 8;
  spec.hosts = ranks / spec.devices_per_host;
  // Round numbers of today's hardware class (NVLink-like device fabric, 100 Gbit/s Ethernet NICs); the
  // speed of the simulator, not these values, is what this program measures.
  spec.intra_host = {Bandwidth::gigabytes_per_second(150), Time::us(1)};
  spec.nic = {Bandwidth::gbps(100), Time::us(2)};
  return spec;
}

void BM_RingExchange(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  const int64_t chunk = kTotalBytes / ranks;
  const double messages = static_cast<double>(ranks) * 2 * (ranks - 1);
  uint64_t events = 0, switches = 0;
  double simulated = 0, wall = 0, cpu = 0;
  for (auto _ : state) {
    const double cpu_start = thread_cpu_seconds();
    {
      netsim::Simulation sim(ring_cluster(ranks));
      const auto start = std::chrono::steady_clock::now();
      const Time end = sim.run([&](RankContext& ctx) {
        Transport& t = ctx.transport();
        const BufferView piece(nullptr, static_cast<size_t>(chunk), DType::kU8, &meta_space());
        const int right = (t.rank() + 1) % t.size();
        const int left = (t.rank() + t.size() - 1) % t.size();
        for (int step = 0; step < 2 * (t.size() - 1); ++step)
          t.sendrecv(piece, right, piece, left, 0);
      });
      wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      events += sim.events_processed();
      switches += sim.fiber_switches();
      simulated += end.seconds();
    }
    cpu += thread_cpu_seconds() - cpu_start;
  }
  const double runs = static_cast<double>(state.iterations());
  state.counters["cpu_ns_per_message"] = benchmark::Counter(cpu * 1e9 / (runs * messages));
  state.counters["events_per_message"] =
      benchmark::Counter(static_cast<double>(events) / (runs * messages));
  state.counters["switches_per_message"] =
      benchmark::Counter(static_cast<double>(switches) / (runs * messages));
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events) / wall);
  state.counters["events"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kAvgIterations);
  state.counters["sim_s"] = benchmark::Counter(simulated, benchmark::Counter::kAvgIterations);
  state.counters["sim_per_wall"] = benchmark::Counter(simulated / wall);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  state.counters["peak_rss_kib_per_rank"] =
      benchmark::Counter(static_cast<double>(usage.ru_maxrss) / ranks);  // ru_maxrss is in KiB
}

BENCHMARK(BM_RingExchange)
    ->Arg(8)
    ->Arg(64)
    ->Arg(512)
    ->Arg(1024)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_RingExchange)
    ->Arg(2048)
    ->Arg(4096)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
