#include "experiments/sweep_override.h"

#include "core/check.h"

namespace bagua::experiments {

bool apply_sweep_override(Json& config, const std::string& path, const Json& value) {
  if (!config.is_object()) return false;
  const auto sweep = config.find("sweep");
  const std::string prefix = "sweep.";
  if (path.rfind(prefix, 0) == 0) {
    const std::string axis = path.substr(prefix.size());
    if (axis.empty() || axis == "mode" || axis == "axes" || axis.rfind("axes.", 0) == 0) return false;
    if (!value.is_array() || value.empty()) {
      throw ConfigError("an axis's values must be a non-empty array, got " + json_text(value));
    }
    if (sweep == config.end()) config["sweep"] = Json::object();
    Json& s = config["sweep"];
    if (!s.is_object()) throw ConfigError("sweep is not an object");
    if (!s.contains("axes")) s["axes"] = Json::object();
    if (!s["axes"].is_object()) throw ConfigError("sweep.axes is not an object");
    s["axes"][axis] = value;  // nlohmann's ordered_json keeps a new key after the others
    return true;
  }
  // A swept path: fix it.
  if (sweep == config.end() || !sweep->is_object()) return false;
  const auto axes = sweep->find("axes");
  if (axes == sweep->end() || !axes->is_object() || !axes->contains(path)) return false;
  axes->erase(path);
  if (axes->empty()) config.erase("sweep");
  set_path(config, path, value);
  return true;
}

}  // namespace bagua::experiments
