#include "experiments/profile_file.h"

#include <cmath>
#include <optional>

#include "core/check.h"
#include "experiments/quantity.h"

namespace bagua::experiments {

namespace {

ProfileSpec parse(const Json& profile) {
  ObjectReader r(profile, "",
                 {"name", "description", "device", "precision", "precision_note", "peak_flops",
                  "batch_size", "source", "total_params", "published_params", "published_params_source",
                  "measured", "achieved_efficiency", "derivation", "sources", "layers"});
  ProfileSpec spec;
  spec.name = r.get_string("name");
  r.get_string("description", "");
  spec.device = r.get_string("device", "");
  if (r.has("device") && spec.device.empty()) throw ConfigError("device: must name the GPU, got \"\"");
  if (r.has("precision"))
    spec.precision = *parse_precision(r.get_choice("precision", "", {"fp32", "tf32", "mixed"}));
  r.get_string("precision_note", "");
  if (r.has("peak_flops")) r.get_double("peak_flops", 0, 0.0, std::nullopt, /*min_exclusive=*/true);
  spec.batch_size = r.get_int("batch_size", std::nullopt, 1);
  spec.source = r.get_string("source", "");
  const Json& layers = r.required("layers");
  if (!layers.is_array() || layers.empty())
    throw_type_error("layers", "a non-empty array of layers", layers);
  int64_t sum = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    const std::string path = "layers[" + std::to_string(i) + "]";
    ObjectReader l(
        layers[i], path,
        {"name", "params", "forward_us", "backward_us", "forward_flops", "backward_flops", "source"});
    ProfileLayer layer;
    layer.name = l.get_string("name");
    // At most 2^40 parameters (4 TiB of floats): far above any layer (VGG16's largest, fc6, has 1.03e8:
    // configs/workloads/vgg16.json),
    // and their byte counts, summed over the layers, stay inside Bytes' int64.
    const int64_t params = l.get_int("params", std::nullopt, 1, int64_t{1} << 40);
    layer.params = static_cast<size_t>(params);
    // Microseconds with fractions, to the nearest nanosecond; at most kMaxTime (experiments/quantity.h,
    // "Ranges").
    l.required("forward_us");
    l.required("backward_us");
    const double max_us = kMaxTime.microseconds();
    layer.forward = Time::us(l.get_double("forward_us", 0, 0.0, max_us));
    layer.backward = Time::us(l.get_double("backward_us", 0, 0.0, max_us));
    l.get_double("forward_flops", 0, 0.0, std::nullopt);
    l.get_double("backward_flops", 0, 0.0, std::nullopt);
    l.get_string("source", "");
    sum += params;
    spec.layers.push_back(std::move(layer));
  }
  if (r.has("total_params") && r.get_int("total_params", std::nullopt, 1) != sum) {
    throw ConfigError("total_params: " + std::to_string(r.get_int("total_params", std::nullopt, 1)) +
                      " differs from the sum of the layers' params, " + std::to_string(sum));
  }
  return spec;
}

}  // namespace

ProfileSpec parse_profile(const Json& profile, const std::string& shown) {
  try {
    return parse(profile);
  } catch (const ConfigError& e) {
    throw ConfigError(shown + ": " + e.what());
  }
}

ProfileSpec read_profile(const std::filesystem::path& file, const std::string& shown) {
  return parse_profile(read_json_file(file, shown), shown);
}

}  // namespace bagua::experiments
