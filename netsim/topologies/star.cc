#include "netsim/topologies/star.h"

namespace bagua::netsim {

ParamSchema Star::schema() {
  return {};
}

Star::Star(const Params&, const ClusterSpec& spec, const std::string&) : Topology(spec) {
  nic_base_ = static_cast<int>(links().size());
  for (int h = 0; h < spec.hosts; ++h)
    add_cable("host" + std::to_string(h) + ".nic", "host" + std::to_string(h), "switch", spec.nic);
}

void Star::route_between(int src, int dst, Route& route) const {
  const int src_host = host_of(src);
  const int dst_host = host_of(dst);
  if (src_host == dst_host) return;
  route.links.push_back(nic_base_ + 2 * src_host);
  route.links.push_back(nic_base_ + 2 * dst_host + 1);
}

}  // namespace bagua::netsim
