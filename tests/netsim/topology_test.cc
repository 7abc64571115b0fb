#include "netsim/topology.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>

#include "core/transport.h"
#include "tests/netsim/support.h"

namespace bagua::netsim {
namespace {

// One device per host unless changed; device links 10 GB/s, 100 ns; NICs 1 GB/s, 500 ns.
ClusterSpec cluster(int hosts, TopologySpec topology, int devices_per_host = 1) {
  ClusterSpec spec;
  spec.hosts = hosts;
  spec.devices_per_host = devices_per_host;
  spec.intra_host = {Bandwidth::gigabytes_per_second(10), Time::ns(100)};
  spec.nic = {Bandwidth::gigabytes_per_second(1), Time::ns(500)};
  spec.topology = std::move(topology);
  return spec;
}

// The names of the links of the route from `src` to `dst`.
std::vector<std::string> route_names(const Topology& t, int src, int dst) {
  std::vector<std::string> names;
  for (const int32_t link : t.route(src, dst).links)
    names.push_back(t.links()[static_cast<size_t>(link)].name);
  return names;
}

std::string error_of(const ClusterSpec& spec) {
  try {
    validate(spec, "cluster.");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

using Names = std::vector<std::string>;

TEST(Topology, ARouteLatencyIsTheSumOfItsLinksLatenciesTimesTheFactor) {
  // Leaf-spine with three different, odd latencies and a factor that rounds: every route's latency is
  // the sum over its own links (as listed by links()), scaled once.
  ClusterSpec spec = cluster(
      6,
      {"leaf_spine",
       {{"hosts_per_leaf", int64_t{2}}, {"spine_bandwidth", 2e9}, {"spine_latency", int64_t{777}}}},
      3);
  spec.intra_host.latency = Time::ns(333);
  spec.nic.latency = Time::ns(1'001);
  spec.factors.latency_factor = 1.37;
  const auto topology = make_topology(spec);
  std::map<int, int> lengths;
  for (int src = 0; src < spec.world_size(); ++src)
    for (int dst = 0; dst < spec.world_size(); ++dst) {
      if (src == dst) continue;
      const Route r = topology->route(src, dst);
      Time sum;
      for (const int32_t link : r.links)
        sum += topology->links()[static_cast<size_t>(link)].latency;
      EXPECT_EQ(r.latency, sum.scaled(1.37)) << src << " -> " << dst;
      ++lengths[r.links.size()];
    }
  // Same host: 6 hosts x 3 x 2 ordered pairs; same leaf, other host: 6 x 3 x 3; other leaf: 18 x 12.
  EXPECT_EQ(lengths, (std::map<int, int>{{2, 36}, {4, 54}, {6, 216}}));
  // Hand-summed: across leaves, (333 + 1001 + 777 + 777 + 1001 + 333) x 1.37 = 4222 x 1.37 = 5784.14.
  EXPECT_EQ(topology->route(0, 17).latency, Time::ns(5784));
}

TEST(Topology, ARouteCarriesTheCapacityOfItsSlowestLink) {
  // Leaf-spine, device links 10 GB/s, NICs 1 GB/s, spine links 0.25 GB/s: a route within a
  // host is as fast as its device links (1e10 bytes/s), one between hosts of a leaf as its NICs
  // (1e9), one across leaves as the spine (2.5e8). Every route: the minimum over its own links.
  const ClusterSpec spec =
      cluster(4, {"leaf_spine", {{"hosts_per_leaf", int64_t{2}}, {"spine_bandwidth", 2.5e8}}}, 2);
  const auto topology = make_topology(spec);
  for (int src = 0; src < spec.world_size(); ++src)
    for (int dst = 0; dst < spec.world_size(); ++dst) {
      if (src == dst) continue;
      const Route r = topology->route(src, dst);
      double slowest = std::numeric_limits<double>::infinity();
      for (const int32_t link : r.links)
        slowest =
            std::min(slowest, topology->links()[static_cast<size_t>(link)].capacity.bytes_per_second());
      EXPECT_EQ(r.slowest, slowest) << src << " -> " << dst;
    }
  EXPECT_EQ(topology->route(0, 1).slowest, 1e10);   // devices 0 and 1: host 0
  EXPECT_EQ(topology->route(0, 2).slowest, 1e9);    // hosts 0 and 1: leaf 0
  EXPECT_EQ(topology->route(0, 4).slowest, 2.5e8);  // hosts 0 and 2: leaves 0 and 1
}

TEST(Star, LinksAndRoutes) {
  // 2 hosts x 2 devices: 4 device cables and 2 NIC cables, 12 links.
  const auto t = make_topology(cluster(2, {"star", {}}, 2));
  EXPECT_EQ(t->links().size(), 12u);
  EXPECT_EQ(route_names(*t, 0, 1), (Names{"host0.dev0.up", "host0.dev1.down"}));
  EXPECT_EQ(route_names(*t, 0, 3),
            (Names{"host0.dev0.up", "host0.nic.up", "host1.nic.down", "host1.dev1.down"}));
  // 100 + 500 + 500 + 100 ns.
  EXPECT_EQ(t->route(0, 3).latency, Time::ns(1'200));
}

TEST(LeafSpine, LinksRoutesAndTheDerivedUplink) {
  // 4 hosts, 2 per leaf, oversubscription 2: uplink 2 x 1 GB/s / 2 = 1 GB/s with the NIC's latency.
  // Links: 4 device cables, 4 NIC cables, 2 leaf cables = 20.
  const auto t = make_topology(
      cluster(4, {"leaf_spine", {{"hosts_per_leaf", int64_t{2}}, {"oversubscription", 2.0}}}));
  ASSERT_EQ(t->links().size(), 20u);
  EXPECT_EQ(t->links()[16].name, "leaf0.up");
  EXPECT_EQ(t->links()[16].bandwidth, Bandwidth::gigabytes_per_second(1));
  EXPECT_EQ(t->links()[16].latency, Time::ns(500));
  EXPECT_EQ(route_names(*t, 0, 1),
            (Names{"host0.dev0.up", "host0.nic.up", "host1.nic.down", "host1.dev0.down"}));
  EXPECT_EQ(route_names(*t, 1, 2), (Names{"host1.dev0.up", "host1.nic.up", "leaf0.up", "leaf1.down",
                                          "host2.nic.down", "host2.dev0.down"}));
  // 100 + 4 x 500 + 100.
  EXPECT_EQ(t->route(1, 2).latency, Time::ns(2'200));
}

TEST(FatTree, LinksAndDModKRoutes) {
  // k = 4: 4 pods of 2 edge and 2 agg switches, 4 cores; up to 16 hosts. Links: 16 device cables,
  // 16 NIC cables, 4 x 2 x 2 edge cables, 4 x 2 x 2 core cables: 64 cables, 128 links.
  const auto t = make_topology(cluster(16, {"fat_tree", {{"k", int64_t{4}}}}));
  EXPECT_EQ(t->links().size(), 128u);
  // Host 0 (pod 0, edge 0) -> host 1 (same edge): 4 links.
  EXPECT_EQ(route_names(*t, 0, 1),
            (Names{"host0.dev0.up", "host0.nic.up", "host1.nic.down", "host1.dev0.down"}));
  // -> host 2 (pod 0, edge 1, port 0): agg = port 0; 6 links.
  EXPECT_EQ(route_names(*t, 0, 2),
            (Names{"host0.dev0.up", "host0.nic.up", "pod0.edge0.agg0.up", "pod0.edge1.agg0.down",
                   "host2.nic.down", "host2.dev0.down"}));
  // -> host 15 (pod 3, edge 1, port 1): agg 1, core 1 x 2 + edge 1 = 3; 8 links.
  EXPECT_EQ(
      route_names(*t, 0, 15),
      (Names{"host0.dev0.up", "host0.nic.up", "pod0.edge0.agg1.up", "pod0.agg1.core3.up",
             "pod3.agg1.core3.down", "pod3.edge1.agg1.down", "host15.nic.down", "host15.dev0.down"}));
  // 2 x 100 + 6 x 500 ns.
  EXPECT_EQ(t->route(0, 15).latency, Time::ns(3'200));
}

TEST(FatTree, ExactTimesWithOversubscriptionAtTheEdge) {
  // k = 4, oversubscription 2: edge links 0.5 GB/s, NICs and core links 1 GB/s. Cross-pod latency
  // 3200 ns (above). One 1 MB flow alone: 3200 + 1e6 / 5e8 s = 3200 + 2'000'000 ns.
  const ClusterSpec spec = cluster(16, {"fat_tree", {{"k", int64_t{4}}, {"oversubscription", 2.0}}});
  EXPECT_EQ(lone_transfer_time(spec, 0, 15, Bytes(1'000'000)), Time::ns(2'003'200));
  // Hosts 0 and 1 (pod 0, edge 0) send 1 MB at once to two hosts of pod 1. To hosts 4 and 5 (ports 0
  // and 1), D-mod-k picks aggs 0 and 1: no shared link, both at 5e8: 2'003'200 ns. To hosts 4 and 6
  // (both port 0), both take agg 0: pod0.edge0.agg0.up shared, 2.5e8 each: 3200 + 4'000'000 ns.
  auto finish = [&](int dst_of_1) {
    std::vector<Time> done(16);
    Simulation(spec).run([&](RankContext& ctx) {
      Transport& tr = ctx.transport();
      const int r = tr.rank();
      if (r == 0) tr.send(meta_bytes(1'000'000), 4, 0);
      if (r == 1) tr.send(meta_bytes(1'000'000), dst_of_1, 0);
      if (r == 4) tr.recv(meta_bytes(1'000'000), 0, 0);
      if (r == dst_of_1) tr.recv(meta_bytes(1'000'000), 1, 0);
      done[static_cast<size_t>(r)] = ctx.clock().now();
    });
    return std::vector<Time>{done[4], done[static_cast<size_t>(dst_of_1)]};
  };
  EXPECT_EQ(finish(5), (std::vector<Time>{Time::ns(2'003'200), Time::ns(2'003'200)}));
  EXPECT_EQ(finish(6), (std::vector<Time>{Time::ns(4'003'200), Time::ns(4'003'200)}));
}

TEST(FatTree, HostsMustFitAndKMustBeEven) {
  EXPECT_EQ(error_of(cluster(17, {"fat_tree", {{"k", int64_t{4}}}})),
            "cluster.topology.k: must hold the 17 hosts (k^3 / 4 >= hosts), got 4 (16 hosts)");
  EXPECT_EQ(error_of(cluster(4, {"fat_tree", {{"k", int64_t{5}}}})),
            "cluster.topology.k: must be even, got 5");
  EXPECT_EQ(error_of(cluster(4, {"fat_tree", {{"k", int64_t{4}}, {"fanout", int64_t{2}}}})),
            "cluster.topology.fanout: unknown parameter");
  EXPECT_EQ(error_of(cluster(4, {"fat_tree", {}})), "cluster.topology.k: missing (required)");
  // Fewer hosts than ports: the switches are all there, the hosts fill pod 0 first.
  EXPECT_EQ(make_topology(cluster(3, {"fat_tree", {{"k", int64_t{4}}}}))->links().size(),
            3u * 2 + 3 * 2 + 32 + 32);
}

TEST(RailOptimized, EachDeviceHasItsOwnNicOnItsRailsLeaf) {
  // 2 hosts x 2 devices, one unit: 4 device cables, 4 NIC cables, 2 rail-leaf uplinks = 20 links.
  const auto t = make_topology(cluster(2, {"rail_optimized", {}}, 2));
  EXPECT_EQ(t->links().size(), 20u);
  EXPECT_EQ(route_names(*t, 0, 1), (Names{"host0.dev0.up", "host0.dev1.down"}));  // NVSwitch
  EXPECT_EQ(route_names(*t, 0, 2),
            (Names{"host0.dev0.up", "host0.nic0.up", "host1.nic0.down", "host1.dev0.down"}));
  EXPECT_EQ(route_names(*t, 0, 3), (Names{"host0.dev0.up", "host0.nic0.up", "unit0.rail0.up",
                                          "unit0.rail1.down", "host1.nic1.down", "host1.dev1.down"}));
  // hosts_per_leaf 1: two units; the same rail in another unit crosses the spine.
  const auto two_units =
      make_topology(cluster(2, {"rail_optimized", {{"hosts_per_leaf", int64_t{1}}}}, 2));
  EXPECT_EQ(route_names(*two_units, 0, 2),
            (Names{"host0.dev0.up", "host0.nic0.up", "unit0.rail0.up", "unit1.rail0.down",
                   "host1.nic0.down", "host1.dev0.down"}));
}

TEST(RailOptimized, TwoRailsCarryTwoFlowsWithoutSharing) {
  // Ranks 0 and 1 (host 0) send 1 MB each to ranks 2 and 3 (host 1) at once. Each crosses its own
  // NIC: 100 + 500 + 500 + 100 ns + 1e6 / 1e9 s = 1'001'200 ns for both. On a star the two flows share
  // host 0's NIC: 5e8 each, 2'001'200 ns.
  auto finish = [](TopologySpec topology) {
    std::vector<Time> done(4);
    Simulation(cluster(2, std::move(topology), 2)).run([&](RankContext& ctx) {
      Transport& tr = ctx.transport();
      const int r = tr.rank();
      if (r < 2)
        tr.send(meta_bytes(1'000'000), r + 2, 0);
      else
        tr.recv(meta_bytes(1'000'000), r - 2, 0);
      done[static_cast<size_t>(r)] = ctx.clock().now();
    });
    return std::vector<Time>{done[2], done[3]};
  };
  EXPECT_EQ(finish({"rail_optimized", {}}), (std::vector<Time>(2, Time::ns(1'001'200))));
  EXPECT_EQ(finish({"star", {}}), (std::vector<Time>(2, Time::ns(2'001'200))));
}

TEST(Torus, DimensionOrderRoutesTakeTheShorterWayRound) {
  // 3 x 3: 9 device cables, 9 NIC cables, 9 nodes x 2 dimensions x 2 directions hop links: 72 links.
  const auto t = make_topology(cluster(9, {"torus", {{"x", int64_t{3}}, {"y", int64_t{3}}}}));
  EXPECT_EQ(t->links().size(), 72u);
  // Host 0 at (0,0) -> host 8 at (2,2): along x delta 2 > 3/2, so one step "-" (wraparound) to
  // (2,0); along y the same to (2,2).
  EXPECT_EQ(route_names(*t, 0, 8), (Names{"host0.dev0.up", "host0.nic.up", "x0y0.x-", "x2y0.y-",
                                          "host8.nic.down", "host8.dev0.down"}));
  // Host 0 -> host 4 at (1,1): one step "+" along x, then along y.
  EXPECT_EQ(route_names(*t, 0, 4), (Names{"host0.dev0.up", "host0.nic.up", "x0y0.x+", "x1y0.y+",
                                          "host4.nic.down", "host4.dev0.down"}));
  // 2 x 100 + 4 x 500 ns.
  EXPECT_EQ(t->route(0, 8).latency, Time::ns(2'200));
  // 2 x 2 x 2: a dimension of 2 has "+" links only; host 0 -> host 7 at (1,1,1) in three hops.
  const auto cube =
      make_topology(cluster(8, {"torus", {{"x", int64_t{2}}, {"y", int64_t{2}}, {"z", int64_t{2}}}}));
  EXPECT_EQ(cube->links().size(), 8u * 2 + 8 * 2 + 8 * 3);
  EXPECT_EQ(route_names(*cube, 0, 7), (Names{"host0.dev0.up", "host0.nic.up", "x0y0z0.x+", "x1y0z0.y+",
                                             "x1y1z0.z+", "host7.nic.down", "host7.dev0.down"}));
}

TEST(Torus, ExactTimesAndCapacity) {
  // 4 x 1 ring: host 0 -> host 3 goes one hop "-" (delta 3 > 2): 100 + 3 x 500 + 100 = 1700 ns, plus
  // 1 MB at 1e9 B/s: 1'001'700 ns. Host 0 -> host 2 (delta 2, a tie, goes "+"): two hops, 2200 ns.
  const ClusterSpec ring = cluster(4, {"torus", {{"x", int64_t{4}}, {"y", int64_t{1}}}});
  EXPECT_EQ(lone_transfer_time(ring, 0, 3, Bytes(1'000'000)), Time::ns(1'001'700));
  EXPECT_EQ(lone_transfer_time(ring, 0, 2, Bytes(1'000'000)), Time::ns(1'002'200));
  EXPECT_EQ(error_of(cluster(5, {"torus", {{"x", int64_t{2}}, {"y", int64_t{2}}}})),
            "cluster.topology.x * y * z: must hold the 5 hosts, got 4");
  // A route longer than LinkList's inline capacity: a 64-node ring, 32 hops + 4 links.
  const auto wide = make_topology(cluster(64, {"torus", {{"x", int64_t{64}}, {"y", int64_t{1}}}}));
  const Route r = wide->route(0, 32);
  EXPECT_EQ(r.links.size(), 36);
  EXPECT_EQ(wide->links()[static_cast<size_t>(r.links[35])].name, "host32.dev0.down");
  EXPECT_EQ(r.latency, Time::ns(2 * 100 + 34 * 500));
}

// Small instances of the topologies of this tree (hosts, parameters), chosen to have every kind of route.
const std::map<std::string, std::pair<int, std::map<std::string, ParamValue>>>& small_instances() {
  static const std::map<std::string, std::pair<int, std::map<std::string, ParamValue>>> kInstances = {
      {"star", {3, {}}},
      {"leaf_spine", {4, {{"hosts_per_leaf", int64_t{2}}}}},
      {"fat_tree", {6, {{"k", int64_t{4}}}}},
      {"rail_optimized", {3, {{"hosts_per_leaf", int64_t{2}}}}},
      {"torus", {6, {{"x", int64_t{3}}, {"y", int64_t{2}}}}},
  };
  return kInstances;
}

// A topology added later, with no instance above: its required numbers set to 2 (or their minimum),
// and the most hosts of 6, 4, 3, 2 that it holds.
ClusterSpec small_instance(const TopologyRegistry::Entry& entry) {
  if (small_instances().count(entry.name)) {
    const auto& [hosts, params] = small_instances().at(entry.name);
    return cluster(hosts, {entry.name, params}, 2);
  }
  std::map<std::string, ParamValue> params;
  for (const ParamSpec& s : entry.schema.specs()) {
    if (s.presence != ParamPresence::kRequired) continue;
    const double two = std::max(2.0, s.min.value_or(2.0));
    if (s.type == ParamType::kInt)
      params[s.name] = static_cast<int64_t>(two);
    else if (s.type == ParamType::kDouble)
      params[s.name] = two;
    else
      ADD_FAILURE() << entry.name << "." << s.name << ": give a small instance in small_instances()";
  }
  for (const int hosts : {6, 4, 3, 2}) {
    const ClusterSpec spec = cluster(hosts, {entry.name, params}, 2);
    try {
      validate(spec);
      return spec;
    } catch (const ConfigError&) {
    }
  }
  ADD_FAILURE() << entry.name << " holds none of 6, 4, 3, 2 hosts: give a small instance";
  return cluster(1, {entry.name, params}, 2);
}

TEST(Topologies, EveryRegisteredTopologyRoutesEveryPairAlongConnectedLinks) {
  TopologyRegistry registry("topology");
  register_topologies(registry);
  ASSERT_FALSE(registry.entries().empty());
  for (const auto* entry : registry.entries()) {
    SCOPED_TRACE(entry->name);
    const ClusterSpec spec = small_instance(*entry);
    const int hosts = spec.hosts;
    const auto t = make_topology(spec);
    ASSERT_EQ(t->ranks(), hosts * 2);
    for (const Link& l : t->links()) {
      EXPECT_GT(l.bandwidth.bytes_per_second(), 0) << l.name;
      EXPECT_NE(l.from, l.to) << l.name;
    }
    for (int src = 0; src < t->ranks(); ++src)
      for (int dst = 0; dst < t->ranks(); ++dst) {
        if (src == dst) continue;
        const Route r = t->route(src, dst);
        ASSERT_GE(r.links.size(), 2);
        const std::string src_device =
            "host" + std::to_string(src / 2) + ".dev" + std::to_string(src % 2);
        const std::string dst_device =
            "host" + std::to_string(dst / 2) + ".dev" + std::to_string(dst % 2);
        const Link& first = t->links()[static_cast<size_t>(r.links[0])];
        const Link& last = t->links()[static_cast<size_t>(r.links[r.links.size() - 1])];
        EXPECT_EQ(first.name, src_device + ".up");
        EXPECT_EQ(first.from, src_device);
        EXPECT_EQ(last.name, dst_device + ".down");
        EXPECT_EQ(last.to, dst_device);
        for (int i = 1; i < r.links.size(); ++i)
          EXPECT_EQ(t->links()[static_cast<size_t>(r.links[i - 1])].to,
                    t->links()[static_cast<size_t>(r.links[i])].from)
              << src << " -> " << dst << " at link " << i;
        // Deterministic: the same route twice.
        EXPECT_TRUE(std::equal(r.links.begin(), r.links.end(), t->route(src, dst).links.begin()));
      }
  }
}

// LinkList::resize keeps the elements it had, up to the new size, whether they and the new size are
// held in place or spilled, and a copy then reads the same elements.
TEST(LinkList, ResizeKeepsItsElementsAcrossTheInlineBoundary) {
  constexpr int kInline = LinkList<int32_t>::kInlineLinks;
  const auto expect_prefix = [](const LinkList<int32_t>& l, int n) {
    for (int i = 0; i < n; ++i)
      EXPECT_EQ(l[i], 100 + i) << "element " << i;
  };
  LinkList<int32_t> l;
  for (int i = 0; i < 3; ++i)
    l.push_back(100 + i);
  l.resize(5);  // in place, grown
  EXPECT_EQ(l.size(), 5);
  expect_prefix(l, 3);
  l[3] = 103;
  l[4] = 104;
  l.resize(kInline + 4);  // spilled, from in place
  EXPECT_EQ(l.size(), kInline + 4);
  expect_prefix(l, 5);
  for (int i = 5; i < kInline + 4; ++i)
    l[i] = 100 + i;
  l.push_back(100 + kInline + 4);
  expect_prefix(l, kInline + 5);
  LinkList<int32_t> copy;
  copy = l;
  EXPECT_EQ(copy.size(), kInline + 5);
  expect_prefix(copy, kInline + 5);
  l[0] = 300;   // written while spilled: what the shrink below must carry back in place
  l.resize(2);  // back in place, from spilled
  EXPECT_EQ(l.size(), 2);
  EXPECT_EQ(l[0], 300);
  EXPECT_EQ(l[1], 101);
  EXPECT_EQ(l.end() - l.begin(), 2);
  l.push_back(102);  // in place again
  EXPECT_EQ(l[2], 102);
  EXPECT_EQ(l.size(), 3);
}

}  // namespace
}  // namespace bagua::netsim
