// A 2D or 3D torus: x * y * z routers (z = 1: 2D) on a grid, each joined to its neighbours along every
// dimension, the ends of each row joined round (wraparound); host h attached to router h.
//
// Terms (netsim/topology.h for device link, NIC link, route):
//   node       a router at (i, j, l), index n = i + x * (j + y * l); named x<i>y<j> (2D) or
//              x<i>y<j>z<l> (3D); host h (h < x * y * z) hangs on node h by its NIC link
//   hop link   node n to its neighbour one step along a dimension, <node>.x+ / .x- (and y, z): its
//              bandwidth and latency are the NIC's (one cable of the same kind). A dimension of size 1
//              has no hop links; of size 2, only the "+" links (the two nodes are joined once)
//   delta      along one dimension of size s, (to - from) mod s: the route goes delta steps "+" when
//              delta <= s / 2 (ties go "+"), else s - delta steps "-": the shorter way round
//
// Routing is dimension order (x, then y, then z), deterministic. Routes:
//   same host:  src.dev.up, dst.dev.down                                          (2 links)
//   other host: src.dev.up, srcHost.nic.up, the hop links along x, y, z, dstHost.nic.down,
//               dst.dev.down                                                      (4 + hops links)
#pragma once

#include <array>
#include <vector>

#include "netsim/topology.h"

namespace bagua::netsim {

class Torus final : public Topology {
 public:
  Torus(const Params& params, const ClusterSpec& spec, const std::string& path);
  static ParamSchema schema();

 private:
  void route_between(int src, int dst, Route& route) const override;
  // The hop link from node `node` one step along dimension `dim` in direction `dir` (0: +, 1: -).
  int32_t hop(int node, int dim, int dir) const {
    return hop_[static_cast<size_t>((node * 3 + dim) * 2 + dir)];
  }

  std::array<int, 3> size_{};    // x, y, z
  std::array<int, 3> stride_{};  // node index step per dimension: 1, x, x * y
  int nic_base_;                 // host h's NIC link up is nic_base_ + 2h, down one more
  std::vector<int32_t> hop_;     // by (node, dimension, direction); -1 where there is none
};

}  // namespace bagua::netsim
