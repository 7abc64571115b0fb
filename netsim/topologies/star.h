// One non-blocking switch: every host's NIC to it.
//
// Terms (netsim/topology.h for device link, NIC link, route):
//   switch   the one non-blocking switch every NIC link ends at
//
// Links, in this order: every rank's device link (host<h>.dev<d>.up / .down, then the CPU hosts'
// cpu<c>.dev0), then every host's NIC link (host<h>.nic.up / .down, then cpu<c>.nic: the CPU hosts on
// the same switch, ClusterSpec::cpu_hosts). Routes:
//   same host:   src.dev.up, dst.dev.down                                   (2 links)
//   other host:  src.dev.up, srcHost.nic.up, dstHost.nic.down, dst.dev.down  (4 links)
#pragma once

#include "netsim/topology.h"

namespace bagua::netsim {

class Star final : public Topology {
 public:
  Star(const Params& params, const ClusterSpec& spec, const std::string& path);
  static ParamSchema schema();

 private:
  void route_between(int src, int dst, Route& route) const override;

  int nic_base_;  // host h's NIC link up is nic_base_ + 2h, down one more
};

}  // namespace bagua::netsim
