// libFuzzer target: the simulator's topology builder, through the registry (netsim::make_topology), on
// clusters the config loader accepted. The input (tests/fuzz/fuzz_input.h) is a cluster object (and
// --set overrides, paths below "cluster"); it replaces the cluster of a small valid config, and when
// the loader accepts it the topology is built and routes are taken between ranks the input chooses.
// Every route must start at the source's device link, end at the destination's, use only links of the
// topology and take the sum of their latencies (scaled by latency_factor) — what the simulator relies
// on. A ConfigError (one line) is the only other outcome allowed.
//
// The loader's memory estimate is held to kFuzzMemoryLimit (fuzz_input.h), so that no input builds a
// topology larger than a fuzzing budget allows (about 32,000 ranks).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/check.h"
#include "experiments/components.h"
#include "experiments/config.h"
#include "netsim/topology.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

constexpr int kRoutes = 16;

const char* const kBase = R"({
  "name": "fuzz",
  "workload": {"name": "linear_regression", "features": 4, "samples": 64},
  "algorithm": {"name": "gradient_allreduce"},
  "optimizer": {"name": "sgd", "lr": 0.1},
  "schedule": {"iterations": 2}
})";

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "topology fuzz: %s\n", what.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace bagua;
  using namespace bagua::experiments;
  static const std::unique_ptr<Components> components = [] {
    fuzz::enter_source_dir();
    return make_components();
  }();
  const fuzz::FuzzInput in = fuzz::split_input(data, size);
  LoadOptions options;
  options.memory_limit = fuzz::kFuzzMemoryLimit;
  for (const std::string& s : in.sets)
    options.sets.push_back("cluster." + s);
  try {
    Json config = parse_json(kBase, "base");
    config["cluster"] = parse_json(in.document, "fuzz.json");
    const Experiment e = load_experiment_json(std::move(config), "configs", options, *components);
    const netsim::ClusterSpec& spec = e.points.front().cluster;
    const int ranks = spec.world_size();
    const std::unique_ptr<netsim::Topology> topology = netsim::make_topology(spec, "cluster.topology");
    if (topology->ranks() != ranks) fail("ranks " + std::to_string(topology->ranks()));
    if (ranks < 2) return 0;
    const auto& links = topology->links();
    for (int i = 0; i < kRoutes; ++i) {
      // Pairs from the input's bytes: the same input takes the same routes.
      const int src =
          static_cast<int>((i < static_cast<int>(size) ? data[i] * 131u : 0u) + i * 7919u) % ranks;
      int dst = static_cast<int>((size ? data[size - 1 - static_cast<size_t>(i) % size] * 257u : 0u) +
                                 i * 104729u) %
                ranks;
      if (dst == src) dst = (src + 1) % ranks;
      const netsim::Route r = topology->route(src, dst);
      if (r.links.size() < 2 || r.links[0] != 2 * src || r.links[r.links.size() - 1] != 2 * dst + 1)
        fail("route " + std::to_string(src) + " -> " + std::to_string(dst) +
             " does not join their devices");
      Time sum;
      for (const int32_t l : r.links) {
        if (l < 0 || static_cast<size_t>(l) >= links.size())
          fail("route uses link " + std::to_string(l));
        sum += links[static_cast<size_t>(l)].latency;
      }
      if (r.latency != sum.scaled(spec.factors.latency_factor))
        fail("route latency " + std::to_string(r.latency.nanoseconds()) + " ns, links sum to " +
             std::to_string(sum.nanoseconds()) + " ns");
    }
  } catch (const ConfigError& err) {
    const std::string m = err.what();
    if (m.empty() || m.find('\n') != std::string::npos || m.size() > kMaxMessageChars + 40)
      fail("config error not one line of readable length: " + m.substr(0, 300));
  }
  return 0;
}
