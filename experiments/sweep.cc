#include "experiments/sweep.h"

#include "core/check.h"

namespace bagua::experiments {

std::string to_string(SweepMode m) {
  return m == SweepMode::kGrid ? "grid" : "zip";
}

Sweep parse_sweep(const Json* sweep) {
  Sweep out;
  if (!sweep) return out;
  ObjectReader r(*sweep, "sweep", {"mode", "axes"});
  out.mode =
      r.get_choice("mode", "grid", {"grid", "zip"}) == "grid" ? SweepMode::kGrid : SweepMode::kZip;
  const Json& axes = r.required("axes");
  if (!axes.is_object())
    throw_type_error("sweep.axes", "an object of {\"dotted.path\": [values]}", axes);
  if (axes.empty())
    throw ConfigError("sweep.axes: no axes (give at least one \"dotted.path\": [values])");
  for (auto it = axes.begin(); it != axes.end(); ++it) {
    const std::string path = "sweep.axes." + it.key();
    std::string head;
    try {
      head = split_path(it.key()).front();
    } catch (const ConfigError& e) {
      throw ConfigError(path + ": " + e.what());
    }
    if (head == "sweep" || head == "output")
      throw ConfigError(path + ": \"" + head + "\" cannot be swept");
    if (!it->is_array() || it->empty()) throw_type_error(path, "a non-empty array of values", *it);
    out.axes.push_back({it.key(), std::vector<Json>(it->begin(), it->end())});
  }
  // The points are expanded up front: their number is checked before (see sweep.h, kMaxSweepPoints).
  if (out.mode == SweepMode::kGrid) {
    size_t points = 1;
    for (const SweepAxis& a : out.axes) {
      if (points > kMaxSweepPoints / a.values.size()) {
        throw ConfigError("sweep.axes: the grid has more than " + std::to_string(kMaxSweepPoints) +
                          " points (the product of the axes' lengths)");
      }
      points *= a.values.size();
    }
  } else if (out.axes.front().values.size() > kMaxSweepPoints) {
    throw ConfigError("sweep.axes: more than " + std::to_string(kMaxSweepPoints) + " points");
  }
  if (out.mode == SweepMode::kZip) {
    const SweepAxis& first = out.axes.front();
    for (const SweepAxis& a : out.axes) {
      if (a.values.size() != first.values.size()) {
        throw ConfigError("sweep.axes." + a.path + ": zip needs axes of equal length, but " +
                          first.path + " has " + std::to_string(first.values.size()) + " values and " +
                          a.path + " has " + std::to_string(a.values.size()));
      }
    }
  }
  return out;
}

std::vector<SweptValues> expand(const Sweep& sweep) {
  std::vector<SweptValues> points;
  if (sweep.axes.empty()) {
    points.emplace_back();
    return points;
  }
  if (sweep.mode == SweepMode::kZip) {
    for (size_t i = 0; i < sweep.axes.front().values.size(); ++i) {
      SweptValues p;
      for (const SweepAxis& a : sweep.axes)
        p.emplace_back(a.path, a.values[i]);
      points.push_back(std::move(p));
    }
    return points;
  }
  // Grid: an odometer over the axes, the last axis turning fastest.
  std::vector<size_t> at(sweep.axes.size(), 0);
  while (true) {
    SweptValues p;
    for (size_t k = 0; k < sweep.axes.size(); ++k)
      p.emplace_back(sweep.axes[k].path, sweep.axes[k].values[at[k]]);
    points.push_back(std::move(p));
    size_t k = sweep.axes.size();
    while (k > 0) {
      --k;
      if (++at[k] < sweep.axes[k].values.size()) break;
      at[k] = 0;
      if (k == 0) return points;
    }
  }
}

}  // namespace bagua::experiments
