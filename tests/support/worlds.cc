#include "tests/support/worlds.h"

#include "netsim/simulation.h"
#include "runtime/threads/world.h"

namespace bagua::testing {

std::string to_string(Backend b) {
  return b == Backend::kThreads ? "threads" : "sim";
}

std::vector<Backend> all_backends() {
  return {Backend::kThreads, Backend::kSim};
}

void run_ranks(Backend backend, int ranks, const std::function<void(RankContext&)>& body,
               int ranks_per_host) {
  if (backend == Backend::kThreads) {
    runtime::threads::ThreadsWorld(ranks, ranks_per_host).run(body);
    return;
  }
  netsim::ClusterSpec spec;
  spec.devices_per_host = ranks_per_host;
  spec.hosts = (ranks + ranks_per_host - 1) / ranks_per_host;
  BAGUA_CHECK(spec.world_size() == ranks, "sim worlds need ranks divisible by ranks_per_host");
  spec.intra_host = {Bandwidth::gigabytes_per_second(10), Time::us(1)};
  spec.nic = {Bandwidth::gigabytes_per_second(10), Time::us(1)};
  spec.device = {1e12, Bandwidth::gigabytes_per_second(100)};
  netsim::Simulation(spec).run(body);
}

netsim::ClusterSpec timing_star(int hosts, int devices_per_host, Time nic_latency) {
  netsim::ClusterSpec spec;
  spec.hosts = hosts;
  spec.devices_per_host = devices_per_host;
  spec.intra_host = {Bandwidth::bytes_per_second(1e15), Time::zero()};
  spec.nic = {Bandwidth::gbps(100), nic_latency};
  spec.topology = {"star", {}};
  spec.device = {1e12, Bandwidth::gigabytes_per_second(100)};
  return spec;
}

}  // namespace bagua::testing
