// The cluster's links and the route between any two ranks.
//
// Terms:
//   device      one rank's accelerator; rank r is device r % devices_per_host of host r /
//   devices_per_host link        one direction of a full-duplex cable: a full-duplex cable is two
//   independent links
//               ("up" towards the switches, "down" away from them)
//   device link device <-> host fabric (NVLink-like): host<h>.dev<d>.up / .down
//   NIC link    host <-> its switch: host<h>.nic.up / .down
//   leaf link   leaf-spine only, leaf switch <-> spine: leaf<k>.up / .down (hosts_per_leaf hosts per
//   leaf) route       the links a message crosses, and its latency: the sum of their latencies times
//   the
//               latency factor (rounded once, to the nearest nanosecond)
//
// Switches are non-blocking (a star's single switch and the spine): only the links above can be
// bottlenecks. Routes:
//   same host:        src.dev.up, dst.dev.down                           (intra-host fabric)
//   same leaf / star: src.dev.up, srcHost.nic.up, dstHost.nic.down, dst.dev.down
//   across leaves:    src.dev.up, srcHost.nic.up, srcLeaf.up, dstLeaf.down, dstHost.nic.down,
//   dst.dev.down
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "netsim/simulation.h"

namespace bagua::netsim {

struct Link {
  std::string name;
  Bandwidth bandwidth;  // as configured
  double capacity;      // bytes per second a flow set may use: bandwidth * bandwidth efficiency
  Time latency;
};

struct Route {
  static constexpr int kMaxLinks = 6;
  std::array<int32_t, kMaxLinks> links{};
  int count = 0;
  Time latency;
};

class Topology {
 public:
  // `spec` must be valid (see validate()).
  explicit Topology(const ClusterSpec& spec);

  int ranks() const { return ranks_; }
  int host_of(int rank) const { return rank / devices_per_host_; }
  const std::vector<Link>& links() const { return links_; }
  // The route from rank `src` to rank `dst` (src != dst).
  Route route(int src, int dst) const;

 private:
  int device_up(int rank) const { return 2 * rank; }
  int device_down(int rank) const { return 2 * rank + 1; }
  int nic_up(int host) const { return nic_base_ + 2 * host; }
  int nic_down(int host) const { return nic_base_ + 2 * host + 1; }
  int leaf_up(int leaf) const { return leaf_base_ + 2 * leaf; }
  int leaf_down(int leaf) const { return leaf_base_ + 2 * leaf + 1; }

  int ranks_;
  int devices_per_host_;
  int hosts_per_leaf_;  // 0: star
  double latency_factor_;
  int nic_base_;
  int leaf_base_;
  std::vector<Link> links_;
  // The latency of a route of 2, 4 or 6 links, by its number of links: every device link has the same
  // latency, and so has every NIC link and every leaf link, so routes of one length sum the same.
  std::array<Time, Route::kMaxLinks + 1> latency_by_count_{};
};

}  // namespace bagua::netsim
