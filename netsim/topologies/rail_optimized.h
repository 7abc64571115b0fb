// A rail-optimized GPU cluster: one NIC per device, device d of every host on rail d's leaf switch,
// the leaves joined by a non-blocking spine; inside a host, an NVSwitch-like non-blocking fabric. This
// is the layout of the NVIDIA DGX SuperPOD reference architectures (DGX SuperPOD with DGX H100 systems,
// Reference Architecture RA-11333-001, "Compute Fabric": a scalable unit of 32 DGX H100 systems, each
// with eight 400 Gbps ConnectX-7 compute NICs, NIC i of every system cabled to leaf switch i of the
// unit; the DGX A100 SuperPOD reference architecture does the same with 20 DGX A100 per unit and
// 200 Gbps HDR NICs).
//
// Terms (netsim/topology.h for device link, route):
//   rail              the devices of one index d across hosts, and their NICs
//   unit              hosts_per_leaf consecutive hosts (a scalable unit): host h is in unit
//                     h / hosts_per_leaf; the last unit may be partial
//   rail NIC link     device d's own NIC to its rail leaf, host<h>.nic<d>.up / .down
//   rail leaf         one switch per (unit, rail); its uplink to the spine unit<u>.rail<d>.up / .down
//                     carries hosts_per_leaf x NIC bandwidth / oversubscription, with the NIC's latency
//   device link       the device's port into the host fabric (NVLink to NVSwitch) and, for traffic
//                     leaving the host, towards its own NIC
//
// NVIDIA's PXN (an NVLink hop to the peer rail's device before the network) is not modelled: a
// message between rails crosses the spine. Routes:
//   same host:                    src.dev.up, dst.dev.down                             (2 links)
//   same rail, same unit:         src.dev.up, src.nic<d>.up, dst.nic<d>.down, dst.dev.down (4 links)
//   other rail or other unit:     src.dev.up, src.nic<ds>.up, src rail leaf up, dst rail leaf down,
//                                 dst.nic<dd>.down, dst.dev.down                       (6 links)
#pragma once

#include "netsim/topology.h"

namespace bagua::netsim {

class RailOptimized final : public Topology {
 public:
  RailOptimized(const Params& params, const ClusterSpec& spec, const std::string& path);
  static ParamSchema schema();

 private:
  void route_between(int src, int dst, Route& route) const override;
  // The NIC link up of rank r (its device's own NIC); down is one more.
  int nic_up(int rank) const { return nic_base_ + 2 * rank; }
  int leaf_up(int unit, int rail) const { return leaf_base_ + 2 * (unit * devices_per_host() + rail); }

  int hosts_per_leaf_;
  int nic_base_;
  int leaf_base_;
};

}  // namespace bagua::netsim
