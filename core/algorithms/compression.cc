#include "core/algorithms/compression.h"

#include <utility>

namespace bagua {

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
    for (ParamSpec spec : entry.schema.specs()) {
      spec.description = name + ": " + spec.description;
      spec.name = name + "_" + spec.name;
      schema.add(std::move(spec));
    }
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
