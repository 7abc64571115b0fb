// Sweeps: axes over dotted config paths, expanded into points.
//
//   "sweep": {"mode": "grid", "axes": {"cluster.nic.bandwidth": ["1 Gbps", "10 Gbps"],
//                                      "algorithm.name": ["gradient_allreduce", "decentralized"]}}
//
//   grid  the cartesian product, in axis order: the first axis varies slowest (nested loops, the first
//         axis outermost). 2 x 2 values give 4 points.
//   zip   the axes in lockstep: point i takes value i of every axis; every axis must have as many
//         values.
//
// Each value replaces the config's value at the axis path (objects on the way are created); the point
// is then validated like any config. "output" and "sweep" themselves cannot be swept.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "experiments/json_util.h"

namespace bagua::experiments {

enum class SweepMode : uint8_t { kGrid, kZip };
std::string to_string(SweepMode m);

struct SweepAxis {
  std::string path;
  std::vector<Json> values;
};

struct Sweep {
  SweepMode mode = SweepMode::kGrid;
  std::vector<SweepAxis> axes;  // in the order written
};

// One point's swept values: (axis path, value), in axis order.
using SweptValues = std::vector<std::pair<std::string, Json>>;

// The most points a sweep may have: every point is expanded and validated before the first runs, and
// each holds its resolved config (a few kB), so a million take a few GB. Beyond, split the sweep
// into several configs.
inline constexpr size_t kMaxSweepPoints = 1'000'000;

// Parses the "sweep" object (nullptr or absent: no axes). ConfigError names the path ("sweep.mode",
// "sweep.axes.cluster.nic.bandwidth").
Sweep parse_sweep(const Json* sweep);

// The points of a sweep; without axes, one point with no swept values.
std::vector<SweptValues> expand(const Sweep& sweep);

}  // namespace bagua::experiments
