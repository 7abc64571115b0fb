#include "experiments/results.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "core/check.h"
#include "experiments/quantity.h"

namespace bagua::experiments {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double seconds(Time t) {
  return static_cast<double>(t.nanoseconds()) / 1e9;
}

// Mean of the values that are not NaN; NaN when there are none.
double mean_present(const std::vector<double>& xs) {
  double sum = 0;
  int n = 0;
  for (double x : xs) {
    if (std::isnan(x)) continue;
    sum += x;
    ++n;
  }
  return n == 0 ? kNaN : sum / n;
}

Json number_or_null(double x) {
  return std::isfinite(x) ? Json(x) : Json(nullptr);
}
double number_from(const Json& v) {
  return v.is_number() ? v.get<double>() : kNaN;
}

}  // namespace

PointMetrics compute_metrics(const std::vector<TrainResult>& ranks, int64_t batch_size,
                             double optimal_loss, int64_t measured_from) {
  BAGUA_CHECK(!ranks.empty(), "no rank results");
  const size_t iters = ranks.front().iterations.size();
  BAGUA_CHECK(iters >= 1, "a point ran no iteration");
  for (size_t r = 0; r < ranks.size(); ++r) {
    BAGUA_CHECK_EQ(ranks[r].iterations.size(), iters, "rank " + std::to_string(r) + " iteration count");
    BAGUA_CHECK_EQ(ranks[r].rank, static_cast<int>(r), "results gathered out of rank order");
  }

  PointMetrics m;
  m.world_size = static_cast<int>(ranks.size());
  m.iterations = static_cast<int64_t>(iters);
  m.optimal_loss = optimal_loss;
  for (size_t r = 1; r < ranks.size(); ++r)
    if (ranks[r].iterations.back().end >
        ranks[static_cast<size_t>(m.slowest_rank)].iterations.back().end)
      m.slowest_rank = static_cast<int>(r);
  const std::vector<IterationRecord>& slowest = ranks[static_cast<size_t>(m.slowest_rank)].iterations;

  for (size_t i = 0; i < iters; ++i) {
    IterationRow row;
    row.iteration = slowest[i].iteration;
    Time latest_end = Time::zero();
    std::vector<double> losses, full_losses;
    for (const TrainResult& r : ranks) {
      latest_end = std::max(latest_end, r.iterations[i].end);
      losses.push_back(r.iterations[i].loss);
      full_losses.push_back(r.iterations[i].full_loss);
    }
    row.time_s = seconds(latest_end);
    row.iteration_s = seconds(slowest[i].end - slowest[i].begin);
    row.compute_s = seconds(slowest[i].compute);
    row.exposed_comm_s = seconds(slowest[i].end - slowest[i].begin - slowest[i].compute);
    row.loss = mean_present(losses);
    row.full_loss = mean_present(full_losses);
    m.rows.push_back(row);
  }

  // Totals over the measured iterations in integer nanoseconds, divided once (so that the split adds up
  // without rounding noise).
  const size_t from = measured_from >= 0 ? static_cast<size_t>(measured_from) : (iters > 1 ? 1 : 0);
  BAGUA_CHECK(from < iters,
              "measured_from " + std::to_string(from) + " of " + std::to_string(iters) + " iterations");
  const Time start = from == 0 ? slowest[0].begin : slowest[from - 1].end;
  const int64_t span_ns = (slowest.back().end - start).nanoseconds();
  int64_t compute_ns = 0;
  for (size_t i = from; i < iters; ++i)
    compute_ns += slowest[i].compute.nanoseconds();
  const int64_t counted = static_cast<int64_t>(iters - from);
  auto per_iteration = [&](int64_t ns) {
    return static_cast<double>(ns) / static_cast<double>(counted) / 1e9;
  };
  m.time_per_iteration_s = per_iteration(span_ns);
  m.compute_per_iteration_s = per_iteration(compute_ns);
  m.exposed_comm_per_iteration_s = per_iteration(span_ns - compute_ns);
  m.final_loss = m.rows.back().loss;
  m.final_full_loss = m.rows.back().full_loss;
  m.samples_per_s =
      m.time_per_iteration_s > 0
          ? static_cast<double>(m.world_size) * static_cast<double>(batch_size) / m.time_per_iteration_s
          : kNaN;
  return m;
}

std::string csv_number(double x) {
  return std::isnan(x) ? "" : shortest(x);
}

std::string csv_line(const std::vector<std::string>& fields) {
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) line += ',';
    const std::string& f = fields[i];
    if (f.find_first_of(",\"\n\r") == std::string::npos) {
      line += f;
      continue;
    }
    line += '"';
    for (char c : f) {
      if (c == '"') line += '"';
      line += c;
    }
    line += '"';
  }
  line += '\n';
  return line;
}

std::string iterations_csv(const PointMetrics& m) {
  std::string out = csv_line(
      {"iteration", "time_s", "iteration_s", "compute_s", "exposed_comm_s", "loss", "full_loss"});
  for (const IterationRow& r : m.rows) {
    out += csv_line({std::to_string(r.iteration), csv_number(r.time_s), csv_number(r.iteration_s),
                     csv_number(r.compute_s), csv_number(r.exposed_comm_s), csv_number(r.loss),
                     csv_number(r.full_loss)});
  }
  return out;
}

Json summary_json(const PointConfig& point, const PointMetrics& m) {
  Json swept = Json::object();
  for (const auto& [path, value] : point.swept)
    swept[path] = value;
  Json s = Json::object();
  s["point"] = point.id;
  s["swept"] = std::move(swept);
  s["config"] = point.resolved;
  s["world_size"] = m.world_size;
  s["iterations"] = m.iterations;
  s["slowest_rank"] = m.slowest_rank;
  s["time_per_iteration_s"] = number_or_null(m.time_per_iteration_s);
  s["compute_per_iteration_s"] = number_or_null(m.compute_per_iteration_s);
  s["exposed_comm_per_iteration_s"] = number_or_null(m.exposed_comm_per_iteration_s);
  s["final_loss"] = number_or_null(m.final_loss);
  s["final_full_loss"] = number_or_null(m.final_full_loss);
  s["optimal_loss"] = number_or_null(m.optimal_loss);
  s["samples_per_s"] = number_or_null(m.samples_per_s);
  return s;
}

std::vector<std::string> results_header(const std::vector<std::string>& axes) {
  std::vector<std::string> h = {"point"};
  h.insert(h.end(), axes.begin(), axes.end());
  for (const char* c :
       {"runtime", "world_size", "algorithm_name", "time_per_iteration_s", "compute_per_iteration_s",
        "exposed_comm_per_iteration_s", "final_loss", "final_full_loss", "samples_per_s"})
    h.emplace_back(c);
  return h;
}

bool is_summary_of(const Json& summary, const std::string& id) {
  if (!summary.is_object() || summary.value("point", std::string()) != id) return false;
  const auto config = summary.find("config");
  if (config == summary.end() || !config->is_object() || !summary.contains("swept") ||
      !summary["swept"].is_object() || !summary.contains("world_size") ||
      !summary["world_size"].is_number_integer())
    return false;
  if (!config->contains("runtime") || !(*config)["runtime"].is_string()) return false;
  if (!config->contains("algorithm") || !(*config)["algorithm"].is_object() ||
      !(*config)["algorithm"].contains("name"))
    return false;
  for (const char* k :
       {"time_per_iteration_s", "compute_per_iteration_s", "exposed_comm_per_iteration_s", "final_loss",
        "final_full_loss", "samples_per_s"}) {
    const auto it = summary.find(k);
    if (it == summary.end() || !(it->is_number() || it->is_null())) return false;
  }
  return true;
}

std::vector<std::string> results_row(const Json& summary, const std::vector<std::string>& axes) {
  std::vector<std::string> row = {summary.at("point").get<std::string>()};
  const Json& swept = summary.at("swept");
  for (const std::string& a : axes) {
    auto it = swept.find(a);
    if (it == swept.end())
      row.emplace_back("");
    else
      row.push_back(it->is_string() ? it->get<std::string>() : it->dump());
  }
  const Json& config = summary.at("config");
  row.push_back(config.at("runtime").get<std::string>());
  row.push_back(std::to_string(summary.at("world_size").get<int64_t>()));
  row.push_back(config.at("algorithm").at("name").get<std::string>());
  for (const char* k :
       {"time_per_iteration_s", "compute_per_iteration_s", "exposed_comm_per_iteration_s", "final_loss",
        "final_full_loss", "samples_per_s"})
    row.push_back(csv_number(number_from(summary.at(k))));
  return row;
}

// ---- serialization ----------------------------------------------------------------------------------

namespace {

template <class T>
void put(std::vector<uint8_t>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}

template <class T>
T take(std::span<const uint8_t> bytes, size_t& at) {
  BAGUA_CHECK(at + sizeof(T) <= bytes.size(), "truncated TrainResult");
  T v;
  std::memcpy(&v, bytes.data() + at, sizeof(T));
  at += sizeof(T);
  return v;
}

}  // namespace

std::vector<uint8_t> serialize(const TrainResult& r) {
  std::vector<uint8_t> out;
  out.reserve(24 + r.iterations.size() * 48);
  put<int64_t>(out, r.rank);
  put<int64_t>(out, static_cast<int64_t>(r.iterations.size()));
  for (const IterationRecord& it : r.iterations) {
    put<int64_t>(out, it.iteration);
    put<int64_t>(out, it.begin.nanoseconds());
    put<int64_t>(out, it.end.nanoseconds());
    put<int64_t>(out, it.compute.nanoseconds());
    put<double>(out, it.loss);
    put<double>(out, it.full_loss);
  }
  put<int64_t>(out, r.finish.nanoseconds());
  return out;
}

TrainResult deserialize(std::span<const uint8_t> bytes) {
  size_t at = 0;
  TrainResult r;
  r.rank = static_cast<int>(take<int64_t>(bytes, at));
  const int64_t n = take<int64_t>(bytes, at);
  BAGUA_CHECK(n >= 0 && static_cast<size_t>(n) <= bytes.size() / 48, "corrupt TrainResult");
  r.iterations.resize(static_cast<size_t>(n));
  for (IterationRecord& it : r.iterations) {
    it.iteration = take<int64_t>(bytes, at);
    it.begin = Time::ns(take<int64_t>(bytes, at));
    it.end = Time::ns(take<int64_t>(bytes, at));
    it.compute = Time::ns(take<int64_t>(bytes, at));
    it.loss = take<double>(bytes, at);
    it.full_loss = take<double>(bytes, at);
  }
  r.finish = Time::ns(take<int64_t>(bytes, at));
  BAGUA_CHECK_EQ(at, bytes.size(), "TrainResult size");
  return r;
}

}  // namespace bagua::experiments
