#include "netsim/topologies/star.h"

namespace bagua::netsim {

ParamSchema Star::schema() {
  return {};
}

Star::Star(const Params&, const ClusterSpec& spec, const std::string&) : Topology(spec) {
  nic_base_ = static_cast<int>(links().size());
  for (int h = 0; h < spec.hosts; ++h)
    add_cable("host" + std::to_string(h) + ".nic", "host" + std::to_string(h), "switch", spec.nic);
  // The CPU hosts on the same switch, their NIC links right after the worker hosts': host hosts + c's
  // up link is nic_base_ + 2 (hosts + c), as route_between reads it.
  place_cpu_hosts("switch");
}

void Star::route_between(int src, int dst, Route& route) const {
  const int src_host = host_of(src);
  const int dst_host = host_of(dst);
  if (src_host == dst_host) return;
  route.links.push_back(nic_base_ + 2 * src_host);
  route.links.push_back(nic_base_ + 2 * dst_host + 1);
}

}  // namespace bagua::netsim
