#include "netsim/topologies/leaf_spine.h"

namespace bagua::netsim {

ParamSchema LeafSpine::schema() {
  ParamSchema s;
  s.add_int("hosts_per_leaf", 1, "hosts under one leaf switch (must divide hosts)", 1).required();
  s.add_double("oversubscription", 1.0, "a leaf's NIC bandwidth over its uplink's", 1.0);
  s.add_bandwidth("spine_bandwidth",
                  "each leaf's uplink (default hosts_per_leaf x NIC bandwidth / oversubscription)");
  s.add_time("spine_latency", "each leaf's uplink (default the NIC's)");
  return s;
}

LeafSpine::LeafSpine(const Params& params, const ClusterSpec& spec, const std::string& path)
    : Topology(spec), hosts_per_leaf_(static_cast<int>(params.get_int("hosts_per_leaf"))) {
  if (spec.hosts % hosts_per_leaf_ != 0)
    topology_error(path, "hosts_per_leaf", "divide hosts (" + std::to_string(spec.hosts) + ")",
                   std::to_string(hosts_per_leaf_));
  const double oversubscription = params.get_double("oversubscription");
  LinkSpec uplink;
  uplink.bandwidth =
      params.has("spine_bandwidth")
          ? Bandwidth::bytes_per_second(params.get_double("spine_bandwidth"))
          : spec.nic.bandwidth * (static_cast<double>(hosts_per_leaf_) / oversubscription);
  uplink.latency =
      params.has("spine_latency") ? Time::ns(params.get_int("spine_latency")) : spec.nic.latency;
  nic_base_ = static_cast<int>(links().size());
  for (int h = 0; h < spec.hosts; ++h)
    add_cable("host" + std::to_string(h) + ".nic", "host" + std::to_string(h),
              "leaf" + std::to_string(h / hosts_per_leaf_), spec.nic);
  leaf_base_ = static_cast<int>(links().size());
  for (int k = 0; k < spec.hosts / hosts_per_leaf_; ++k)
    add_cable("leaf" + std::to_string(k), "leaf" + std::to_string(k), "spine", uplink);
}

void LeafSpine::route_between(int src, int dst, Route& route) const {
  const int src_host = host_of(src);
  const int dst_host = host_of(dst);
  if (src_host == dst_host) return;
  route.links.push_back(nic_base_ + 2 * src_host);
  const int src_leaf = src_host / hosts_per_leaf_;
  const int dst_leaf = dst_host / hosts_per_leaf_;
  if (src_leaf != dst_leaf) {
    route.links.push_back(leaf_base_ + 2 * src_leaf);
    route.links.push_back(leaf_base_ + 2 * dst_leaf + 1);
  }
  route.links.push_back(nic_base_ + 2 * dst_host + 1);
}

}  // namespace bagua::netsim
