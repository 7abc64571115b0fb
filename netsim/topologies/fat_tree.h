// A k-ary fat tree (Al-Fares, Loukissas, Vahdat, "A Scalable, Commodity Data Center Network
// Architecture", SIGCOMM 2008, Sec. 3): k pods, each of k/2 edge and k/2 aggregation switches, and
// (k/2)^2 core switches; every switch has k ports. Up to k^3 / 4 hosts.
//
// Terms (netsim/topology.h for device link, NIC link, route):
//   half              k / 2: hosts per edge switch, edge and aggregation switches per pod, and the
//                     cores each aggregation switch reaches
//   pod, edge, port   host h sits in pod h / half^2, under edge switch (h / half) % half of it, at port
//                     h % half of that edge switch
//   agg               aggregation switch a of a pod; edge link pod<p>.edge<e>.agg<a>.up / .down joins
//                     every edge switch to every agg of its pod
//   core              core c = a * half + j, j < half, reached from agg a of every pod; core link
//                     pod<p>.agg<a>.core<c>.up / .down
//   oversubscription  at the edge: an edge link carries NIC bandwidth / oversubscription (an edge
//                     switch's half hosts over its half uplinks); core links carry NIC bandwidth.
//                     Every switch-to-switch link has the NIC's latency (one cable of the same kind).
//
// Routing is deterministic destination-mod-k (D-mod-k, Zahavi et al. 2010, the static form of
// Al-Fares' two-level tables): towards host dst, traffic leaves an edge switch for agg
// a = port(dst) and leaves an agg for core a * half + edge(dst); the way down is then unique. So every
// destination of a pod arrives over its own core and its own agg-edge link. Routes:
//   same host:   src.dev.up, dst.dev.down                                                (2 links)
//   same edge:   src.dev.up, srcHost.nic.up, dstHost.nic.down, dst.dev.down               (4 links)
//   same pod:    ... srcHost.nic.up, src edge-agg a up, dst edge-agg a down, dstHost.nic.down ... (6)
//   other pod:   ... srcHost.nic.up, src edge-agg a up, src agg a-core c up, dst agg a-core c down,
//                dst edge-agg a down, dstHost.nic.down ...                              (8 links)
#pragma once

#include "netsim/topology.h"

namespace bagua::netsim {

class FatTree final : public Topology {
 public:
  FatTree(const Params& params, const ClusterSpec& spec, const std::string& path);
  static ParamSchema schema();

 private:
  void route_between(int src, int dst, Route& route) const override;
  int edge_link(int pod, int edge, int agg) const {
    return edge_base_ + 2 * ((pod * half_ + edge) * half_ + agg);
  }
  int core_link(int pod, int agg, int j) const {
    return core_base_ + 2 * ((pod * half_ + agg) * half_ + j);
  }

  int half_;
  int nic_base_;   // host h's NIC link up is nic_base_ + 2h, down one more
  int edge_base_;  // edge links: by pod, edge, agg
  int core_base_;  // core links: by pod, agg, j
};

}  // namespace bagua::netsim
