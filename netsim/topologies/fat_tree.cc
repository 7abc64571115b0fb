#include "netsim/topologies/fat_tree.h"

namespace bagua::netsim {

ParamSchema FatTree::schema() {
  ParamSchema s;
  s.add_int("k", 2, "switch ports (even): k pods of k/2 edge and k/2 agg switches, (k/2)^2 cores", 2,
            256)
      .required();
  s.add_double("oversubscription", 1.0, "at the edge: NIC bandwidth over an edge uplink's", 1.0);
  return s;
}

FatTree::FatTree(const Params& params, const ClusterSpec& spec, const std::string& path)
    : Topology(spec) {
  const int k = static_cast<int>(params.get_int("k"));
  if (k % 2 != 0) topology_error(path, "k", "be even", std::to_string(k));
  half_ = k / 2;
  const int64_t capacity = int64_t{k} * k * k / 4;
  if (spec.hosts > capacity)
    topology_error(path, "k", "hold the " + std::to_string(spec.hosts) + " hosts (k^3 / 4 >= hosts)",
                   std::to_string(k) + " (" + std::to_string(capacity) + " hosts)");
  const LinkSpec edge_uplink{spec.nic.bandwidth * (1.0 / params.get_double("oversubscription")),
                             spec.nic.latency};
  nic_base_ = static_cast<int>(links().size());
  auto edge = [&](int p, int e) { return "pod" + std::to_string(p) + ".edge" + std::to_string(e); };
  auto agg = [&](int p, int a) { return "pod" + std::to_string(p) + ".agg" + std::to_string(a); };
  for (int h = 0; h < spec.hosts; ++h)
    add_cable("host" + std::to_string(h) + ".nic", "host" + std::to_string(h),
              edge(h / (half_ * half_), (h / half_) % half_), spec.nic);
  edge_base_ = static_cast<int>(links().size());
  for (int p = 0; p < k; ++p)
    for (int e = 0; e < half_; ++e)
      for (int a = 0; a < half_; ++a)
        add_cable(edge(p, e) + ".agg" + std::to_string(a), edge(p, e), agg(p, a), edge_uplink);
  core_base_ = static_cast<int>(links().size());
  for (int p = 0; p < k; ++p)
    for (int a = 0; a < half_; ++a)
      for (int j = 0; j < half_; ++j) {
        const std::string core = "core" + std::to_string(a * half_ + j);
        add_cable(agg(p, a) + "." + core, agg(p, a), core, spec.nic);
      }
}

void FatTree::route_between(int src, int dst, Route& route) const {
  const int src_host = host_of(src);
  const int dst_host = host_of(dst);
  if (src_host == dst_host) return;
  const int per_pod = half_ * half_;
  const int src_pod = src_host / per_pod, dst_pod = dst_host / per_pod;
  const int src_edge = (src_host / half_) % half_, dst_edge = (dst_host / half_) % half_;
  route.links.push_back(nic_base_ + 2 * src_host);
  if (src_pod != dst_pod || src_edge != dst_edge) {
    // D-mod-k: the agg by the destination's port, the core by its edge switch.
    const int agg = dst_host % half_;
    route.links.push_back(edge_link(src_pod, src_edge, agg));
    if (src_pod != dst_pod) {
      route.links.push_back(core_link(src_pod, agg, dst_edge));
      route.links.push_back(core_link(dst_pod, agg, dst_edge) + 1);
    }
    route.links.push_back(edge_link(dst_pod, dst_edge, agg) + 1);
  }
  route.links.push_back(nic_base_ + 2 * dst_host + 1);
}

}  // namespace bagua::netsim
