#include "experiments/results.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
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

// The largest (or smallest) of the values that are not NaN; NaN when there are none.
double extreme_present(const std::vector<double>& xs, bool largest) {
  double best = kNaN;
  for (double x : xs) {
    if (std::isnan(x)) continue;
    if (std::isnan(best) || (largest ? x > best : x < best)) best = x;
  }
  return best;
}

Json number_or_null(double x) {
  return std::isfinite(x) ? Json(x) : Json(nullptr);
}
double summary_number(const Json& v) {
  return v.is_number() ? v.get<double>() : kNaN;
}

}  // namespace

std::string to_string(PointStatus s) {
  switch (s) {
    case PointStatus::kOk:
      return "ok";
    case PointStatus::kDiverged:
      return "diverged";
    case PointStatus::kFailed:
      return "failed";
  }
  return "?";
}

std::optional<PointStatus> parse_point_status(const std::string& text) {
  for (PointStatus s : {PointStatus::kOk, PointStatus::kDiverged, PointStatus::kFailed})
    if (to_string(s) == text) return s;
  return std::nullopt;
}

size_t finite_prefix(const std::vector<TrainResult>& ranks) {
  size_t n = ranks.empty() ? 0 : ranks.front().iterations.size();
  for (const TrainResult& r : ranks)
    n = std::min(n, r.iterations.size());
  // A NaN batch loss on every rank is "no loss" (a profile workload); otherwise a loss must be finite.
  for (size_t i = 0; i < n; ++i) {
    bool all_nan = true;
    bool all_finite = true;
    for (const TrainResult& r : ranks) {
      const double loss = r.iterations[i].loss;
      all_nan = all_nan && std::isnan(loss);
      all_finite = all_finite && std::isfinite(loss) && !std::isinf(r.iterations[i].full_loss);
    }
    if (!all_nan && !all_finite) return i;
  }
  return n;
}

PointMetrics compute_metrics(const std::vector<TrainResult>& ranks, int64_t batch_size,
                             double optimal_loss, int64_t measured_from,
                             std::span<const double> averaged_model_accuracy) {
  BAGUA_CHECK(!ranks.empty(), "no rank results");
  const size_t iters = ranks.front().iterations.size();
  BAGUA_CHECK(iters >= 1, "a point ran no iteration");
  BAGUA_CHECK(averaged_model_accuracy.empty() || averaged_model_accuracy.size() == iters,
              "averaged model accuracies: " + std::to_string(averaged_model_accuracy.size()) + " for " +
                  std::to_string(iters) + " iterations");
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
    std::vector<double> losses, full_losses, accuracies;
    for (const TrainResult& r : ranks) {
      latest_end = std::max(latest_end, r.iterations[i].end);
      losses.push_back(r.iterations[i].loss);
      full_losses.push_back(r.iterations[i].full_loss);
      accuracies.push_back(r.iterations[i].test_accuracy);
    }
    row.time_s = seconds(latest_end);
    row.iteration_s = seconds(slowest[i].end - slowest[i].begin);
    row.compute_s = seconds(slowest[i].compute);
    row.exposed_comm_s = seconds(slowest[i].end - slowest[i].begin - slowest[i].compute);
    row.loss = mean_present(losses);
    row.full_loss = mean_present(full_losses);
    row.test_accuracy = mean_present(accuracies);
    row.test_accuracy_min = extreme_present(accuracies, false);
    row.test_accuracy_max = extreme_present(accuracies, true);
    row.test_accuracy_avg_model = averaged_model_accuracy.empty() ? kNaN : averaged_model_accuracy[i];
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
  m.final_test_accuracy = m.rows.back().test_accuracy;
  m.final_test_accuracy_avg_model = m.rows.back().test_accuracy_avg_model;
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
  std::string out = csv_line({"iteration", "time_s", "iteration_s", "compute_s", "exposed_comm_s",
                              "loss", "full_loss", "test_accuracy", "test_accuracy_min",
                              "test_accuracy_max", "test_accuracy_avg_model"});
  for (const IterationRow& r : m.rows) {
    out +=
        csv_line({std::to_string(r.iteration), csv_number(r.time_s), csv_number(r.iteration_s),
                  csv_number(r.compute_s), csv_number(r.exposed_comm_s), csv_number(r.loss),
                  csv_number(r.full_loss), csv_number(r.test_accuracy), csv_number(r.test_accuracy_min),
                  csv_number(r.test_accuracy_max), csv_number(r.test_accuracy_avg_model)});
  }
  return out;
}

Json summary_json(const PointConfig& point, const PointMetrics& m, const PointFailure* failure) {
  Json swept = Json::object();
  for (const auto& [path, value] : point.swept)
    swept[path] = value;
  Json s = Json::object();
  s["point"] = point.id;
  s["swept"] = std::move(swept);
  s["config"] = point.resolved;
  const bool measured = !failure || (failure->status == PointStatus::kDiverged && m.iterations > 0);
  const PointMetrics none;
  const PointMetrics& x = measured ? m : none;
  auto metric = [&](double v) { return measured ? number_or_null(v) : Json(nullptr); };
  s["world_size"] = measured || m.world_size > 0 ? Json(m.world_size) : Json(point.world_size());
  s["iterations"] = x.iterations;
  s["slowest_rank"] = x.slowest_rank;
  s["time_per_iteration_s"] = metric(x.time_per_iteration_s);
  s["compute_per_iteration_s"] = metric(x.compute_per_iteration_s);
  s["exposed_comm_per_iteration_s"] = metric(x.exposed_comm_per_iteration_s);
  s["final_loss"] = metric(x.final_loss);
  s["final_full_loss"] = metric(x.final_full_loss);
  s["optimal_loss"] = metric(x.optimal_loss);
  s["final_test_accuracy"] = metric(x.final_test_accuracy);
  s["final_test_accuracy_avg_model"] = metric(x.final_test_accuracy_avg_model);
  s["samples_per_s"] = metric(x.samples_per_s);
  s["status"] = to_string(failure ? failure->status : PointStatus::kOk);
  if (failure) {
    s["error"] = failure->error;
    if (failure->status == PointStatus::kDiverged)
      s["diverged_at_iteration"] = failure->diverged_at_iteration;
  }
  return s;
}

PointStatus summary_status(const Json& summary) {
  const auto it = summary.find("status");
  if (it == summary.end() || !it->is_string()) return PointStatus::kOk;
  return parse_point_status(it->get<std::string>()).value_or(PointStatus::kFailed);
}

std::string config_hash(const Experiment& e) {
  Json points = Json::array();
  for (const PointConfig& p : e.points)
    points.push_back(p.resolved);
  const Json all = Json::array({Json(e.axes), std::move(points)});
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(fnv1a64(all.dump())));
  return hash;
}

std::vector<std::string> results_header(const std::vector<std::string>& axes) {
  std::vector<std::string> h = {"point"};
  h.insert(h.end(), axes.begin(), axes.end());
  for (const char* c : {"runtime", "world_size", "algorithm_name", "time_per_iteration_s",
                        "compute_per_iteration_s", "exposed_comm_per_iteration_s", "final_loss",
                        "final_full_loss", "samples_per_s", "status", "error"})
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
  const auto status = summary.find("status");
  if (status != summary.end() &&
      !(status->is_string() && parse_point_status(status->get<std::string>())))
    return false;
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
    row.push_back(csv_number(summary_number(summary.at(k))));
  row.push_back(to_string(summary_status(summary)));
  row.push_back(summary.value("error", std::string()));
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
  out.reserve(24 + r.iterations.size() * 56);
  put<int64_t>(out, r.rank);
  put<int64_t>(out, static_cast<int64_t>(r.iterations.size()));
  for (const IterationRecord& it : r.iterations) {
    put<int64_t>(out, it.iteration);
    put<int64_t>(out, it.begin.nanoseconds());
    put<int64_t>(out, it.end.nanoseconds());
    put<int64_t>(out, it.compute.nanoseconds());
    put<double>(out, it.loss);
    put<double>(out, it.full_loss);
    put<double>(out, it.test_accuracy);
  }
  put<int64_t>(out, r.finish.nanoseconds());
  return out;
}

TrainResult deserialize(std::span<const uint8_t> bytes) {
  size_t at = 0;
  TrainResult r;
  r.rank = static_cast<int>(take<int64_t>(bytes, at));
  const int64_t n = take<int64_t>(bytes, at);
  BAGUA_CHECK(n >= 0 && static_cast<size_t>(n) <= bytes.size() / 56, "corrupt TrainResult");
  r.iterations.resize(static_cast<size_t>(n));
  for (IterationRecord& it : r.iterations) {
    it.iteration = take<int64_t>(bytes, at);
    it.begin = Time::ns(take<int64_t>(bytes, at));
    it.end = Time::ns(take<int64_t>(bytes, at));
    it.compute = Time::ns(take<int64_t>(bytes, at));
    it.loss = take<double>(bytes, at);
    it.full_loss = take<double>(bytes, at);
    it.test_accuracy = take<double>(bytes, at);
  }
  r.finish = Time::ns(take<int64_t>(bytes, at));
  BAGUA_CHECK_EQ(at, bytes.size(), "TrainResult size");
  return r;
}

}  // namespace bagua::experiments
