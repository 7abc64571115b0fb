// `--set` on a sweep (experiments/config.h step 2). Axis paths are dotted themselves
// ("cluster.nic.bandwidth"), so "sweep.axes.cluster.nic.bandwidth" cannot name an axis as an ordinary
// dotted path does; an override addresses the sweep so instead:
//
//   sweep.mode=zip                      the sweep's mode
//   sweep.<axis path>=[values]          that axis's values (an array), replacing them, or a new axis
//                                       after the others when the sweep has none of that path
//   <axis path>=value                   fixes a swept path: the axis is removed (the sweep too when it
//                                       was the last) and the value set, as for any path
//
// Unambiguous: "mode" and "axes" are not top-level config keys, so "sweep.mode" and "sweep.axes..."
// can never be an axis path; any other "sweep.X" is the axis X. An override of "sweep" itself (a whole
// sweep object) or "sweep.axes" is left to the ordinary path rules.
#pragma once

#include <string>

#include "experiments/json_util.h"

namespace bagua::experiments {

// Applies `path` = `value` to `config` when it is one of the forms above and returns true; returns
// false (and changes nothing) for any other path. ConfigError (apply_override prefixes "--set <path>: ")
// on a value that does not fit (an axis's values that are not a non-empty array, a sweep that is not an object).
bool apply_sweep_override(Json& config, const std::string& path, const Json& value);

}  // namespace bagua::experiments
