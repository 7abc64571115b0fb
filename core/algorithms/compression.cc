#include "core/algorithms/compression.h"

#include <cmath>
#include <optional>

namespace bagua {

namespace {

std::optional<int64_t> as_int(const std::optional<double>& v) {
  if (!v) return std::nullopt;
  return static_cast<int64_t>(std::llround(*v));
}

// `spec` under another name.
void add_renamed(ParamSchema& schema, const ParamSpec& spec, const std::string& name,
                 const std::string& description) {
  switch (spec.type) {
    case ParamType::kBool:
      schema.add_bool(name, std::get<bool>(spec.default_value), description);
      break;
    case ParamType::kInt:
      schema.add_int(name, std::get<int64_t>(spec.default_value), description, as_int(spec.min),
                     as_int(spec.max));
      break;
    case ParamType::kDouble:
      schema.add_double(name, std::get<double>(spec.default_value), description, spec.min, spec.max,
                        spec.min_exclusive);
      break;
    case ParamType::kString:
      schema.add_string(name, std::get<std::string>(spec.default_value), description, spec.choices);
      break;
  }
}

}  // namespace

void add_compressor_params(ParamSchema& schema, const CompressorRegistry& compressors,
                           const CompressorChoice& choice) {
  std::vector<std::string> names = choice.choices;
  if (names.empty())
    for (const auto* e : compressors.entries())
      names.push_back(e->name);
  BAGUA_CHECK(compressors.find(choice.default_name) != nullptr,
              "default compressor '" + choice.default_name + "' is not registered");
  schema.add_string("compressor", choice.default_name, choice.description, names);
  for (const std::string& name : names) {
    const auto& entry = compressors.at(name);
    for (const ParamSpec& spec : entry.schema.specs())
      add_renamed(schema, spec, name + "_" + spec.name, name + ": " + spec.description);
  }
  if (choice.error_feedback_param)
    schema.add_bool(
        "error_feedback", choice.error_feedback_default,
        "wrap the compressor with error feedback (the residual is added to the next input)");
}

CompressorFactory make_compressor_factory(const CompressorRegistry& compressors, const Params& params,
                                          bool error_feedback) {
  const std::string& name = params.get_string("compressor");
  const auto& entry = compressors.at(name);
  Params own;
  const std::string prefix = name + "_";
  for (const ParamSpec& spec : entry.schema.specs()) {
    const std::string key = prefix + spec.name;
    if (params.has(key)) own.set(spec.name, params.values().at(key));
  }
  return compressor_factory(compressors, name, own, error_feedback);
}

}  // namespace bagua
