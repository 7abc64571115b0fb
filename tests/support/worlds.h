// Run a body on N ranks of a chosen backend, for tests that sweep backend x rank count (Gloo's habit).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/units.h"

namespace bagua::netsim {
struct ClusterSpec;  // netsim/simulation.h
}

namespace bagua::testing {

enum class Backend { kThreads, kSim };
std::string to_string(Backend b);
// Every backend available to in-process tests.
std::vector<Backend> all_backends();

// Runs `body` on `ranks` ranks (ranks_per_host per host). The simulated cluster is uniform: every link
// 10 GB/s and 1 us, so tests of data movement finish quickly; tests of timing build their own.
void run_ranks(Backend backend, int ranks, const std::function<void(RankContext&)>& body,
               int ranks_per_host = 1);

// The collectives' timing tests' cluster: `hosts` x `devices_per_host` on one star switch, NIC links
// 100 Gbps and `nic_latency`, device links 1e15 B/s and no latency (the NIC alone counts), a
// 1 TFLOPS, 100 GB/s device.
netsim::ClusterSpec timing_star(int hosts, int devices_per_host = 1, Time nic_latency = Time::us(1));

}  // namespace bagua::testing
