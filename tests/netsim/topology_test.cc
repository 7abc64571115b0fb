#include "netsim/topology.h"

#include <gtest/gtest.h>

namespace bagua::netsim {
namespace {

TEST(Topology, ARouteLatencyIsTheSumOfItsLinksLatenciesTimesTheFactor) {
  // Leaf-spine with three different, odd latencies and a factor that rounds: every route's latency is
  // the sum over its own links (as listed by links()), scaled once.
  ClusterSpec spec;
  spec.hosts = 6;
  spec.devices_per_host = 3;
  spec.intra_host = {Bandwidth::gigabytes_per_second(10), Time::ns(333)};
  spec.nic = {Bandwidth::gigabytes_per_second(1), Time::ns(1'001)};
  spec.topology = TopologyKind::kLeafSpine;
  spec.hosts_per_leaf = 2;
  spec.spine = {Bandwidth::gigabytes_per_second(2), Time::ns(777)};
  spec.factors.latency_factor = 1.37;
  const Topology topology(spec);
  int lengths[7] = {};
  for (int src = 0; src < spec.world_size(); ++src)
    for (int dst = 0; dst < spec.world_size(); ++dst) {
      if (src == dst) continue;
      const Route r = topology.route(src, dst);
      Time sum;
      for (int i = 0; i < r.count; ++i)
        sum += topology.links()[static_cast<size_t>(r.links[static_cast<size_t>(i)])].latency;
      EXPECT_EQ(r.latency, sum.scaled(1.37)) << src << " -> " << dst;
      ++lengths[r.count];
    }
  // Same host: 6 hosts x 3 x 2 ordered pairs; same leaf, other host: 6 x 3 x 3; other leaf: 18 x 12.
  EXPECT_EQ(lengths[2], 36);
  EXPECT_EQ(lengths[4], 54);
  EXPECT_EQ(lengths[6], 216);
}

}  // namespace
}  // namespace bagua::netsim
