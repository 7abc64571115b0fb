// A two-level leaf-spine fabric: hosts_per_leaf hosts under each leaf switch, every leaf's uplink to
// one non-blocking spine.
//
// Terms (netsim/topology.h for device link, NIC link, route):
//   leaf              a switch under which hosts_per_leaf consecutive hosts hang: host h is on leaf
//                     h / hosts_per_leaf
//   spine             the non-blocking switch every leaf's uplink ends at
//   leaf link         leaf <-> spine, leaf<k>.up / .down; its bandwidth is spine_bandwidth, or else
//                     hosts_per_leaf x NIC bandwidth / oversubscription; its latency spine_latency,
//                     or else the NIC's (one more cable of the same kind)
//   oversubscription  what a leaf's hosts can send over what its uplink carries
//
// Links, in this order: device links, NIC links (host<h>.nic), leaf links. Routes:
//   same host:     src.dev.up, dst.dev.down                                             (2 links)
//   same leaf:     src.dev.up, srcHost.nic.up, dstHost.nic.down, dst.dev.down            (4 links)
//   across leaves: src.dev.up, srcHost.nic.up, srcLeaf.up, dstLeaf.down, dstHost.nic.down,
//                  dst.dev.down                                                         (6 links)
#pragma once

#include "netsim/topology.h"

namespace bagua::netsim {

class LeafSpine final : public Topology {
 public:
  LeafSpine(const Params& params, const ClusterSpec& spec, const std::string& path);
  static ParamSchema schema();

 private:
  void route_between(int src, int dst, Route& route) const override;

  int hosts_per_leaf_;
  int nic_base_;   // host h's NIC link up is nic_base_ + 2h, down one more
  int leaf_base_;  // leaf k's link up is leaf_base_ + 2k, down one more
};

}  // namespace bagua::netsim
