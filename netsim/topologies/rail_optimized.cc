#include "netsim/topologies/rail_optimized.h"

namespace bagua::netsim {

ParamSchema RailOptimized::schema() {
  ParamSchema s;
  // DGX SuperPOD with DGX H100 systems, Reference Architecture: 32 systems per scalable unit.
  s.add_int("hosts_per_leaf", 32, "hosts per scalable unit: every rail leaf holds one NIC of each", 1);
  s.add_double("oversubscription", 1.0, "a rail leaf's NIC bandwidth over its uplink's", 1.0);
  return s;
}

RailOptimized::RailOptimized(const Params& params, const ClusterSpec& spec, const std::string&)
    : Topology(spec), hosts_per_leaf_(static_cast<int>(params.get_int("hosts_per_leaf"))) {
  const int units = (spec.hosts + hosts_per_leaf_ - 1) / hosts_per_leaf_;
  const LinkSpec uplink{spec.nic.bandwidth * (static_cast<double>(hosts_per_leaf_) /
                                              params.get_double("oversubscription")),
                        spec.nic.latency};
  nic_base_ = static_cast<int>(links().size());
  auto leaf = [](int unit, int rail) {
    return "unit" + std::to_string(unit) + ".rail" + std::to_string(rail);
  };
  for (int r = 0; r < ranks(); ++r) {
    const std::string host = "host" + std::to_string(host_of(r));
    const int rail = r % devices_per_host();
    add_cable(host + ".nic" + std::to_string(rail), host, leaf(host_of(r) / hosts_per_leaf_, rail),
              spec.nic);
  }
  leaf_base_ = static_cast<int>(links().size());
  for (int u = 0; u < units; ++u)
    for (int d = 0; d < devices_per_host(); ++d)
      add_cable(leaf(u, d), leaf(u, d), "spine", uplink);
}

void RailOptimized::route_between(int src, int dst, Route& route) const {
  const int src_host = host_of(src);
  const int dst_host = host_of(dst);
  if (src_host == dst_host) return;  // the NVSwitch fabric
  const int src_rail = src % devices_per_host(), dst_rail = dst % devices_per_host();
  const int src_unit = src_host / hosts_per_leaf_, dst_unit = dst_host / hosts_per_leaf_;
  route.links.push_back(nic_up(src));
  if (src_rail != dst_rail || src_unit != dst_unit) {
    route.links.push_back(leaf_up(src_unit, src_rail));
    route.links.push_back(leaf_up(dst_unit, dst_rail) + 1);
  }
  route.links.push_back(nic_up(dst) + 1);
}

}  // namespace bagua::netsim
