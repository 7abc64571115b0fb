#include "experiments/recommend.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <ostream>
#include <regex>
#include <sstream>
#include <thread>

#include "core/check.h"
#include "experiments/config.h"
#include "experiments/results.h"
#include "experiments/runner.h"

namespace bagua::experiments {

namespace {

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b])))
    ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])))
    --e;
  return std::string(s.substr(b, e - b));
}

// Splits at the commas outside parentheses.
std::vector<std::string> split_top_level(std::string_view s) {
  std::vector<std::string> parts;
  int depth = 0;
  size_t begin = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || (s[i] == ',' && depth == 0)) {
      parts.push_back(trim(s.substr(begin, i - begin)));
      begin = i + 1;
    } else if (s[i] == '(') {
      ++depth;
    } else if (s[i] == ')') {
      --depth;
    }
  }
  return parts;
}

std::string known_algorithms(const Components& c) {
  std::string known;
  for (const auto* e : c.algorithms.entries())
    known += (known.empty() ? "" : ", ") + e->name;
  return known;
}

// Every key of `cluster` (at any depth) named "latency" or ending in "_latency" set to zero.
void zero_latencies(Json& v) {
  if (!v.is_object()) return;
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string& k = it.key();
    const bool latency = k == "latency" || (k.size() > 8 && k.ends_with("_latency"));
    if (latency && it.value().is_string())
      it.value() = "0 s";
    else
      zero_latencies(it.value());
  }
}

// The convergence suite's summary, looked up as config files are: the current directory, then the
// config's directory and each directory above it.
std::string find_convergence_summary(const std::filesystem::path& config) {
  const std::filesystem::path rel = std::filesystem::path("results") / "convergence" / "summary.md";
  std::vector<std::filesystem::path> dirs = {std::filesystem::current_path()};
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::absolute(config, ec).parent_path();
  while (!dir.empty()) {
    dirs.push_back(dir);
    if (dir == dir.root_path()) break;
    dir = dir.parent_path();
  }
  for (const auto& d : dirs) {
    std::ifstream in(d / rel);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      return ss.str();
    }
  }
  return "";
}

std::string param_string(const Json& params, const char* key, const std::string& fallback) {
  return params.contains(key) && params[key].is_string() ? params[key].get<std::string>() : fallback;
}
bool param_bool(const Json& params, const char* key) {
  return params.contains(key) && params[key].is_boolean() && params[key].get<bool>();
}

// The worst final-loss ratio of the summary's first table row whose label starts with `label_prefix`:
// " (convergence suite: final loss up to X x gradient allreduce's, COLUMN; results/convergence/summary.md)",
// or "" when the summary has no such row.
std::string measured_ratio(const std::string& summary_md, const std::string& label_prefix) {
  if (summary_md.empty()) return "";
  std::istringstream in(summary_md);
  std::string line;
  std::vector<std::string> header;
  while (std::getline(in, line)) {
    if (!line.starts_with("|")) {
      if (!header.empty()) break;  // only the first table: the overview of every model
      continue;
    }
    std::vector<std::string> cells;
    std::string cell;
    std::istringstream row(line.substr(1));
    while (std::getline(row, cell, '|'))
      cells.push_back(trim(cell));
    if (header.empty()) {
      header = cells;
      continue;
    }
    if (cells.empty() || cells[0].starts_with("-") || !cells[0].starts_with(label_prefix)) continue;
    double worst = 0;
    std::string where;
    for (size_t i = 1; i < cells.size() && i < header.size(); ++i) {
      char* end = nullptr;
      const double x = std::strtod(cells[i].c_str(), &end);
      if (end == cells[i].c_str() || !std::isfinite(x)) continue;
      if (x > worst) {
        worst = x;
        where = header[i];
      }
    }
    if (where.empty()) return "";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3g", worst);
    return " (convergence suite, \"" + cells[0] + "\": final loss up to " + buf +
           " x gradient allreduce's, " + where + "; results/convergence/summary.md)";
  }
  return "";
}

struct Task {
  size_t point = 0;      // index into the config's points
  size_t candidate = 0;  // index into the point's candidates
  bool zero_latency = false;
  int cpu_hosts_dropped = 0;  // the config's CPU hosts the candidate runs without
  PointConfig config;
  int64_t window_begin = -1;  // qadam: the first iteration of the compressed phase
  Json params;                // the candidate's resolved parameters (before qadam's warm-up of one)
  std::string error;
  PointMetrics metrics;
  double inter_host_bytes = 0;
};

// The mean iteration time over iterations [begin, end) of the slowest rank's rows, from the end of
// iteration begin - 1 to the end of the last.
double window_time(const PointMetrics& m, int64_t begin) {
  const auto n = static_cast<int64_t>(m.rows.size());
  if (begin < 1 || begin >= n) return m.time_per_iteration_s;
  return (m.rows[static_cast<size_t>(n - 1)].time_s - m.rows[static_cast<size_t>(begin - 1)].time_s) /
         static_cast<double>(n - begin);
}

std::string bytes_text(double bytes) {
  char buf[32];
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (bytes >= 1000 && u < 4) {
    bytes /= 1000;
    ++u;
  }
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.3g %s", bytes, units[u]);
  return buf;
}

std::string seconds_text(double s) {
  if (!std::isfinite(s)) return "-";
  return to_string(Time::ns(static_cast<int64_t>(std::llround(s * 1e9))));
}

std::string params_text(const Json& params) {
  std::string s;
  for (auto it = params.begin(); it != params.end(); ++it)
    s += (s.empty() ? "" : ",") + it.key() + "=" +
         (it.value().is_string() ? it.value().get<std::string>() : it.value().dump());
  return s;
}

// Where an algorithm's servers run: byteps's `servers` (core/algorithms/byteps.h), colocated on the
// worker hosts or on the cluster's CPU hosts. The parameter's schema entry when the algorithm has one
// with choices, else nullptr.
constexpr const char* kServers = "servers";
const ParamSpec* server_placements(const std::string& algorithm, const Components& c) {
  const auto* entry = c.algorithms.find(algorithm);
  const ParamSpec* spec = entry ? entry->schema.find(kServers) : nullptr;
  return spec && spec->type == ParamType::kString && !spec->choices.empty() ? spec : nullptr;
}

// How candidate k is named in the text: its algorithm, followed, where another candidate of the list
// runs the same algorithm, by the parameters it sets that the other ones do not set alike
// ("byteps(servers=cpu_hosts)").
std::string candidate_label(const std::vector<Candidate>& list, size_t k) {
  const Candidate& self = list[k];
  Json differing = Json::object();
  for (auto it = self.params.begin(); it != self.params.end(); ++it) {
    for (size_t o = 0; o < list.size(); ++o) {
      if (o == k || list[o].name != self.name) continue;
      if (!list[o].params.contains(it.key()) || list[o].params[it.key()] != it.value()) {
        differing[it.key()] = it.value();
        break;
      }
    }
  }
  return differing.empty() ? self.name : self.name + "(" + params_text(differing) + ")";
}

// " (without the 16 CPU hosts: it has no use for them)", " (servers on the 16 CPU hosts)", or "" on a
// cluster without CPU hosts.
std::string cluster_note(const Recommendation& r) {
  if (r.cpu_hosts_dropped > 0)
    return " (without the " + std::to_string(r.cpu_hosts_dropped) +
           " CPU hosts: it has no use for them)";
  if (r.cpu_hosts > 0) return " (servers on the " + std::to_string(r.cpu_hosts) + " CPU hosts)";
  return "";
}

}  // namespace

std::vector<Candidate> parse_candidates(const std::string& list, const Components& c) {
  std::vector<Candidate> out;
  for (const std::string& item : split_top_level(list)) {
    if (item.empty()) throw ConfigError("--algorithms: empty entry in \"" + list + "\"");
    Candidate k;
    const size_t open = item.find('(');
    k.name = trim(item.substr(0, open));
    if (open != std::string::npos) {
      if (item.back() != ')')
        throw ConfigError("--algorithms: \"" + item + "\": expected name(key=value,...)");
      for (const std::string& kv : split_top_level(item.substr(open + 1, item.size() - open - 2))) {
        const size_t eq = kv.find('=');
        if (kv.empty() || eq == std::string::npos || eq == 0)
          throw ConfigError("--algorithms: \"" + item + "\": expected key=value, got \"" + kv + "\"");
        const std::string key = trim(kv.substr(0, eq));
        k.params[key] =
            parse_override_value(trim(kv.substr(eq + 1)), "--algorithms " + k.name + "." + key);
      }
    }
    if (!c.algorithms.find(k.name)) {
      throw ConfigError("--algorithms: unknown algorithm \"" + k.name +
                        "\" (known: " + known_algorithms(c) + ")");
    }
    out.push_back(std::move(k));
  }
  return out;
}

std::vector<std::string> convergence_caveats(const std::string& algorithm, const Json& params,
                                             const std::string& summary_md) {
  std::vector<std::string> caveats;
  const std::string compressor = param_string(params, "compressor", "");
  const bool ef = param_bool(params, "error_feedback");
  const bool biased = compressor == "sign" || compressor == "topk" ||
                      (compressor == "randomk" && !param_bool(params, "randomk_unbiased"));
  auto compressor_label = [&]() -> std::string {
    if (compressor == "minmax_uint8") return "uint8";
    if (compressor == "topk") return "top-";
    return compressor;
  };
  if (algorithm == "async_model_average") {
    caveats.push_back("asynchronous: replicas average stale weights in the background" +
                      measured_ratio(summary_md, "async averaging"));
  }
  if (algorithm == "decentralized") {
    caveats.push_back(
        "decentralized: replicas disagree between averaging rounds" +
        measured_ratio(summary_md, "decentralized " + param_string(params, "peer_selection_mode", "")));
  }
  if (algorithm == "low_precision_decentralized" || algorithm == "choco_sgd") {
    const std::string label =
        algorithm == "choco_sgd" ? "CHOCO-SGD " + compressor_label()
                                 : "low-prec. decentralized " + compressor_label() + (ef ? " +EF" : "");
    caveats.push_back("decentralized: replicas disagree between averaging rounds" +
                      measured_ratio(summary_md, label));
  }
  if (biased && !ef && algorithm != "qadam" && algorithm != "choco_sgd") {
    caveats.push_back(
        "biased compressor (" + compressor + ") without error feedback" +
        measured_ratio(summary_md, (algorithm == "bytegrad" ? "bytegrad " : "") + compressor_label()));
  }
  if (algorithm == "local_sgd" && params.value("period", 1) > 1) {
    caveats.push_back(
        "local steps: weights averaged every " + std::to_string(params.value("period", 1)) + " steps" +
        measured_ratio(summary_md, "local SGD H=" + std::to_string(params.value("period", 1))));
  }
  if (algorithm == "qadam") {
    caveats.push_back(std::string("compressed momentum") +
                      (compressor == "sign" ? " (1-bit, error feedback)" : " (8-bit)") +
                      " and frozen variance after warm-up" +
                      measured_ratio(summary_md, compressor == "sign" ? "QAdam 1-bit" : "QAdam uint8"));
  }
  return caveats;
}

std::vector<std::vector<Recommendation>> recommend(const std::filesystem::path& config,
                                                   const RecommendOptions& options, const Components& c,
                                                   Backends& backends) {
  Json raw = read_json_file(config, config.string());
  for (const std::string& s : options.sets)
    apply_override(raw, s);
  // The candidates are simulated whatever runtime the config names: the same world on the simulator.
  raw["runtime"] = kDefaultRuntime;
  if (raw.contains("output") && raw["output"].is_object()) raw["output"].erase("trace");
  const std::filesystem::path config_dir = config.parent_path();

  std::vector<Candidate> candidates;
  // A grid sweep over "algorithm" names the candidates (the paper's sweeps do): they are ranked on each
  // point of the other axes.
  Json* axes = raw.contains("sweep") && raw["sweep"].is_object() && raw["sweep"].contains("axes")
                   ? &raw["sweep"]["axes"]
                   : nullptr;
  const bool grid = axes && raw["sweep"].value("mode", std::string("grid")) == "grid";
  if (grid && axes->is_object() && axes->contains("algorithm") && (*axes)["algorithm"].is_array()) {
    std::vector<Candidate> swept;
    for (const Json& a : (*axes)["algorithm"]) {
      if (!a.is_object() || !a.contains("name") || !a["name"].is_string()) {
        throw ConfigError("sweep.axes.algorithm: expected objects with a \"name\", got " +
                          json_text(a));
      }
      Candidate k;
      k.name = a["name"].get<std::string>();
      k.params = a;
      k.params.erase("name");
      swept.push_back(std::move(k));
    }
    axes->erase("algorithm");
    if (axes->empty()) raw.erase("sweep");
    raw["algorithm"] = Json{{"name", swept.front().name}};
    if (options.algorithms.empty()) candidates = std::move(swept);
  }
  const Experiment base = load_experiment_json(raw, config_dir, LoadOptions{}, c);
  if (!options.algorithms.empty()) {
    candidates = parse_candidates(options.algorithms, c);
  } else if (candidates.empty()) {
    // Every registered algorithm with its defaults; the config's own with the config's parameters.
    const bool any_cpu_hosts = std::any_of(base.points.begin(), base.points.end(), [](const auto& p) {
      return p.has_cluster && p.cluster.cpu_hosts.count > 0;
    });
    const Json& own = raw.contains("algorithm") ? raw["algorithm"] : Json();
    for (const auto* e : c.algorithms.entries()) {
      Candidate k;
      k.name = e->name;
      if (own.is_object() && own.value("name", "") == e->name) {
        k.params = own;
        k.params.erase("name");
        // On a cluster with CPU hosts both placements of the config's own servers are ranked (each
        // point's candidates, below).
        if (any_cpu_hosts && server_placements(k.name, c)) k.params.erase(kServers);
      }
      candidates.push_back(std::move(k));
    }
  }

  // Each point's candidates: where the point's cluster has CPU hosts, a candidate that leaves its
  // servers' placement open runs once per placement.
  std::vector<std::vector<Candidate>> point_candidates;
  for (const PointConfig& point : base.points) {
    const bool cpu_hosts = point.has_cluster && point.cluster.cpu_hosts.count > 0;
    std::vector<Candidate> list;
    for (const Candidate& k : candidates) {
      const ParamSpec* servers = cpu_hosts ? server_placements(k.name, c) : nullptr;
      if (!servers || k.params.contains(kServers)) {
        list.push_back(k);
        continue;
      }
      for (const std::string& placement : servers->choices) {
        Candidate p = k;
        p.params[kServers] = placement;
        list.push_back(std::move(p));
      }
    }
    point_candidates.push_back(std::move(list));
  }

  // The tasks: each point x candidate, and the same with zero latency; first[i] is point i's first.
  std::vector<Task> tasks;
  std::vector<size_t> first;
  for (size_t i = 0; i < base.points.size(); ++i) {
    first.push_back(tasks.size());
    const std::vector<Candidate>& list = point_candidates[i];
    for (size_t k = 0; k < list.size(); ++k) {
      for (const bool zero : {false, true}) {
        Task t;
        t.point = i;
        t.candidate = k;
        t.zero_latency = zero;
        try {
          Json j = base.points[i].resolved;
          j["algorithm"] = Json{{"name", list[k].name}};
          merge_into(j["algorithm"], list[k].params);
          if (options.iterations > 0) j["schedule"]["iterations"] = options.iterations;
          if (zero) zero_latencies(j["cluster"]);
          PointConfig p = load_experiment_json(j, config_dir, LoadOptions{}, c).points.front();
          // A candidate that runs nothing on service ranks runs on the same cluster without the CPU
          // hosts (they would sit idle): the run `bagua run` makes of the config without
          // cluster.cpu_hosts, which refuses the CPU hosts for such an algorithm (run_ranks,
          // experiments/runner.cc).
          const int cpu_hosts = p.has_cluster ? p.cluster.cpu_hosts.count : 0;
          if (cpu_hosts > 0 && !uses_service_ranks(p.algorithm.name, p.algorithm.params, c)) {
            j["cluster"].erase("cpu_hosts");
            p = load_experiment_json(j, config_dir, LoadOptions{}, c).points.front();
            t.cpu_hosts_dropped = cpu_hosts;
          }
          const Json resolved_algorithm = p.resolved["algorithm"];  // p is replaced below
          t.params = resolved_algorithm;
          t.params.erase("name");
          if (p.algorithm.name == "qadam" && resolved_algorithm.value("warmup_steps", int64_t{0}) > 0) {
            // Timed in the compressed phase. Its message sizes do not depend on the data (MinMax
            // uint8 and sign send a fixed size per element), so the phase's time does not depend on
            // how long the warm-up was: one full-precision step, then the window after it.
            j["algorithm"]["warmup_steps"] = 1;
            j["schedule"]["iterations"] = 2 + std::max<int64_t>(2, p.schedule.iterations);
            p = load_experiment_json(j, config_dir, LoadOptions{}, c).points.front();
            t.window_begin = 2;
          }
          // Communication every H steps: the measured window (every iteration after the first) spans
          // whole periods, so it holds as many averaging steps as a long run has per H iterations.
          for (const char* key : {"period", "communication_interval"}) {
            const int64_t h = resolved_algorithm.value(key, int64_t{1});
            const int64_t n = p.schedule.iterations;
            const int64_t m = std::max<int64_t>(1, p.measured_from);  // the window's first iteration
            if (h > 1 && t.window_begin < 0 && (n - m) % h != 0) {
              j["schedule"]["iterations"] = m + h * std::max<int64_t>(1, (n - m + h - 1) / h);
              p = load_experiment_json(j, config_dir, LoadOptions{}, c).points.front();
            }
          }
          t.config = std::move(p);
        } catch (const ConfigError& err) {
          // A parameter the candidate's algorithm rejects: the user's mistake, not the world's.
          throw ConfigError("--algorithms: " + list[k].name + ": " + err.what());
        }
        tasks.push_back(std::move(t));
      }
    }
  }

  // Simulations are independent: a pool of workers takes the next task.
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t n = next++; n < tasks.size(); n = next++) {
      Task& t = tasks[n];
      if (!t.error.empty()) continue;
      try {
        RanksRun run = run_ranks(t.config, c, backends);
        t.metrics = compute_metrics(run.ranks, t.config.workload.batch_size, run.optimal_loss,
                                    t.config.measured_from);
        if (run.report) {
          static const std::regex kNicUp(R"(host\d+\.nic\d*\.up)");
          double sent = 0;
          for (const LinkStats& l : run.report->links)
            if (std::regex_match(l.name, kNicUp)) sent += static_cast<double>(l.carried.count());
          t.inter_host_bytes = sent / static_cast<double>(std::max<int64_t>(1, t.metrics.iterations)) /
                               static_cast<double>(std::max(1, t.config.cluster.hosts));
        }
      } catch (const std::exception& err) {
        t.error = err.what();
      }
    }
  };
  const int jobs = std::max(1, std::min<int>(options.jobs, static_cast<int>(tasks.size())));
  std::vector<std::thread> workers;
  for (int w = 1; w < jobs; ++w)
    workers.emplace_back(work);
  work();
  for (std::thread& t : workers)
    t.join();

  const std::string summary_md = find_convergence_summary(config);
  std::vector<std::vector<Recommendation>> ranked(base.points.size());
  for (size_t i = 0; i < base.points.size(); ++i) {
    std::vector<Recommendation>& list = ranked[i];
    const std::vector<Candidate>& candidates_i = point_candidates[i];
    for (size_t k = 0; k < candidates_i.size(); ++k) {
      const Task& t = tasks[first[i] + k * 2];
      const Task& t0 = tasks[first[i] + k * 2 + 1];
      Recommendation r;
      r.algorithm = candidates_i[k].name;
      r.label = candidate_label(candidates_i, k);
      r.swept = Json::object();
      for (const auto& [path, value] : base.points[i].swept)
        r.swept[path] = value;
      r.cpu_hosts_dropped = t.cpu_hosts_dropped;
      r.cpu_hosts = t.config.has_cluster ? t.config.cluster.cpu_hosts.count : 0;
      if (!t.error.empty()) {
        r.point = "";
        r.params = candidates_i[k].params;
        r.time_per_iteration_s = std::nan("");
        r.caveats.push_back("not applicable: " + t.error);
        list.push_back(std::move(r));
        continue;
      }
      r.point = t.config.id;
      r.params = t.params;
      r.iterations = t.config.schedule.iterations;
      r.time_per_iteration_s = window_time(t.metrics, t.window_begin);
      r.samples_per_s = static_cast<double>(t.metrics.world_size * t.config.workload.batch_size) /
                        r.time_per_iteration_s;
      r.inter_host_bytes = t.inter_host_bytes;
      r.exposed_comm_s = r.time_per_iteration_s - t.metrics.compute_per_iteration_s;
      r.latency_bound_s =
          t0.error.empty()
              ? std::max(0.0, r.time_per_iteration_s - window_time(t0.metrics, t0.window_begin))
              : std::nan("");
      r.caveats = convergence_caveats(r.algorithm, r.params, summary_md);
      list.push_back(std::move(r));
    }
    std::stable_sort(list.begin(), list.end(), [](const Recommendation& a, const Recommendation& b) {
      const bool an = std::isnan(a.time_per_iteration_s), bn = std::isnan(b.time_per_iteration_s);
      if (an != bn) return bn;  // the runs that failed last
      return !an && a.time_per_iteration_s < b.time_per_iteration_s;
    });
    // The reference: ddp, else gradient_allreduce, else the slowest that ran.
    const Recommendation* ref = nullptr;
    for (const char* name : {"ddp", "gradient_allreduce"}) {
      for (const Recommendation& r : list)
        if (!ref && r.algorithm == name && !std::isnan(r.time_per_iteration_s)) ref = &r;
    }
    for (const Recommendation& r : list)
      if (!ref && !std::isnan(r.time_per_iteration_s)) ref = &r;  // the fastest, until a slower one
    if (ref && ref->algorithm != "ddp" && ref->algorithm != "gradient_allreduce") {
      for (const Recommendation& r : list)
        if (!std::isnan(r.time_per_iteration_s)) ref = &r;  // sorted: the last that ran is the slowest
    }
    const double ref_time = ref ? ref->time_per_iteration_s : std::nan("");
    const std::string ref_name = ref ? ref->algorithm : "";
    for (Recommendation& r : list) {
      r.speedup = ref_time / r.time_per_iteration_s;
      r.speedup_over = ref_name;
    }
  }
  return ranked;
}

void print_recommendations(const std::vector<std::vector<Recommendation>>& ranked,
                           const RecommendOptions& options, std::ostream& out) {
  if (options.json) {
    Json list = Json::array();
    for (const auto& point : ranked) {
      int rank = 0;
      for (const Recommendation& r : point) {
        const bool ran = !std::isnan(r.time_per_iteration_s);
        auto num = [&](double x) { return ran && std::isfinite(x) ? Json(x) : Json(); };
        list.push_back(Json{{"point", r.point},
                            {"swept", r.swept},
                            {"rank", ran ? Json(++rank) : Json()},
                            {"algorithm", r.algorithm},
                            {"label", r.label},
                            {"params", r.params},
                            {"iterations", ran ? Json(r.iterations) : Json()},
                            {"time_per_iteration_s", num(r.time_per_iteration_s)},
                            {"samples_per_s", num(r.samples_per_s)},
                            {"speedup", num(r.speedup)},
                            {"speedup_over", r.speedup_over},
                            {"inter_host_bytes_per_iteration", num(r.inter_host_bytes)},
                            {"exposed_comm_per_iteration_s", num(r.exposed_comm_s)},
                            {"latency_bound_s", num(r.latency_bound_s)},
                            {"caveats", r.caveats},
                            {"cpu_hosts", r.cpu_hosts},
                            {"cpu_hosts_dropped", r.cpu_hosts_dropped}});
      }
    }
    out << list.dump(2) << "\n";
    return;
  }
  for (size_t i = 0; i < ranked.size(); ++i) {
    const auto& point = ranked[i];
    if (ranked.size() > 1) {
      out << "point " << (i + 1) << "/" << ranked.size() << ":";
      for (auto it = point.front().swept.begin(); it != point.front().swept.end(); ++it)
        out << " " << it.key() << "="
            << (it.value().is_string() ? it.value().get<std::string>() : it.value().dump());
      out << "\n";
    }
    size_t width = 9;
    int config_cpu_hosts = 0;  // the CPU hosts of the point's cluster (0: none, and no column for them)
    for (const Recommendation& r : point) {
      width = std::max(width, r.label.size());
      config_cpu_hosts = std::max({config_cpu_hosts, r.cpu_hosts, r.cpu_hosts_dropped});
    }
    if (!point.empty() && !point.front().speedup_over.empty()) {
      out << "  speed-up over " << point.front().speedup_over
          << (point.front().speedup_over == "ddp" ? "" : " (no ddp among the candidates)") << "\n";
    }
    if (config_cpu_hosts > 0) {
      out << "  the cluster's " << config_cpu_hosts
          << " CPU hosts serve the candidates that run servers on them; the others run without them "
             "(same hosts, NICs and topology otherwise)\n";
    }
    // The CPU hosts column, on a cluster with CPU hosts: the count each row ran with, or "none".
    auto cpu_column = [&](const std::string& value) -> std::string {
      if (config_cpu_hosts == 0) return "\n";
      char cell[32];
      std::snprintf(cell, sizeof cell, " %9s\n", value.c_str());
      return cell;
    };
    char line[512];
    std::snprintf(line, sizeof line, "  %-4s %-*s %14s %11s %9s %15s %14s %14s", "rank",
                  static_cast<int>(width), "algorithm", "time/iteration", "samples/s", "speed-up",
                  "sent/host/iter", "exposed comm", "latency-bound");
    out << line << cpu_column("CPU hosts");
    int rank = 0;
    for (const Recommendation& r : point) {
      if (std::isnan(r.time_per_iteration_s)) continue;
      char speed[32], samples[32];
      std::snprintf(speed, sizeof speed, "%.3gx", r.speedup);
      std::snprintf(samples, sizeof samples, "%.4g", r.samples_per_s);
      std::snprintf(line, sizeof line, "  %-4d %-*s %14s %11s %9s %15s %14s %14s", ++rank,
                    static_cast<int>(width), r.label.c_str(),
                    seconds_text(r.time_per_iteration_s).c_str(), samples, speed,
                    bytes_text(r.inter_host_bytes).c_str(), seconds_text(r.exposed_comm_s).c_str(),
                    seconds_text(r.latency_bound_s).c_str());
      out << line << cpu_column(r.cpu_hosts > 0 ? std::to_string(r.cpu_hosts) : "none");
    }
    const Recommendation* first = point.empty() ? nullptr : &point[0];
    const Recommendation* second = point.size() > 1 ? &point[1] : nullptr;
    if (first && !std::isnan(first->time_per_iteration_s)) {
      out << "  fastest: " << first->algorithm;
      if (!first->params.empty()) out << " (" << params_text(first->params) << ")";
      if (second && !std::isnan(second->time_per_iteration_s)) {
        char margin[32];
        std::snprintf(margin, sizeof margin, "%.1f%%",
                      100.0 * (second->time_per_iteration_s / first->time_per_iteration_s - 1));
        out << ", " << margin << " ahead of the runner-up " << second->label;
      }
      out << "\n  why:\n";
      for (const Recommendation& r : point) {
        if (std::isnan(r.time_per_iteration_s)) continue;
        const double share = r.exposed_comm_s / r.time_per_iteration_s;
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.0f%%", 100.0 * share);
        out << "    " << r.label << cluster_note(r) << ": sends " << bytes_text(r.inter_host_bytes)
            << " per host per iteration between hosts; exposed communication "
            << seconds_text(r.exposed_comm_s) << " (" << buf << " of the iteration), of which "
            << seconds_text(r.latency_bound_s) << " is latency\n";
      }
    }
    bool any = false;
    for (const Recommendation& r : point) {
      for (const std::string& caveat : r.caveats) {
        if (!any) out << "  caveats:\n";
        any = true;
        out << "    " << r.label << ": " << caveat << "\n";
      }
    }
  }
}

}  // namespace bagua::experiments
