// The cluster's links and the route between any two ranks: the Topology interface, and its registry.
//
// Terms:
//   device       one rank's accelerator; rank r is device r % devices_per_host of host
//                r / devices_per_host
//   CPU host     a host without accelerators (ClusterSpec::cpu_hosts, netsim/simulation.h): CPU host c
//                is host `hosts + c`, node cpu<c>, with one rank (world rank workers + c, a service
//                rank, core/services.h) whose device link is cpu<c>.dev0; a topology that can place
//                them calls place_cpu_hosts() (star: on its switch); the others refuse a cluster
//                that has them
//   link         one direction of a full-duplex cable: a full-duplex cable is two independent links,
//                "up" towards the switches (or the next router), "down" away from them
//   device link  the device's own link into the network, host<h>.dev<d>.up / .down: to the host fabric
//                (NVLink-like) and through it, or through the device's own NIC, to the outside
//   NIC link     a host's (or a device's) link to its first switch, host<h>.nic.up / .down
//   switch       a non-blocking crossbar: only links can be bottlenecks, never a switch
//   route        the links a message crosses, in order; it starts with the source's device link up
//                and ends with the destination's device link down
//   latency      of a route: the sum of its links' latencies times the latency factor, rounded once to
//                the nearest nanosecond
//
// Each topology is one file pair in netsim/topologies/ and one line in netsim/topologies/register.cc
// (docs/writing_a_topology.md). Its constructor lays out the links, checks that the hosts fit (a
// ConfigError naming the parameter), and route() returns a deterministic route. route() runs once per
// message: it allocates nothing for routes of up to LinkList::kInlineLinks (12) links, held in place
// (only a longer one, across a wide torus, spills to the heap).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/registry.h"
#include "netsim/simulation.h"

namespace bagua::netsim {

struct Link {
  std::string name;
  std::string from, to;  // the nodes it joins, in its direction (e.g. "host3" -> "leaf1")
  Bandwidth bandwidth;  // as configured
  Bandwidth capacity;   // what a flow set may use: bandwidth * bandwidth efficiency
  Time latency;
};

// A small vector of link indices: up to kInlineLinks in place; a longer route (a wide torus) spills
// to the heap. `data_` points at whichever holds the elements, so reading one costs no branch (a route
// is read and copied a few times per message).
template <class T>
class LinkList {
 public:
  // A fat tree's longest route is 8 links, a torus's 4 + hops: 12 covers an 8 x 8 torus (8 hops).
  static constexpr int kInlineLinks = 12;

  LinkList() = default;
  LinkList(const LinkList& other) { *this = other; }
  LinkList& operator=(const LinkList& other) {
    if (this == &other) return *this;
    size_ = other.size_;
    if (size_ > kInlineLinks) {
      spill_ = other.spill_;
      data_ = spill_.data();
    } else {
      data_ = inline_.data();
      inline_ = other.inline_;  // a fixed-size copy: a few vector moves, no call
    }
    return *this;
  }

  int size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T operator[](int i) const { return data_[i]; }
  T& operator[](int i) { return data_[i]; }
  void push_back(T v) {
    if (size_ < kInlineLinks) {
      inline_[static_cast<size_t>(size_++)] = v;
      return;
    }
    if (size_ == kInlineLinks) spill_.assign(inline_.begin(), inline_.end());
    spill_.push_back(v);
    data_ = spill_.data();
    ++size_;
  }
  // `n` elements: those already there (up to n), then unspecified values.
  void resize(int n) {
    if (n <= kInlineLinks) {
      if (size_ > kInlineLinks) std::copy_n(spill_.begin(), n, inline_.begin());
      data_ = inline_.data();
    } else {
      if (size_ <= kInlineLinks) spill_.assign(inline_.begin(), inline_.begin() + size_);
      spill_.resize(static_cast<size_t>(n));
      data_ = spill_.data();
    }
    size_ = n;
  }
  void clear() {
    size_ = 0;
    data_ = inline_.data();
    spill_.clear();
  }
  const T* data() const { return data_; }
  std::span<const T> span() const { return {data_, static_cast<size_t>(size_)}; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }

 private:
  std::array<T, kInlineLinks> inline_{};  // the elements while size_ <= kInlineLinks
  std::vector<T> spill_;                  // the elements beyond that
  T* data_ = inline_.data();
  int size_ = 0;
};

struct Route {
  LinkList<int32_t> links;  // indices into Topology::links()
  Time latency;
  // The capacity of its slowest link, bytes per second (what the flow model starts a flow's lowest
  // constraint from; found with the route, not from the links' capacities at every flow).
  double slowest = 0;
};

class Topology {
 public:
  virtual ~Topology() = default;
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;

  // Every rank: the workers, then the CPU hosts' ranks.
  int ranks() const { return ranks_; }
  int devices_per_host() const { return devices_per_host_; }
  // A table, not a division: every message between ranks asks for both hosts, and an integer
  // division's latency was 2.5 % of the 1024-rank ring's time (perf).
  int host_of(int rank) const { return host_of_[static_cast<size_t>(rank)]; }
  // Whether the topology placed the cluster's CPU hosts (place_cpu_hosts).
  bool cpu_hosts_placed() const { return cpu_hosts_placed_; }
  const std::vector<Link>& links() const { return links_; }
  // The route from rank `src` to rank `dst` (src != dst, both in [0, ranks)).
  Route route(int src, int dst) const;

 protected:
  // Lays out every rank's device link first: rank r's up link is link 2r, its down link 2r + 1, between
  // node host<h>.dev<d> and node host<h> (the host fabric).
  explicit Topology(const ClusterSpec& spec);

  // Appends a link from node `from` to node `to`; returns its index.
  int add_link(std::string name, std::string from, std::string to, const LinkSpec& spec);
  // Appends a cable between node `lower` and node `upper`: its up link (`base`.up, lower -> upper) and
  // down link (`base`.down, upper -> lower); returns the up link's index (the down link's is one more).
  int add_cable(const std::string& base, const std::string& lower, const std::string& upper,
                const LinkSpec& spec);
  // Cables the cluster's CPU hosts, in order, to node `switch_node`: cpu<c>.nic with the CPU hosts'
  // NIC link; returns the first one's up link index (CPU host c's is that + 2c). A topology that can
  // place them calls it once, after its own links; make_topology refuses CPU hosts it did not place.
  int place_cpu_hosts(const std::string& switch_node);
  static int device_up(int rank) { return 2 * rank; }
  static int device_down(int rank) { return 2 * rank + 1; }
  // The links between the source's device link up and the destination's device link down, appended to
  // `route` (nothing for two devices of one host: the host fabric is non-blocking).
  virtual void route_between(int src, int dst, Route& route) const = 0;

 private:
  int ranks_;
  int workers_;
  int hosts_;
  int devices_per_host_;
  int cpu_hosts_;
  LinkSpec cpu_nic_;
  bool cpu_hosts_placed_ = false;
  double bandwidth_efficiency_;
  double latency_factor_;
  std::vector<Link> links_;
  std::vector<Time> latency_;  // per link: links_[i].latency, side by side for route()
  std::vector<int> host_of_;   // per rank: a worker's host r / devices_per_host, then the CPU hosts'
};

// A topology's factory gets its parameters (checked against its schema), the cluster, and the path of
// its JSON object (e.g. "cluster.topology") for the errors it throws.
using TopologyRegistry = Registry<Topology, const ClusterSpec&, const std::string&>;

// Registers every topology of netsim/topologies/ (netsim/topologies/register.cc).
void register_topologies(TopologyRegistry& registry);

// Every topology of netsim/topologies/, registered once per process (its entries never change): what
// make_topology builds from, and what the config layer checks a topology's parameters against.
const TopologyRegistry& topology_registry();

// Builds `spec.topology`: its name looked up, its parameters checked against the schema (ConfigError
// "<path>.<parameter>: ..."), defaults filled in. `path` names the topology's JSON object.
std::unique_ptr<Topology> make_topology(const ClusterSpec& spec, const std::string& path = "topology");

// Throws ConfigError("<path>.<field>: must <rule>, got <value>"), the format of every topology error
// (the same as a parameter's schema error).
[[noreturn]] void topology_error(const std::string& path, const std::string& field,
                                 const std::string& rule, const std::string& got);

}  // namespace bagua::netsim
