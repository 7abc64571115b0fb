#include "experiments/config.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "core/check.h"
#include "core/trainer/trainer.h"
#include "experiments/profile_file.h"
#include "experiments/quantity.h"
#include "experiments/sweep_override.h"

namespace bagua::experiments {

netsim::DeviceSpec default_device() {
  netsim::DeviceSpec d;
  // NVIDIA Tesla V100 SXM2, the paper's GPU (Gan et al., BAGUA, arXiv:2107.01499, Sec. 5: 8 V100 32GB
  // per server). NVIDIA V100 Tensor Core GPU datasheet: single-precision peak 15.7 TFLOPS (SXM2) ...
  d.peak_flops = 15.7e12;
  // ... and HBM2 memory bandwidth 900 GB/s. Compute capability 7.0 (developer.nvidia.com/cuda-gpus).
  d.memory_bandwidth = Bandwidth::gigabytes_per_second(900);
  d.compute_capability = 70;
  return d;
}

netsim::DeviceSpec default_cpu() {
  netsim::DeviceSpec d;
  // What a CPU's work costs here is the memory traffic of a summation server (BytePS's sums,
  // core/algorithms/byteps.h); its arithmetic is not the bound (peak_flops 0: not modelled).
  // BytePS's maintainers state that its server "already achieves 100Gbps summation throughput"
  // (bytedance/byteps issue #230, 2020-03-27): 12.5 GB/s of pushed gradient summed. A sum,
  // dst[i] = dst[i] + src[i] (CpuReducer::_sum, byteps/common/cpu_reducer.cc), reads two bytes and
  // writes one per pushed byte, so 3 x 12.5 = 37.5 GB/s through memory, all of the server's engine
  // threads together. An assumption: that figure for any host's CPU, the colocated servers' included.
  d.memory_bandwidth = Bandwidth::gigabytes_per_second(37.5);
  return d;
}

uint64_t fnv1a64(std::string_view text) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a 64-bit offset basis
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;  // FNV-1a 64-bit prime
  }
  return h;
}

void apply_override(Json& config, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw ConfigError("--set " + echo(assignment) +
                      ": expected dotted.path=value, e.g. cluster.nic.bandwidth=\"10 Gbps\"");
  }
  const std::string path = assignment.substr(0, eq);
  const std::string shown = path.size() <= kMaxEchoChars ? path : echo(path);
  // Names its own path ("--set cluster.nic.latency: ...").
  Json value = parse_override_value(std::string_view(assignment).substr(eq + 1), shown);
  try {
    // A sweep's axis, or a swept path (experiments/sweep_override.h).
    if (apply_sweep_override(config, path, value)) return;
    set_path(config, path, std::move(value));
  } catch (const ConfigError& e) {
    throw ConfigError("--set " + shown + ": " + e.what());
  }
}

namespace {

// Where files named in a config are looked up: the current directory, then the config's directory and
// each directory above it.
class FileLocator {
 public:
  explicit FileLocator(const std::filesystem::path& config_dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path dir = fs::absolute(config_dir.empty() ? fs::path(".") : config_dir, ec).lexically_normal();
    dirs_.push_back(fs::current_path(ec));
    while (!dir.empty()) {
      dirs_.push_back(dir);
      if (dir == dir.root_path() || dir.parent_path() == dir) break;
      dir = dir.parent_path();
    }
  }

  std::filesystem::path find(const std::string& name, const std::string& path) const {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path p(name);
    if (p.is_absolute()) {
      if (fs::is_regular_file(p, ec)) return p;
    } else {
      for (const fs::path& d : dirs_)
        if (fs::is_regular_file(d / p, ec)) return d / p;
    }
    throw ConfigError(path + ": file " + echo(name) +
                      " not found (looked in the current directory and above the config)");
  }

 private:
  std::vector<std::filesystem::path> dirs_;
};

Json param_to_json(const ParamSpec& spec, const ParamValue& v) {
  switch (spec.unit) {
    case ParamUnit::kBandwidth:
      return format_bandwidth(Bandwidth::bytes_per_second(std::get<double>(v)));
    case ParamUnit::kTime:
      return format_time(Time::ns(std::get<int64_t>(v)));
    case ParamUnit::kNone:
      break;
  }
  return std::visit([](const auto& x) { return Json(x); }, v);
}

// Checks `value` against `spec`'s type (ints stand for doubles); returns the typed value.
ParamValue param_from_json(const ParamSpec& spec, const Json& value, const std::string& path) {
  switch (spec.type) {
    case ParamType::kBool:
      if (!value.is_boolean()) throw_type_error(path, "bool", value);
      return value.get<bool>();
    case ParamType::kInt:
      if (const std::optional<int64_t> x = json_integer(value)) return *x;
      throw_integer_error(path, value);
    case ParamType::kDouble:
      if (!value.is_number()) throw_type_error(path, "number", value);
      return value.get<double>();
    case ParamType::kString:
      if (!value.is_string()) throw_type_error(path, "string", value);
      return value.get<std::string>();
  }
  throw InternalError("unknown parameter type");
}

// The keys a component's object may have: `reserved` (name, batch_size) and its parameters.
std::vector<std::string> keys_of(const ParamSchema& schema, std::vector<std::string> reserved) {
  for (const ParamSpec& s : schema.specs())
    reserved.push_back(s.name);
  return reserved;
}

// A component's parameters: the keys of `v` other than `reserved`, checked against `schema`. Appends
// every parameter (defaults filled in; an optional one only when given) to `canonical` in the schema's
// order. A bandwidth or time parameter is a quantity with its unit ("100 Gbps", "5 us").

Params parse_params(const Json& v, const std::string& path, const ParamSchema& schema,
                    const std::vector<std::string>& reserved, Json& canonical) {
  ObjectReader r(v, path, keys_of(schema, reserved));
  std::map<std::string, ParamValue> values;
  for (const ParamSpec& s : schema.specs()) {
    const Json* given = r.find(s.name);
    ParamValue value = s.default_value;
    if (!given && s.presence == ParamPresence::kRequired)
      throw ConfigError(r.path_of(s.name) + ": missing (required)");
    if (!given && s.presence == ParamPresence::kOptional) continue;
    if (given) {
      const std::string p = r.path_of(s.name);
      if (s.unit == ParamUnit::kBandwidth)
        value = r.get_bandwidth(s.name).bytes_per_second();
      else if (s.unit == ParamUnit::kTime)
        value = r.get_time(s.name).nanoseconds();
      else
        value = param_from_json(s, *given, p);
      if (auto err = schema.validate(s.name, value)) throw ConfigError(p + ": " + *err);
    }
    if (s.type == ParamType::kDouble && std::holds_alternative<int64_t>(value))
      value = static_cast<double>(std::get<int64_t>(value));
    values[s.name] = value;
    canonical[s.name] = param_to_json(s, value);
  }
  return Params(schema, values);
}

template <class R>
const typename R::Entry& find_entry(const R& registry, const Json& v, const std::string& path) {
  if (!v.is_object()) throw_type_error(path, "an object", v);
  auto it = v.find("name");
  if (it == v.end()) throw ConfigError(path + ".name: missing (required)");
  if (!it->is_string()) throw_type_error(path + ".name", "string", *it);
  const std::string name = it->template get<std::string>();
  if (const auto* e = registry.find(name)) return *e;
  std::string known;
  std::vector<std::string> names;
  for (const auto* e : registry.entries()) {
    known += (known.empty() ? "" : ", ") + e->name;
    names.push_back(e->name);
  }
  throw ConfigError(path + ".name: unknown " + registry.kind() + " " + echo(name) +
                    did_you_mean_text(name, names) + " (known: " + known + ")");
}

// ---- memory -----------------------------------------------------------------------------------------
//
// What a point holds in memory, estimated from its config before anything is allocated, so that a size
// the machine cannot hold is refused naming its path instead of ending in a bare std::bad_alloc:
//   result rows  iterations x (world x sizeof(IterationRecord) + kRowBytes): every rank records every
//                iteration (core/trainer/trainer.h), and the point keeps one metrics row and one CSV
//                line per iteration (experiments/results.h); world is the cluster's ranks (1 for a job
//                runtime without a cluster, whose ranks are each their own process)
//   data set     samples x (features x 4 B + kSampleBytes): a synthetic workload's features x samples
//                floats (core/models/dataset.h, Dataset::x), and per sample its target, label and
//                partition index; only workloads with "samples" and "features" parameters have one
//   topology     (2 x world + 8 x hosts) x kLinkBytes: the simulator's links, built when the config is
//                checked (netsim::validate): two per device (netsim/topology.cc) and, above each host,
//                its NIC cable and the fabric's share (a leaf's or spine's cables: a few per host)
//   sweep        points x kPointBytes: every point is expanded and validated before the first runs
// The limit is LoadOptions::memory_limit, by default this machine's physical memory (sysconf).

// IterationRow's 7 numbers (56 B) and its CSV line (7 numbers of at most 24 characters each), rounded up.
constexpr double kRowBytes = 256;
// A float target, an int32 label and an int64 partition index.
constexpr double kSampleBytes = 16;
// netsim::Link (three strings, two bandwidths, a latency: 120 B), its names on the heap (about 3 x 32 B)
// and its entry in the latency table, rounded up.
constexpr double kLinkBytes = 256;
// A PointConfig with its resolved config and swept values (measured: 5-12 kB for the configs of this
// tree's configs/), rounded up.
constexpr double kPointBytes = 16384;

}  // namespace

double physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  // Unknown (sysconf failed): 1 TiB, more than the machines this runs on have, so nothing real is refused.
  if (pages <= 0 || page <= 0) return 1099511627776.0;
  return static_cast<double>(pages) * static_cast<double>(page);
}

namespace {

// "1.4 TB", "420 TB": an estimate needs three digits, not a canonical size.
std::string approximate_bytes(double b) {
  static const char* const kUnits[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"};
  size_t u = 0;
  while (b >= 1000 && u + 1 < std::size(kUnits)) {
    b /= 1000;
    ++u;
  }
  char text[64];
  std::snprintf(text, sizeof text, "%.3g %s", b, kUnits[u]);
  return text;
}

[[noreturn]] void refuse_memory(const std::string& path, const std::string& what, double need,
                                double limit) {
  throw ConfigError(path + ": " + what + " need about " + approximate_bytes(need) +
                    " of memory, more than the limit of " + approximate_bytes(limit) +
                    " (this machine's memory)");
}

void check_topology_memory(int64_t hosts, int64_t devices_per_host, double limit) {
  const double world = static_cast<double>(hosts) * static_cast<double>(devices_per_host);
  const double links = 2 * world + 8 * static_cast<double>(hosts);
  if (links * kLinkBytes > limit) {
    refuse_memory("cluster.hosts",
                  std::to_string(hosts) + " hosts x " + std::to_string(devices_per_host) +
                      " devices (the simulator's links)",
                  links * kLinkBytes, limit);
  }
}

void check_sweep_memory(size_t points, double limit) {
  const double need = static_cast<double>(points) * kPointBytes;
  if (need > limit) refuse_memory("sweep.axes", std::to_string(points) + " points", need, limit);
}

void check_memory(const PointConfig& p, double limit) {
  const double world = p.has_cluster ? static_cast<double>(p.cluster.world_size()) : 1.0;
  const double iterations = static_cast<double>(p.schedule.iterations);
  const double rows = iterations * (world * static_cast<double>(sizeof(IterationRecord)) + kRowBytes);
  auto refuse = [&](const std::string& path, const std::string& what, double need) {
    refuse_memory(path, what, need, limit);
  };
  if (rows > limit) {
    refuse("schedule.iterations",
           std::to_string(p.schedule.iterations) + " iterations at " +
               std::to_string(static_cast<int64_t>(world)) + " ranks (their result rows)",
           rows);
  }
  const Params& w = p.workload.params;
  if (w.has("samples") && w.has("features")) {
    const double samples = static_cast<double>(w.get_int("samples"));
    const double features = static_cast<double>(w.get_int("features"));
    const double data = samples * (features * 4 + kSampleBytes);
    if (data > limit) {
      refuse("workload.samples",
             std::to_string(w.get_int("samples")) + " samples of " +
                 std::to_string(w.get_int("features")) + " features (the data set)",
             data);
    }
    if (rows + data > limit)
      refuse("schedule.iterations", "the result rows and the data set together", rows + data);
  }
}

// ---- cluster ----------------------------------------------------------------------------------------

const std::vector<std::string> kClusterKeys = {
    "extends", "hosts", "devices_per_host", "intra_host", "nic",       "topology",
    "device",  "cpu",   "factors",          "transport",  "cpu_hosts", "collective_granularity"};

// Replaces "extends" by the extended file's content (itself resolved), the keys given here overriding.
Json resolve_extends(const Json& cluster, const FileLocator& files, int depth, std::string& chain) {
  if (!cluster.is_object() || !cluster.contains("extends")) return cluster;
  const Json& ext = cluster["extends"];
  if (!ext.is_string()) throw_type_error("cluster.extends", "a file name string", ext);
  if (depth > 8)
    throw ConfigError("cluster.extends: more than 8 levels of extends (a cycle?): " + chain);
  const std::string name = ext.get<std::string>();
  chain += (chain.empty() ? "" : " -> ") + (name.size() <= kMaxEchoChars ? name : echo(name));
  Json base = read_json_file(files.find(name, "cluster.extends"), name);
  if (!base.is_object())
    throw_type_error("cluster.extends (" + echo(name) + ")", "a cluster object", base);
  base = resolve_extends(base, files, depth + 1, chain);
  Json overrides = cluster;
  overrides.erase("extends");
  merge_into(base, overrides);
  return base;
}

Json link_json(const netsim::LinkSpec& l) {
  return Json{{"bandwidth", format_bandwidth(l.bandwidth)}, {"latency", format_time(l.latency)}};
}

netsim::LinkSpec parse_link(const ObjectReader& parent, const std::string& key, Json& canonical) {
  ObjectReader r(parent.required(key), parent.path_of(key), {"bandwidth", "latency"});
  netsim::LinkSpec l{r.get_bandwidth("bandwidth"), r.get_time("latency")};
  canonical[key] = link_json(l);
  return l;
}

// "topology": a registered topology's name, or {"name": ..., ...its parameters}. Its canonical form is
// the bare name when it has no parameters (so a star's stays "star"), an object otherwise.
netsim::TopologySpec parse_topology(const ObjectReader& cluster,
                                    const netsim::TopologyRegistry& registry, Json& canonical) {
  const std::string path = cluster.path_of("topology");
  Json given = Json{{"name", "star"}};
  if (const Json* v = cluster.find("topology")) given = v->is_string() ? Json{{"name", *v}} : *v;
  const auto& entry = find_entry(registry, given, path);
  Json params = Json::object();
  netsim::TopologySpec t;
  t.name = entry.name;
  t.params = parse_params(given, path, entry.schema, {"name"}, params).values();
  if (params.empty()) {
    canonical["topology"] = entry.name;
  } else {
    Json object = Json{{"name", entry.name}};
    for (const auto& [key, value] : params.items())
      object[key] = value;
    canonical["topology"] = object;
  }
  return t;
}

netsim::ClusterSpec parse_cluster(const Json& raw, bool simulated,
                                  const netsim::TopologyRegistry& topologies, double memory_limit,
                                  Json& canonical) {
  netsim::ClusterSpec spec;
  ObjectReader r(raw, "cluster", kClusterKeys);
  // Each at most 2^24 before it is narrowed to an int (their product is checked below).
  spec.hosts = static_cast<int>(r.get_int("hosts", std::nullopt, 1, int64_t{1} << 24));
  spec.devices_per_host =
      static_cast<int>(r.get_int("devices_per_host", std::nullopt, 1, int64_t{1} << 24));
  if (static_cast<int64_t>(spec.hosts) * spec.devices_per_host > (int64_t{1} << 24)) {
    throw ConfigError("cluster: hosts x devices_per_host must be at most 2^24, got " +
                      std::to_string(spec.hosts) + " x " + std::to_string(spec.devices_per_host));
  }
  canonical["hosts"] = spec.hosts;
  canonical["devices_per_host"] = spec.devices_per_host;
  if (simulated) check_topology_memory(spec.hosts, spec.devices_per_host, memory_limit);

  // The simulator's network and device model: checked for every runtime, kept only for the simulator.
  Json net = Json::object();
  const bool has_links = r.has("intra_host") || r.has("nic");
  if (simulated || has_links) {
    spec.intra_host = parse_link(r, "intra_host", net);
    spec.nic = parse_link(r, "nic", net);
  }
  spec.topology = parse_topology(r, topologies, net);

  // "cpu_hosts": {"count": K, "nic": {...}}: K hosts without accelerators on the workers' network, one
  // service rank on each (netsim::CpuHostsSpec, core/services.h). Their NIC defaults to the worker
  // hosts' NIC, field by field, so that a sweep of cluster.nic moves both (BytePS's OSDI 2020 setup
  // gives the CPU machines the GPU machines' network). Written to the resolved config only when given.
  // "cpu": {"memory_bandwidth": ...}: each worker host's CPU (netsim::ClusterSpec::cpu), where BytePS's
  // colocated servers sum; default_cpu() when not given. Written to the resolved config only when
  // given, so that the configs without it resolve (and hash) as before.
  spec.cpu = default_cpu();
  if (const Json* c = r.find("cpu")) {
    ObjectReader cr(*c, "cluster.cpu", {"memory_bandwidth"});
    if (cr.has("memory_bandwidth")) spec.cpu.memory_bandwidth = cr.get_bandwidth("memory_bandwidth");
    net["cpu"] = Json{{"memory_bandwidth", format_bandwidth(spec.cpu.memory_bandwidth)}};
  }
  // "cpu_hosts": {"count": K, "nic": {...}, "memory_bandwidth": ...}: K hosts without accelerators on
  // the workers' network, one service rank on each (netsim::CpuHostsSpec, core/services.h). Their NIC
  // defaults to the worker hosts' NIC, field by field, so that a sweep of cluster.nic moves both
  // (BytePS's OSDI 2020 setup gives the CPU machines the GPU machines' network); their CPU's
  // memory_bandwidth (what the servers' sums achieve) to the worker hosts' cluster.cpu. Written to the
  // resolved config only when given.
  if (const Json* ch = r.find("cpu_hosts")) {
    ObjectReader cr(*ch, "cluster.cpu_hosts", {"count", "nic", "memory_bandwidth"});
    spec.cpu_hosts.count = static_cast<int>(cr.get_int("count", std::nullopt, 1, int64_t{1} << 24));
    spec.cpu_hosts.nic = spec.nic;
    if (const Json* n = cr.find("nic")) {
      ObjectReader nr(*n, cr.path_of("nic"), {"bandwidth", "latency"});
      if (nr.has("bandwidth")) spec.cpu_hosts.nic.bandwidth = nr.get_bandwidth("bandwidth");
      if (nr.has("latency")) spec.cpu_hosts.nic.latency = nr.get_time("latency");
    }
    spec.cpu_hosts.cpu = spec.cpu;
    if (cr.has("memory_bandwidth"))
      spec.cpu_hosts.cpu.memory_bandwidth = cr.get_bandwidth("memory_bandwidth");
    canonical["cpu_hosts"] = Json{{"count", spec.cpu_hosts.count}};
    net["cpu_hosts"] =
        Json{{"count", spec.cpu_hosts.count},
             {"nic", link_json(spec.cpu_hosts.nic)},
             {"memory_bandwidth", format_bandwidth(spec.cpu_hosts.cpu.memory_bandwidth)}};
  }

  spec.device = default_device();
  if (const Json* d = r.find("device")) {
    ObjectReader dr(*d, "cluster.device",
                    {"peak_flops", "memory_bandwidth", "compute_capability", "nic_path"});
    spec.device.peak_flops = dr.get_flops("peak_flops", spec.device.peak_flops);
    if (dr.has("memory_bandwidth")) spec.device.memory_bandwidth = dr.get_bandwidth("memory_bandwidth");
    // "compute_capability": CUDA's major.minor, as NVIDIA's table writes it (8.0 for an A100).
    if (dr.has("compute_capability")) {
      const double cc = dr.get_double("compute_capability", 7.0, 1.0, 19.9);
      const double tenths = std::round(cc * 10);
      if (std::abs(cc * 10 - tenths) > 1e-6)
        throw ConfigError(dr.path_of("compute_capability") +
                          ": expected major.minor with one digit after the point (8.0, 8.6), got " +
                          shortest(cc));
      spec.device.compute_capability = static_cast<int>(tenths);
    }
    if (dr.has("nic_path")) {
      const std::string path = dr.get_choice("nic_path", "pxb", {"pix", "pxb", "phb", "sys"});
      spec.device.nic_path = path == "pix"   ? netsim::NicPath::kPix
                             : path == "pxb" ? netsim::NicPath::kPxb
                             : path == "phb" ? netsim::NicPath::kPhb
                                             : netsim::NicPath::kSys;
    }
  }
  net["device"] = Json{{"peak_flops", format_flops(spec.device.peak_flops)},
                       {"memory_bandwidth", format_bandwidth(spec.device.memory_bandwidth)}};
  // Written to the resolved config only when not the defaults (a V100 behind PCIe switches), so that
  // the configs without them resolve (and hash) as before.
  const netsim::DeviceSpec v100 = default_device();
  if (spec.device.compute_capability != v100.compute_capability)
    net["device"]["compute_capability"] = spec.device.compute_capability / 10.0;
  if (spec.device.nic_path != v100.nic_path)
    net["device"]["nic_path"] = netsim::to_string(spec.device.nic_path);

  // DESIGN: model factors default to 1 (and no window cap), so that the uncalibrated model is exactly
  // the alpha-beta closed form.
  if (const Json* f = r.find("factors")) {
    ObjectReader fr(*f, "cluster.factors",
                    {"bandwidth_efficiency", "latency_factor", "flow_window_cap", "tcp_window",
                     "connections_per_peer", "host_bandwidth_ceiling", "message_overhead",
                     "message_gap", "tcp_slow_start"});
    spec.factors.bandwidth_efficiency =
        fr.get_double("bandwidth_efficiency", 1.0, 0.0, 1.0, /*min_exclusive=*/true);
    // At most 1000: a calibration factor is near 1, and 1000 x the longest latency (kMaxTime, a day)
    // stays inside the clock's range (experiments/quantity.h, "Ranges").
    spec.factors.latency_factor =
        fr.get_double("latency_factor", 1.0, 0.0, 1000.0, /*min_exclusive=*/true);
    // "inf" (the default) or a bandwidth.
    auto bandwidth_or_inf = [&](const char* key, Bandwidth& out) {
      const Json* v = fr.find(key);
      if (v && !(v->is_string() && v->get<std::string>() == "inf")) out = fr.get_bandwidth(key);
    };
    bandwidth_or_inf("flow_window_cap", spec.factors.flow_window_cap);
    spec.factors.tcp_window = fr.get_bytes("tcp_window", Bytes(0));
    spec.factors.connections_per_peer =
        static_cast<int>(fr.get_int("connections_per_peer", 1, 1, std::numeric_limits<int>::max()));
    bandwidth_or_inf("host_bandwidth_ceiling", spec.factors.host_bandwidth_ceiling);
    if (fr.has("message_overhead")) spec.factors.message_overhead = fr.get_time("message_overhead");
    if (fr.has("message_gap")) spec.factors.message_gap = fr.get_time("message_gap");
    // "tcp_slow_start": false (default), true (Linux's figures, netsim/simulation.h) or an object of
    // them; netsim::validate_model checks them and that a tcp_window is set.
    if (const Json* ss = fr.find("tcp_slow_start")) {
      if (ss->is_boolean()) {
        spec.factors.tcp_slow_start = ss->get<bool>();
      } else {
        if (!ss->is_object())
          throw_type_error(fr.path_of("tcp_slow_start"), "true, false or an object", *ss);
        ObjectReader sr(*ss, fr.path_of("tcp_slow_start"),
                        {"initial_window", "restart_after_idle", "rto_min"});
        spec.factors.tcp_slow_start = true;
        spec.factors.tcp_initial_window =
            sr.get_bytes("initial_window", spec.factors.tcp_initial_window);
        spec.factors.tcp_restart_after_idle =
            sr.get_bool("restart_after_idle", spec.factors.tcp_restart_after_idle);
        if (sr.has("rto_min")) spec.factors.tcp_rto_min = sr.get_time("rto_min");
      }
    }
  }
  // The rate a link's flows reach is its bandwidth x bandwidth_efficiency: that too must be a rate the
  // clock can time (experiments/quantity.h, "Ranges").
  for (const auto& [key, link] :
       {std::pair{"intra_host", &spec.intra_host}, std::pair{"nic", &spec.nic}}) {
    const Bandwidth effective = link->bandwidth * spec.factors.bandwidth_efficiency;
    if (link->bandwidth.bytes_per_second() > 0 && effective < kMinBandwidth) {
      throw ConfigError(
          "cluster.factors.bandwidth_efficiency: " + shortest(spec.factors.bandwidth_efficiency) +
          " x cluster." + key + ".bandwidth " + format_bandwidth(link->bandwidth) + " is " +
          format_bandwidth(effective) + ", below the least rate " + format_bandwidth(kMinBandwidth));
    }
  }
  Json factors = Json{{"bandwidth_efficiency", spec.factors.bandwidth_efficiency},
                      {"latency_factor", spec.factors.latency_factor},
                      {"flow_window_cap", format_bandwidth(spec.factors.flow_window_cap)}};
  // The later factors are written out only when set, so that the resolved config (and its hash) of a
  // cluster without them is what it was before they existed.
  const netsim::ModelFactors none;
  if (spec.factors.tcp_window != none.tcp_window)
    factors["tcp_window"] = format_bytes(spec.factors.tcp_window);
  if (spec.factors.connections_per_peer != none.connections_per_peer)
    factors["connections_per_peer"] = spec.factors.connections_per_peer;
  if (spec.factors.host_bandwidth_ceiling != none.host_bandwidth_ceiling)
    factors["host_bandwidth_ceiling"] = format_bandwidth(spec.factors.host_bandwidth_ceiling);
  if (spec.factors.message_overhead != none.message_overhead)
    factors["message_overhead"] = format_time(spec.factors.message_overhead);
  if (spec.factors.message_gap != none.message_gap)
    factors["message_gap"] = format_time(spec.factors.message_gap);
  if (spec.factors.tcp_slow_start)
    factors["tcp_slow_start"] = Json{{"initial_window", format_bytes(spec.factors.tcp_initial_window)},
                                     {"restart_after_idle", spec.factors.tcp_restart_after_idle},
                                     {"rto_min", format_time(spec.factors.tcp_rto_min)}};
  net["factors"] = factors;

  // The transport model: what completes a send (netsim/transport.h). Default "alpha_beta" (at arrival);
  // "mpi" and "nccl" start from TransportModel::mpi() / nccl(), whose figures are cited there.
  if (const Json* t = r.find("transport")) {
    ObjectReader tr(
        *t, "cluster.transport",
        {"model", "eager_limit", "eager_limit_intra_host", "slots", "slot_bytes", "ordered"});
    const std::string model = tr.get_choice("model", "alpha_beta", {"alpha_beta", "mpi", "nccl"});
    auto only_for = [&](std::initializer_list<const char*> keys, const std::string& owner) {
      for (const char* k : keys)
        if (tr.has(k) && model != owner)
          throw ConfigError(tr.path_of(k) + ": only for \"model\": \"" + owner + "\"");
    };
    only_for({"eager_limit", "eager_limit_intra_host"}, "mpi");
    only_for({"slots", "slot_bytes"}, "nccl");
    if (model == "mpi") {
      spec.transport = netsim::TransportModel::mpi();
      spec.transport.eager_limit = tr.get_bytes("eager_limit", spec.transport.eager_limit);
      spec.transport.eager_limit_intra_host =
          tr.get_bytes("eager_limit_intra_host", spec.transport.eager_limit_intra_host);
      net["transport"] =
          Json{{"model", model},
               {"eager_limit", format_bytes(spec.transport.eager_limit)},
               {"eager_limit_intra_host", format_bytes(spec.transport.eager_limit_intra_host)}};
    } else if (model == "nccl") {
      spec.transport = netsim::TransportModel::nccl();
      spec.transport.slots = static_cast<int>(
          tr.get_int("slots", spec.transport.slots, 1, std::numeric_limits<int>::max()));
      spec.transport.slot_bytes = tr.get_bytes("slot_bytes", spec.transport.slot_bytes);
      if (spec.transport.slot_bytes.count() < 1)
        throw ConfigError(tr.path_of("slot_bytes") + ": must be >= 1 B, got 0 B");
      net["transport"] = Json{{"model", model},
                              {"slots", spec.transport.slots},
                              {"slot_bytes", format_bytes(spec.transport.slot_bytes)}};
    }
    // FIFO transfer per connection (TransportModel::ordered), with any model; written to the resolved
    // config only when on, so that the configs without it resolve as before.
    spec.transport.ordered = tr.get_bool("ordered", false);
    if (spec.transport.ordered) {
      if (!net.contains("transport")) net["transport"] = Json{{"model", model}};
      net["transport"]["ordered"] = true;
    }
  }
  // How NCCL's collectives are carried (core/collectives/nccl_flow.h): "slice" (the default) or
  // "flow"; written to the resolved config only when "flow", so that the configs without it resolve
  // (and hash) as before.
  if (r.has("collective_granularity")) {
    const std::string g = r.get_choice("collective_granularity", "slice", {"slice", "flow"});
    if (g == "flow") {
      spec.collective_granularity = collectives::CollectiveGranularity::kFlow;
      net["collective_granularity"] = g;
    }
  }
  if (simulated) {
    merge_into(canonical, net);
    netsim::validate(spec, "cluster.");  // the simulator's own checks (e.g. that the hosts fit)
    netsim::validate_model(spec, "cluster.");
  }
  return spec;
}

// ---- one point --------------------------------------------------------------------------------------

const std::vector<std::string> kTopKeys = {
    "name",     "description", "seed",      "runtime",  "runtime_options", "cluster",
    "workload", "algorithm",   "optimizer", "schedule", "output",          "sweep"};

// At most 100 characters: the name is a folder's (results/<name>), and file systems allow 255 bytes.
bool valid_name(const std::string& s) {
  if (s.empty() || s.size() > 100) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'))
      return false;
  return true;
}

PointConfig parse_point(const Json& raw, const FileLocator& files, const Components& c,
                        double memory_limit) {
  PointConfig p;
  Json& out = p.resolved;
  out = Json::object();
  ObjectReader top(raw, "", kTopKeys);

  p.name = top.get_string("name");
  if (!valid_name(p.name)) {
    throw ConfigError(
        "name: use at most 100 letters, digits, '_', '-' and '.' (it names the output folder), got " +
        echo(p.name));
  }
  p.description = top.get_string("description", "");
  p.seed = static_cast<uint64_t>(top.get_int("seed", 1, 0));
  const std::string runtime = top.get_choice("runtime", kDefaultRuntime, c.runtimes.names());
  const RuntimeTraits runtime_traits = c.runtimes.at(runtime).traits;
  p.runtime = runtime;
  out["name"] = p.name;
  out["description"] = p.description;
  out["seed"] = p.seed;
  out["runtime"] = runtime;

  // Cluster.
  if (const Json* cluster = top.find("cluster")) {
    std::string chain;
    const Json resolved = resolve_extends(*cluster, files, 0, chain);
    Json canonical = Json::object();
    try {
      p.cluster =
          parse_cluster(resolved, runtime_traits.virtual_time, c.topologies, memory_limit, canonical);
    } catch (const ConfigError& e) {
      if (chain.empty()) throw;
      throw ConfigError(std::string(e.what()) + " (cluster extends " + chain + ")");
    }
    p.has_cluster = true;
    out["cluster"] = std::move(canonical);
  } else if (!runtime_traits.job) {
    throw ConfigError("cluster: missing (required)");
  }

  // Workload.
  {
    const Json& w = top.required("workload");
    Json canonical = Json::object();
    const auto& entry = find_entry(c.workloads, w, "workload");
    p.workload.name = entry.name;
    Json params = Json::object();
    p.workload.params = parse_params(w, "workload", entry.schema, {"name", "batch_size"}, params);
    // The per-rank batch; 32 is the paper's VGG16 batch per GPU (Gan et al., arXiv:2107.01499, Sec. 5).
    p.workload.batch_size = ObjectReader(w, "workload", keys_of(entry.schema, {"name", "batch_size"}))
                                .get_int("batch_size", 32, 1);
    canonical["name"] = entry.name;
    canonical["batch_size"] = p.workload.batch_size;
    for (auto it = params.begin(); it != params.end(); ++it)
      canonical[it.key()] = *it;
    if (p.workload.name == kProfileWorkload) {
      // A profile is a file: found and checked now, so that a bad file fails before anything runs.
      p.workload.file = p.workload.params.get_string("file");
      if (p.workload.file.empty()) {
        throw ConfigError(
            "workload.file: missing (required for \"profile\"), e.g. \"configs/workloads/vgg16.json\"");
      }
      p.workload.file_found = files.find(p.workload.file, "workload.file");
      read_profile(p.workload.file_found, p.workload.file);
    }
    out["workload"] = std::move(canonical);
  }

  // Algorithm and optimizer.
  auto component = [&](const char* key, const auto& registry, ComponentConfig& cc) {
    const Json& v = top.required(key);
    const auto& e = find_entry(registry, v, key);
    Json canonical = Json::object();
    cc.name = e.name;
    canonical["name"] = cc.name;
    cc.params = parse_params(v, key, e.schema, {"name"}, canonical);
    out[key] = std::move(canonical);
  };
  component("algorithm", c.algorithms, p.algorithm);
  component("optimizer", c.optimizers, p.optimizer);

  // Schedule.
  {
    static const Json kEmpty = Json::object();
    const Json* s = top.find("schedule");
    ObjectReader r(s ? *s : kEmpty, "schedule",
                   {"iterations", "eval_interval", "bucket_size", "overlap", "measured_from"});
    const ScheduleConfig defaults;  // core/trainer/trainer.h: 100 iterations, Bagua's 10 MiB buckets
    p.schedule.iterations = r.get_int("iterations", defaults.iterations, 1);
    p.schedule.eval_interval = r.get_int("eval_interval", defaults.eval_interval, 0);
    p.schedule.bucket_size = r.get_bytes("bucket_size", defaults.bucket_size);
    p.schedule.overlap = r.get_bool("overlap", defaults.overlap);
    out["schedule"] = Json{{"iterations", p.schedule.iterations},
                           {"eval_interval", p.schedule.eval_interval},
                           {"bucket_size", format_bytes(p.schedule.bucket_size)},
                           {"overlap", p.schedule.overlap}};
    // Which iterations time_per_iteration_s measures; listed only when given, so that the resolved
    // config (and the point id) of every config without it stays what it was.
    p.measured_from = p.schedule.iterations > 1 ? 1 : 0;
    if (r.has("measured_from")) {
      p.measured_from = r.get_int("measured_from", std::nullopt, 0);
      if (p.measured_from >= p.schedule.iterations) {
        throw ConfigError("schedule.measured_from: must be below schedule.iterations (" +
                          std::to_string(p.schedule.iterations) + "), got " +
                          std::to_string(p.measured_from));
      }
      out["schedule"]["measured_from"] = p.measured_from;
    }
  }
  check_memory(p, memory_limit);

  // Output.
  {
    static const Json kEmpty = Json::object();
    const Json* o = top.find("output");
    ObjectReader r(o ? *o : kEmpty, "output", {"dir", "trace", "trace_ranks", "trace_iterations"});
    p.output.dir = r.get_string("dir", "results/" + p.name);
    if (p.output.dir.empty()) throw ConfigError("output.dir: must not be empty");
    p.output.trace = r.get_bool("trace", false);
    out["output"] = Json{{"trace", p.output.trace}};
    // The filters are written into the resolved config only when given (points without them keep
    // their ids).
    TraceFilter& filter = p.output.trace_filter;
    if (const Json* ranks = r.find("trace_ranks")) {
      const std::string path = r.path_of("trace_ranks");
      if (!p.output.trace) throw ConfigError(path + ": needs \"trace\": true");
      if (!ranks->is_array() || ranks->empty())
        throw_type_error(path, "a non-empty array of ranks", *ranks);
      const int world = p.has_cluster ? p.cluster.world_size() : std::numeric_limits<int>::max();
      for (size_t i = 0; i < ranks->size(); ++i) {
        const std::optional<int64_t> k = json_integer((*ranks)[i]);
        const std::string at = path + "[" + std::to_string(i) + "]";
        if (!k) throw_type_error(at, "integer", (*ranks)[i]);
        if (*k < 0 || *k >= world) {
          throw ConfigError(at + ": must be a rank, 0 to " + std::to_string(world - 1) + ", got " +
                            std::to_string(*k));
        }
        if (filter.keeps_rank(static_cast<int>(*k)) && !filter.ranks.empty())
          throw ConfigError(at + ": rank " + std::to_string(*k) + " listed twice");
        filter.ranks.push_back(static_cast<int>(*k));
      }
      out["output"]["trace_ranks"] = filter.ranks;
    }
    if (const Json* its = r.find("trace_iterations")) {
      const std::string path = r.path_of("trace_iterations");
      if (!p.output.trace) throw ConfigError(path + ": needs \"trace\": true");
      const std::optional<int64_t> first =
          its->is_array() && its->size() == 2 ? json_integer((*its)[0]) : std::nullopt;
      const std::optional<int64_t> last =
          its->is_array() && its->size() == 2 ? json_integer((*its)[1]) : std::nullopt;
      if (!first || !last) throw_type_error(path, "[first, last] (iterations, from 0)", *its);
      if (*first < 0 || *last < *first || *last >= p.schedule.iterations) {
        throw ConfigError(path + ": must be [first, last] with 0 <= first <= last < " +
                          std::to_string(p.schedule.iterations) + " (schedule.iterations), got " +
                          json_text(*its));
      }
      filter.first_iteration = *first;
      filter.last_iteration = *last;
      out["output"]["trace_iterations"] = Json::array({*first, *last});
    }
  }

  // Runtime options (RuntimeOptions): accepted with every runtime (the simulator has no use for them),
  // never written to the resolved config.
  {
    static const Json kEmpty = Json::object();
    const Json* o = top.find("runtime_options");
    ObjectReader r(o ? *o : kEmpty, "runtime_options", {"watchdog"});
    if (r.has("watchdog")) {
      p.runtime_options.watchdog = r.get_time("watchdog");
      if (p.runtime_options.watchdog <= Time::zero())
        throw ConfigError("runtime_options.watchdog: must be > 0, got " +
                          json_text(r.required("watchdog")));
    }
  }
  return p;
}

std::string describe(const SweptValues& swept) {
  std::string s;
  for (const auto& [path, value] : swept)
    s += (s.empty() ? "" : ", ") + path + "=" + json_text(value);
  return s;
}

}  // namespace

namespace {

Experiment load_checked(Json config, const std::filesystem::path& config_dir,
                        const LoadOptions& options, const Components& c) {
  for (const std::string& s : options.sets)
    apply_override(config, s);
  if (!config.is_object()) throw_type_error("config", "an object", config);
  const Sweep sweep = parse_sweep(config.contains("sweep") ? &config["sweep"] : nullptr);
  const double memory_limit = options.memory_limit ? *options.memory_limit : physical_memory_bytes();
  size_t points = 1;
  for (const SweepAxis& a : sweep.axes)
    points = sweep.mode == SweepMode::kGrid ? points * a.values.size() : a.values.size();
  check_sweep_memory(points, memory_limit);
  const std::vector<SweptValues> swept = expand(sweep);
  const FileLocator files(config_dir);

  Experiment e;
  for (const SweepAxis& a : sweep.axes)
    e.axes.push_back(a.path);
  const int n = static_cast<int>(swept.size());
  const int width = std::max<int>(3, static_cast<int>(std::to_string(n - 1).size()));
  for (int i = 0; i < n; ++i) {
    Json raw = config;
    raw.erase("sweep");
    for (const auto& [path, value] : swept[static_cast<size_t>(i)]) {
      try {
        set_path(raw, path, value);
      } catch (const ConfigError& err) {
        throw ConfigError("sweep.axes." + path + ": " + err.what());
      }
    }
    try {
      PointConfig p = parse_point(raw, files, c, memory_limit);
      p.index = i;
      p.swept = swept[static_cast<size_t>(i)];
      char hash[17];
      std::snprintf(hash, sizeof hash, "%016llx",
                    static_cast<unsigned long long>(fnv1a64(p.resolved.dump())));
      std::string index = std::to_string(i);
      p.id = "p" + std::string(static_cast<size_t>(width) - index.size(), '0') + index + "-" +
             std::string(hash, 8);
      e.points.push_back(std::move(p));
    } catch (const ConfigError& err) {
      if (n == 1) throw;
      throw ConfigError(std::string(err.what()) + " (sweep point " + std::to_string(i + 1) + "/" +
                        std::to_string(n) + ": " + describe(swept[static_cast<size_t>(i)]) + ")");
    }
  }
  e.name = e.points.front().name;
  e.output_dir = options.out_dir ? *options.out_dir : e.points.front().output.dir;
  if (e.output_dir.empty()) throw ConfigError("--out: must not be empty");
  return e;
}

}  // namespace

Experiment load_experiment_json(Json config, const std::filesystem::path& config_dir,
                                const LoadOptions& options, const Components& c) {
  try {
    return load_checked(std::move(config), config_dir, options, c);
  } catch (const ConfigError& e) {
    throw ConfigError(one_line(e.what()));  // every message one line of readable length
  }
}

Experiment load_experiment(const std::filesystem::path& file, const LoadOptions& options,
                           const Components& c) {
  Json config;
  try {
    config = read_json_file(file, file.string());
  } catch (const ConfigError& e) {
    throw ConfigError(one_line(e.what()));
  }
  return load_experiment_json(std::move(config), file.parent_path(), options, c);
}

}  // namespace bagua::experiments
