// Every topology of the simulator, by name: one line each (docs/writing_a_topology.md).
#include "netsim/topologies/fat_tree.h"
#include "netsim/topologies/leaf_spine.h"
#include "netsim/topologies/rail_optimized.h"
#include "netsim/topologies/star.h"
#include "netsim/topologies/torus.h"

namespace bagua::netsim {

namespace {

// The factory of topology T: its constructor, given the checked parameters.
template <class T>
TopologyRegistry::Factory factory() {
  return [](const Params& p, const ClusterSpec& spec, const std::string& path) {
    return std::make_unique<T>(p, spec, path);
  };
}

}  // namespace

void register_topologies(TopologyRegistry& registry) {
  registry.add("star", "every host's NIC to one non-blocking switch", Star::schema(), factory<Star>());
  registry.add("leaf_spine", "hosts_per_leaf hosts under each leaf switch, leaves under one spine",
               LeafSpine::schema(), factory<LeafSpine>());
  registry.add("fat_tree", "k-ary fat tree (Al-Fares et al. 2008), D-mod-k routing", FatTree::schema(),
               factory<FatTree>());
  registry.add("rail_optimized",
               "one NIC per device, rail d of every host on leaf d, a spine above (DGX SuperPOD)",
               RailOptimized::schema(), factory<RailOptimized>());
  registry.add("torus", "2D or 3D torus, hosts at the nodes, dimension-order routing", Torus::schema(),
               factory<Torus>());
}

}  // namespace bagua::netsim
