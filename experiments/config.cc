#include "experiments/config.h"

#include <cmath>
#include <cstdio>
#include <map>

#include "core/check.h"
#include "experiments/profile_file.h"
#include "experiments/quantity.h"

namespace bagua::experiments {

netsim::DeviceSpec default_device() {
  netsim::DeviceSpec d;
  // NVIDIA Tesla V100 SXM2, the paper's GPU (Gan et al., BAGUA, arXiv:2107.01499, Sec. 5: 8 V100 32GB
  // per server). NVIDIA V100 Tensor Core GPU datasheet: single-precision peak 15.7 TFLOPS (SXM2) ...
  d.peak_flops = 15.7e12;
  // ... and HBM2 memory bandwidth 900 GB/s.
  d.memory_bandwidth = Bandwidth::gigabytes_per_second(900);
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
    throw ConfigError("--set \"" + assignment +
                      "\": expected dotted.path=value, e.g. cluster.nic.bandwidth=\"10 Gbps\"");
  }
  const std::string path = assignment.substr(0, eq);
  try {
    set_path(config, path, parse_override_value(std::string_view(assignment).substr(eq + 1)));
  } catch (const ConfigError& e) {
    throw ConfigError("--set " + path + ": " + e.what());
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
    throw ConfigError(path + ": file \"" + name +
                      "\" not found (looked in the current directory and above the config)");
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
      throw_type_error(path, "integer", value);
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
  for (const auto* e : registry.entries())
    known += (known.empty() ? "" : ", ") + e->name;
  throw ConfigError(path + ".name: unknown " + registry.kind() + " \"" + name + "\" (known: " + known +
                    ")");
}

// ---- cluster ----------------------------------------------------------------------------------------

const std::vector<std::string> kClusterKeys = {"extends",  "hosts",  "devices_per_host",
                                               "intra_host", "nic",  "topology",
                                               "device",   "factors", "transport"};

// Replaces "extends" by the extended file's content (itself resolved), the keys given here overriding.
Json resolve_extends(const Json& cluster, const FileLocator& files, int depth, std::string& chain) {
  if (!cluster.is_object() || !cluster.contains("extends")) return cluster;
  const Json& ext = cluster["extends"];
  if (!ext.is_string()) throw_type_error("cluster.extends", "a file name string", ext);
  if (depth > 8)
    throw ConfigError("cluster.extends: more than 8 levels of extends (a cycle?): " + chain);
  const std::string name = ext.get<std::string>();
  chain += (chain.empty() ? "" : " -> ") + name;
  Json base = read_json_file(files.find(name, "cluster.extends"), name);
  if (!base.is_object()) throw_type_error("cluster.extends (" + name + ")", "a cluster object", base);
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
                                  const netsim::TopologyRegistry& topologies, Json& canonical) {
  netsim::ClusterSpec spec;
  ObjectReader r(raw, "cluster", kClusterKeys);
  spec.hosts = static_cast<int>(r.get_int("hosts", std::nullopt, 1));
  spec.devices_per_host = static_cast<int>(r.get_int("devices_per_host", std::nullopt, 1));
  if (static_cast<int64_t>(spec.hosts) * spec.devices_per_host > (int64_t{1} << 24)) {
    throw ConfigError("cluster: hosts x devices_per_host must be at most 2^24, got " +
                      std::to_string(spec.hosts) + " x " + std::to_string(spec.devices_per_host));
  }
  canonical["hosts"] = spec.hosts;
  canonical["devices_per_host"] = spec.devices_per_host;

  // The simulator's network and device model: checked for every runtime, kept only for the simulator.
  Json net = Json::object();
  const bool has_links = r.has("intra_host") || r.has("nic");
  if (simulated || has_links) {
    spec.intra_host = parse_link(r, "intra_host", net);
    spec.nic = parse_link(r, "nic", net);
  }
  spec.topology = parse_topology(r, topologies, net);

  spec.device = default_device();
  if (const Json* d = r.find("device")) {
    ObjectReader dr(*d, "cluster.device", {"peak_flops", "memory_bandwidth"});
    spec.device.peak_flops = dr.get_flops("peak_flops", spec.device.peak_flops);
    if (dr.has("memory_bandwidth")) spec.device.memory_bandwidth = dr.get_bandwidth("memory_bandwidth");
  }
  net["device"] = Json{{"peak_flops", format_flops(spec.device.peak_flops)},
                       {"memory_bandwidth", format_bandwidth(spec.device.memory_bandwidth)}};

  // DESIGN: model factors default to 1 (and no window cap), so that the uncalibrated model is exactly
  // the alpha-beta closed form.
  if (const Json* f = r.find("factors")) {
    ObjectReader fr(
        *f, "cluster.factors",
        {"bandwidth_efficiency", "latency_factor", "flow_window_cap", "tcp_window",
         "connections_per_peer", "host_bandwidth_ceiling", "message_overhead", "message_gap"});
    spec.factors.bandwidth_efficiency =
        fr.get_double("bandwidth_efficiency", 1.0, 0.0, 1.0, /*min_exclusive=*/true);
    spec.factors.latency_factor =
        fr.get_double("latency_factor", 1.0, 0.0, std::nullopt, /*min_exclusive=*/true);
    // "inf" (the default) or a bandwidth.
    auto bandwidth_or_inf = [&](const char* key, Bandwidth& out) {
      const Json* v = fr.find(key);
      if (v && !(v->is_string() && v->get<std::string>() == "inf")) out = fr.get_bandwidth(key);
    };
    bandwidth_or_inf("flow_window_cap", spec.factors.flow_window_cap);
    spec.factors.tcp_window = fr.get_bytes("tcp_window", Bytes(0));
    spec.factors.connections_per_peer = static_cast<int>(fr.get_int("connections_per_peer", 1, 1));
    bandwidth_or_inf("host_bandwidth_ceiling", spec.factors.host_bandwidth_ceiling);
    if (fr.has("message_overhead")) spec.factors.message_overhead = fr.get_time("message_overhead");
    if (fr.has("message_gap")) spec.factors.message_gap = fr.get_time("message_gap");
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
      spec.transport.slots = static_cast<int>(tr.get_int("slots", spec.transport.slots, 1));
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
  if (simulated) {
    merge_into(canonical, net);
    netsim::validate(spec, "cluster.");  // the simulator's own checks (e.g. that the hosts fit)
    netsim::validate_model(spec, "cluster.");
  }
  return spec;
}

// ---- one point --------------------------------------------------------------------------------------

const std::vector<std::string> kTopKeys = {"name",     "description", "seed",      "runtime",
                                           "cluster",  "workload",    "algorithm", "optimizer",
                                           "schedule", "output",      "sweep"};

bool valid_name(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'))
      return false;
  return true;
}

PointConfig parse_point(const Json& raw, const FileLocator& files, const Components& c) {
  PointConfig p;
  Json& out = p.resolved;
  out = Json::object();
  ObjectReader top(raw, "", kTopKeys);

  p.name = top.get_string("name");
  if (!valid_name(p.name)) {
    throw ConfigError(
        "name: use letters, digits, '_', '-' and '.' only (it names the output folder), got \"" +
        p.name + "\"");
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
      p.cluster = parse_cluster(resolved, runtime_traits.virtual_time, c.topologies, canonical);
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

  // Output.
  {
    static const Json kEmpty = Json::object();
    const Json* o = top.find("output");
    ObjectReader r(o ? *o : kEmpty, "output", {"dir", "trace"});
    p.output.dir = r.get_string("dir", "results/" + p.name);
    if (p.output.dir.empty()) throw ConfigError("output.dir: must not be empty");
    p.output.trace = r.get_bool("trace", false);
    if (p.output.trace && !runtime_traits.virtual_time) {
      throw ConfigError("output.trace: only the simulator records a timeline (runtime is \"" + runtime +
                        "\")");
    }
    out["output"] = Json{{"trace", p.output.trace}};
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

Experiment load_experiment_json(Json config, const std::filesystem::path& config_dir,
                                const LoadOptions& options, const Components& c) {
  for (const std::string& s : options.sets)
    apply_override(config, s);
  if (!config.is_object()) throw_type_error("config", "an object", config);
  const Sweep sweep = parse_sweep(config.contains("sweep") ? &config["sweep"] : nullptr);
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
      PointConfig p = parse_point(raw, files, c);
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

Experiment load_experiment(const std::filesystem::path& file, const LoadOptions& options,
                           const Components& c) {
  Json config = read_json_file(file, file.string());
  return load_experiment_json(std::move(config), file.parent_path(), options, c);
}

}  // namespace bagua::experiments
