#include "netsim/topology.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>

#include "core/check.h"

namespace bagua::netsim {

namespace {

// Each check names the field (prefixed by the caller's path) and the value it got.
class Validator {
 public:
  explicit Validator(const std::string& prefix) : prefix_(prefix) {}

  [[noreturn]] void fail(const std::string& field, const std::string& rule,
                         const std::string& got) const {
    throw ConfigError(prefix_ + field + " must " + rule + ", got " + got);
  }
  static std::string str(double v) {
    std::ostringstream os;
    os << v;
    return os.str();
  }
  void at_least(const std::string& field, int64_t v, int64_t min) const {
    if (v < min) fail(field, "be >= " + std::to_string(min), std::to_string(v));
  }
  // A link's bandwidth: core's rule (an infinite link would carry bytes in no time).
  void link_bandwidth(const std::string& field, Bandwidth bw) const {
    if (const char* broken = bandwidth_rule_broken(bw))
      throw ConfigError(prefix_ + field + " " + broken + ", got " + str(bw.bytes_per_second()));
  }
  void latency(const std::string& field, Time t) const {
    if (t < Time::zero()) fail(field, "be >= 0", to_string(t));
  }
  void non_negative_finite(const std::string& field, double v) const {
    if (!(v >= 0)) fail(field, "be >= 0", str(v));
    if (!std::isfinite(v)) fail(field, "be finite", str(v));
  }
  void positive_finite(const std::string& field, double v) const {
    if (!(v > 0)) fail(field, "be > 0", str(v));
    if (!std::isfinite(v)) fail(field, "be finite", str(v));
  }

 private:
  const std::string& prefix_;
};

}  // namespace

[[noreturn]] void topology_error(const std::string& path, const std::string& field,
                                 const std::string& rule, const std::string& got) {
  throw ConfigError(path + "." + field + ": must " + rule + ", got " + got);
}

void validate_except_topology(const ClusterSpec& spec, const std::string& prefix) {
  const Validator v(prefix);
  v.at_least("hosts", spec.hosts, 1);
  v.at_least("devices_per_host", spec.devices_per_host, 1);
  // Ranks and links are indexed by int (two links per device): keep far from overflow.
  if (static_cast<int64_t>(spec.hosts) * spec.devices_per_host > (int64_t{1} << 24))
    v.fail("hosts * devices_per_host", "be <= " + std::to_string(int64_t{1} << 24),
           std::to_string(static_cast<int64_t>(spec.hosts) * spec.devices_per_host));
  v.link_bandwidth("intra_host.bandwidth", spec.intra_host.bandwidth);
  v.latency("intra_host.latency", spec.intra_host.latency);
  v.link_bandwidth("nic.bandwidth", spec.nic.bandwidth);
  v.latency("nic.latency", spec.nic.latency);
  v.at_least("cpu_hosts.count", spec.cpu_hosts.count, 0);
  if (spec.cpu_hosts.count > 0) {
    if (spec.cpu_hosts.count > (int64_t{1} << 24))
      v.fail("cpu_hosts.count", "be <= " + std::to_string(int64_t{1} << 24),
             std::to_string(spec.cpu_hosts.count));
    v.link_bandwidth("cpu_hosts.nic.bandwidth", spec.cpu_hosts.nic.bandwidth);
    v.latency("cpu_hosts.nic.latency", spec.cpu_hosts.nic.latency);
    v.non_negative_finite("cpu_hosts.cpu.peak_flops", spec.cpu_hosts.cpu.peak_flops);
    v.non_negative_finite("cpu_hosts.cpu.memory_bandwidth",
                          spec.cpu_hosts.cpu.memory_bandwidth.bytes_per_second());
  }
  v.non_negative_finite("device.peak_flops", spec.device.peak_flops);
  v.non_negative_finite("device.memory_bandwidth", spec.device.memory_bandwidth.bytes_per_second());
  v.non_negative_finite("cpu.peak_flops", spec.cpu.peak_flops);
  v.non_negative_finite("cpu.memory_bandwidth", spec.cpu.memory_bandwidth.bytes_per_second());
  if (spec.device.compute_capability < 10 || spec.device.compute_capability > 199)
    v.fail("device.compute_capability", "be in [10, 199] (major x 10 + minor)",
           std::to_string(spec.device.compute_capability));
  const double eff = spec.factors.bandwidth_efficiency;
  if (!(eff > 0 && eff <= 1))
    v.fail("factors.bandwidth_efficiency", "be in (0, 1]", Validator::str(eff));
  v.non_negative_finite("factors.latency_factor", spec.factors.latency_factor);
  // The window cap may be infinite (no cap), never zero.
  if (!(spec.factors.flow_window_cap.bytes_per_second() > 0))
    v.fail("factors.flow_window_cap", "be > 0",
           Validator::str(spec.factors.flow_window_cap.bytes_per_second()));
}

void validate(const ClusterSpec& spec, const std::string& prefix) {
  validate_except_topology(spec, prefix);
  make_topology(spec, prefix + "topology");  // its parameters, and whether the hosts fit
}

Topology::Topology(const ClusterSpec& spec)
    : ranks_(spec.total_ranks()),
      workers_(spec.world_size()),
      hosts_(spec.hosts),
      devices_per_host_(spec.devices_per_host),
      cpu_hosts_(spec.cpu_hosts.count),
      cpu_nic_(spec.cpu_hosts.nic),
      bandwidth_efficiency_(spec.factors.bandwidth_efficiency),
      latency_factor_(spec.factors.latency_factor) {
  host_of_.reserve(static_cast<size_t>(ranks_));
  for (int r = 0; r < ranks_; ++r)
    host_of_.push_back(r < workers_ ? r / devices_per_host_ : hosts_ + (r - workers_));
  for (int r = 0; r < workers_; ++r) {
    const std::string host = "host" + std::to_string(r / devices_per_host_);
    const std::string device = host + ".dev" + std::to_string(r % devices_per_host_);
    add_cable(device, device, host, spec.intra_host);
  }
  for (int c = 0; c < cpu_hosts_; ++c) {
    const std::string host = "cpu" + std::to_string(c);
    add_cable(host + ".dev0", host + ".dev0", host, spec.intra_host);
  }
}

int Topology::place_cpu_hosts(const std::string& switch_node) {
  BAGUA_CHECK(!cpu_hosts_placed_, "the CPU hosts are placed once");
  cpu_hosts_placed_ = true;
  const int first = static_cast<int>(links_.size());
  for (int c = 0; c < cpu_hosts_; ++c)
    add_cable("cpu" + std::to_string(c) + ".nic", "cpu" + std::to_string(c), switch_node, cpu_nic_);
  return first;
}

int Topology::add_link(std::string name, std::string from, std::string to, const LinkSpec& spec) {
  links_.push_back({std::move(name), std::move(from), std::move(to), spec.bandwidth,
                    spec.bandwidth * bandwidth_efficiency_, spec.latency});
  latency_.push_back(spec.latency);
  return static_cast<int>(links_.size()) - 1;
}

int Topology::add_cable(const std::string& base, const std::string& lower, const std::string& upper,
                        const LinkSpec& spec) {
  const int up = add_link(base + ".up", lower, upper, spec);
  add_link(base + ".down", upper, lower, spec);
  return up;
}

Route Topology::route(int src, int dst) const {
  BAGUA_CHECK(src != dst && src >= 0 && dst >= 0 && src < ranks_ && dst < ranks_,
              "route from rank " + std::to_string(src) + " to rank " + std::to_string(dst));
  Route r;
  r.links.push_back(device_up(src));
  route_between(src, dst, r);
  r.links.push_back(device_down(dst));
  Time sum;
  r.slowest = std::numeric_limits<double>::infinity();
  for (const int32_t link : r.links) {
    sum += latency_[static_cast<size_t>(link)];
    r.slowest = std::min(r.slowest, links_[static_cast<size_t>(link)].capacity.bytes_per_second());
  }
  r.latency = sum.scaled(latency_factor_);
  return r;
}

const TopologyRegistry& topology_registry() {
  // Built once: building it at every make_topology, five schemas and their std::functions, was a
  // tenth of an 8-rank ring's run (bench_netsim_speed, callgrind).
  static const TopologyRegistry registry = [] {
    TopologyRegistry r("topology");
    register_topologies(r);
    return r;
  }();
  return registry;
}

std::unique_ptr<Topology> make_topology(const ClusterSpec& spec, const std::string& path) {
  const TopologyRegistry& registry = topology_registry();
  const TopologyRegistry::Entry* entry = registry.find(spec.topology.name);
  if (!entry) {
    std::string known;
    for (const auto* e : registry.entries())
      known += (known.empty() ? "" : ", ") + e->name;
    throw ConfigError(path + ".name: unknown topology \"" + spec.topology.name + "\" (known: " + known +
                      ")");
  }
  std::map<std::string, ParamValue> values;
  for (const auto& [name, value] : spec.topology.params) {
    if (auto err = entry->schema.validate(name, value))
      throw ConfigError(path + "." + name + ": " + *err);
    const bool as_double =
        entry->schema.find(name)->type == ParamType::kDouble && std::holds_alternative<int64_t>(value);
    values[name] = as_double ? ParamValue(static_cast<double>(std::get<int64_t>(value))) : value;
  }
  for (const ParamSpec& s : entry->schema.specs())
    if (s.presence == ParamPresence::kRequired && !spec.topology.params.count(s.name))
      throw ConfigError(path + "." + s.name + ": missing (required)");
  std::unique_ptr<Topology> topology = entry->factory(Params(entry->schema, values), spec, path);
  if (spec.cpu_hosts.count > 0 && !topology->cpu_hosts_placed()) {
    // `path` names the topology's object ("cluster.topology"): its parent is the cluster's.
    const std::string cluster =
        path.size() >= 8 && path.ends_with("topology") ? path.substr(0, path.size() - 8) : "";
    throw ConfigError(cluster + "cpu_hosts: the " + entry->name +
                      " topology does not place CPU hosts (star does: on its switch)");
  }
  return topology;
}

}  // namespace bagua::netsim
