#include "netsim/topology.h"

#include <cmath>
#include <sstream>

#include "core/check.h"

namespace bagua::netsim {

std::string to_string(TopologyKind k) {
  switch (k) {
    case TopologyKind::kStar:
      return "star";
    case TopologyKind::kLeafSpine:
      return "leaf_spine";
  }
  return "unknown";
}

LinkSpec spine_link(const ClusterSpec& spec) {
  LinkSpec uplink = spec.spine;
  if (uplink.bandwidth.bytes_per_second() == 0)
    uplink.bandwidth = spec.nic.bandwidth * (spec.hosts_per_leaf / spec.oversubscription);
  return uplink;
}

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
  // A strictly positive, finite rate (a link's bandwidth: an infinite link would carry bytes in no
  // time).
  void link_bandwidth(const std::string& field, Bandwidth bw) const {
    const double v = bw.bytes_per_second();
    if (!(v > 0)) fail(field, "be > 0", str(v));
    if (!std::isfinite(v)) fail(field, "be finite", str(v));
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

void validate(const ClusterSpec& spec, const std::string& prefix) {
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
  if (spec.topology == TopologyKind::kLeafSpine) {
    if (spec.hosts_per_leaf < 1 || spec.hosts % spec.hosts_per_leaf != 0)
      v.fail("hosts_per_leaf", "be >= 1 and divide hosts (" + std::to_string(spec.hosts) + ")",
             std::to_string(spec.hosts_per_leaf));
    v.positive_finite("oversubscription", spec.oversubscription);
    // 0 means "derive it": hosts_per_leaf * nic.bandwidth / oversubscription.
    v.non_negative_finite("spine.bandwidth", spec.spine.bandwidth.bytes_per_second());
    v.latency("spine.latency", spec.spine.latency);
  }
  v.non_negative_finite("device.peak_flops", spec.device.peak_flops);
  v.non_negative_finite("device.memory_bandwidth", spec.device.memory_bandwidth.bytes_per_second());
  const double eff = spec.factors.bandwidth_efficiency;
  if (!(eff > 0 && eff <= 1))
    v.fail("factors.bandwidth_efficiency", "be in (0, 1]", Validator::str(eff));
  v.non_negative_finite("factors.latency_factor", spec.factors.latency_factor);
  // The window cap may be infinite (no cap), never zero.
  if (!(spec.factors.flow_window_cap.bytes_per_second() > 0))
    v.fail("factors.flow_window_cap", "be > 0",
           Validator::str(spec.factors.flow_window_cap.bytes_per_second()));
}

Topology::Topology(const ClusterSpec& spec)
    : ranks_(spec.world_size()),
      devices_per_host_(spec.devices_per_host),
      hosts_per_leaf_(spec.topology == TopologyKind::kLeafSpine ? spec.hosts_per_leaf : 0),
      latency_factor_(spec.factors.latency_factor) {
  const double eff = spec.factors.bandwidth_efficiency;
  const Time device = spec.intra_host.latency;
  const Time nic = spec.nic.latency;
  auto add = [&](std::string name, const LinkSpec& l) {
    links_.push_back({std::move(name), l.bandwidth, l.bandwidth.bytes_per_second() * eff, l.latency});
  };
  for (int r = 0; r < ranks_; ++r) {
    const std::string base =
        "host" + std::to_string(r / devices_per_host_) + ".dev" + std::to_string(r % devices_per_host_);
    add(base + ".up", spec.intra_host);
    add(base + ".down", spec.intra_host);
  }
  nic_base_ = static_cast<int>(links_.size());
  for (int h = 0; h < spec.hosts; ++h) {
    add("host" + std::to_string(h) + ".nic.up", spec.nic);
    add("host" + std::to_string(h) + ".nic.down", spec.nic);
  }
  leaf_base_ = static_cast<int>(links_.size());
  if (hosts_per_leaf_ > 0) {
    const LinkSpec uplink = spine_link(spec);
    for (int k = 0; k < spec.hosts / hosts_per_leaf_; ++k) {
      add("leaf" + std::to_string(k) + ".up", uplink);
      add("leaf" + std::to_string(k) + ".down", uplink);
    }
    const Time leaf = uplink.latency;
    latency_by_count_[6] = (device + nic + leaf + leaf + nic + device).scaled(latency_factor_);
  }
  latency_by_count_[2] = (device + device).scaled(latency_factor_);
  latency_by_count_[4] = (device + nic + nic + device).scaled(latency_factor_);
}

Route Topology::route(int src, int dst) const {
  BAGUA_CHECK(src != dst && src >= 0 && dst >= 0 && src < ranks_ && dst < ranks_,
              "route from rank " + std::to_string(src) + " to rank " + std::to_string(dst));
  Route r;
  auto add = [&](int link) { r.links[static_cast<size_t>(r.count++)] = link; };
  const int src_host = host_of(src);
  const int dst_host = host_of(dst);
  add(device_up(src));
  if (src_host != dst_host) {
    add(nic_up(src_host));
    if (hosts_per_leaf_ > 0) {
      const int src_leaf = src_host / hosts_per_leaf_;
      const int dst_leaf = dst_host / hosts_per_leaf_;
      if (src_leaf != dst_leaf) {
        add(leaf_up(src_leaf));
        add(leaf_down(dst_leaf));
      }
    }
    add(nic_down(dst_host));
  }
  add(device_down(dst));
  r.latency = latency_by_count_[static_cast<size_t>(r.count)];
  return r;
}

}  // namespace bagua::netsim
