// Reading a profile file (configs/workloads/*.json; schema in core/models/profile.h) into a
// ProfileSpec.
#pragma once

#include <filesystem>
#include <string>

#include "core/models/profile.h"
#include "experiments/json_util.h"

namespace bagua::experiments {

// Every key of the schema is checked (unknown keys refused, types and ranges checked, total_params
// equal to the sum of the layers' params when given). Errors name `shown` (how the config wrote the
// file) and the JSON path inside the file:
//   configs/workloads/vgg16.json: layers[3].params: must be >= 1, got 0
ProfileSpec parse_profile(const Json& profile, const std::string& shown);
ProfileSpec read_profile(const std::filesystem::path& file, const std::string& shown);

}  // namespace bagua::experiments
