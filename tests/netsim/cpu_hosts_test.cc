// CPU hosts (ClusterSpec::cpu_hosts): hosts without accelerators after the worker hosts, one rank each,
// on the star's switch; their links, routes and times, and the refusals.
#include <gtest/gtest.h>

#include <string>

#include "core/check.h"
#include "netsim/simulation.h"
#include "netsim/topology.h"
#include "tests/netsim/support.h"

namespace bagua::netsim {
namespace {

// Two worker hosts of two devices (ranks 0-3), 10 GB/s and 5 us NICs, device links 100 GB/s and 1 us;
// one CPU host (rank 4, host 2) with a 1 GB/s, 2 us NIC.
ClusterSpec cluster() {
  ClusterSpec spec = hosts_spec(2, 2, {Bandwidth::gigabytes_per_second(100), Time::us(1)},
                                {Bandwidth::gigabytes_per_second(10), Time::us(5)});
  spec.cpu_hosts.count = 1;
  spec.cpu_hosts.nic = {Bandwidth::gigabytes_per_second(1), Time::us(2)};
  return spec;
}

TEST(CpuHosts, TheirRanksFollowTheWorkersOnHostsOfTheirOwn) {
  const ClusterSpec spec = cluster();
  EXPECT_EQ(spec.world_size(), 4);
  EXPECT_EQ(spec.total_ranks(), 5);
  const std::unique_ptr<Topology> t = make_topology(spec);
  EXPECT_EQ(t->ranks(), 5);
  EXPECT_EQ(t->host_of(3), 1);
  EXPECT_EQ(t->host_of(4), 2);
  // Device links 2r, 2r + 1 for every rank (the CPU host's last), then the NICs, the CPU host's last.
  EXPECT_EQ(t->links()[8].name, "cpu0.dev0.up");
  EXPECT_EQ(t->links()[9].name, "cpu0.dev0.down");
  EXPECT_EQ(t->links()[14].name, "cpu0.nic.up");
  EXPECT_EQ(t->links()[15].name, "cpu0.nic.down");
  EXPECT_EQ(t->links()[15].bandwidth.bytes_per_second(), 1e9);
  const Route r = t->route(1, 4);
  ASSERT_EQ(r.links.size(), 4);
  EXPECT_EQ(t->links()[static_cast<size_t>(r.links[2])].name, "cpu0.nic.down");
}

TEST(CpuHosts, AMessageToOneCrossesItsNic) {
  // 1 MB from rank 1 (host 0) to rank 4 (CPU host 0): device up 1 us, NIC up 5 us, the CPU host's NIC
  // down 2 us, its device link down 1 us = 9 us, and 1'000'000 B at its 1 GB/s NIC, the slowest link:
  // 1 ms; 1.009 ms. Back from it the same. Between the worker hosts: 1 + 5 + 5 + 1 = 12 us and
  // 1'000'000 B at 10 GB/s = 100 us: 112 us.
  const ClusterSpec spec = cluster();
  EXPECT_EQ(lone_transfer_time(spec, 1, 4, Bytes(1'000'000)), Time::us(1009));
  EXPECT_EQ(lone_transfer_time(spec, 4, 1, Bytes(1'000'000)), Time::us(1009));
  EXPECT_EQ(lone_transfer_time(spec, 0, 2, Bytes(1'000'000)), Time::us(112));
}

TEST(CpuHosts, BadValuesAndTopologiesThatDoNotPlaceThemAreRefused) {
  ClusterSpec spec = cluster();
  spec.cpu_hosts.count = -1;
  try {
    validate(spec, "cluster.");
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "cluster.cpu_hosts.count must be >= 0, got -1");
  }
  spec = cluster();
  spec.cpu_hosts.nic.bandwidth = Bandwidth::bytes_per_second(0);
  try {
    validate(spec, "cluster.");
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("cluster.cpu_hosts.nic.bandwidth ", 0), 0u) << e.what();
  }
  spec = cluster();
  spec.topology.name = "leaf_spine";
  spec.topology.params["hosts_per_leaf"] = int64_t{1};
  try {
    validate(spec, "cluster.");
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "cluster.cpu_hosts: the leaf_spine topology does not place CPU hosts (star does: on its "
              "switch)");
  }
}

}  // namespace
}  // namespace bagua::netsim
