// Profile workloads: real networks described by per-layer parameter counts and compute times.
//
// A profile is not materialized (Model::materialized() == false): its tensors are meta buffers, its
// init_weights and forward_backward do no arithmetic (the loss is NaN), but forward_backward still
// calls ready(l) for every layer in backward order (last layer first), and each Layer carries its
// profiled compute time as Work::duration, so that the simulator sees the network's real
// compute/communication pattern (bucketing, overlap) at paper scale.
//
// Batch size: times are stated for the profile's batch size; a workload made for another per-rank batch
// size scales every time linearly (compute of these networks is proportional to the batch to first
// order; small batches that leave the GPU under-occupied are modelled optimistically).
//
// Core never parses JSON: the experiments layer reads a profile file (configs/workloads/*.json, written
// by scripts/make_profiles.py) into a ProfileSpec. The file's schema:
//
//   {
//     "name": string,                      -> ProfileSpec::name
//     "description": string,
//     "device": string,                    -> ProfileSpec::device (the GPU and precision of the times)
//     "batch_size": integer > 0,           -> ProfileSpec::batch_size (per GPU, of the stated times)
//     "source": string,                    -> ProfileSpec::source (the measurement the times are
//     calibrated on) "total_params": integer,             sum of the layers' params "published_params":
//     integer,         the network's published total, and its citation in "published_params_source":
//     string, "measured": {...},                   the measurement (throughput or time, batch size,
//     citation) "achieved_efficiency": number,       calibrated fraction of the device peak
//     "derivation": string,                how params and times were derived
//     "sources": {key: string},            every other citation
//     "layers": [                          forward order
//       {
//         "name": string,                  -> ProfileLayer::name
//         "params": integer > 0,           -> ProfileLayer::params
//         "forward_us": number >= 0,       -> ProfileLayer::forward  (microseconds, at batch_size)
//         "backward_us": number >= 0,      -> ProfileLayer::backward (microseconds, at batch_size)
//         "forward_flops": number,         FLOPs the times were derived from
//         "backward_flops": number,
//         "source": string                 the layer shape the params follow from
//       }, ...
//     ]
//   }
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/models/model.h"

namespace bagua {

struct ProfileLayer {
  std::string name;
  size_t params = 0;
  Time forward;  // at ProfileSpec::batch_size
  Time backward;
};

struct ProfileSpec {
  std::string name;
  std::string device;
  int64_t batch_size = 0;
  std::vector<ProfileLayer> layers;  // forward order
  std::string source;
};

// Checks the spec (ConfigError naming the profile and the layer) and makes its workload, with times as
// stated (for the spec's own batch size).
std::unique_ptr<Workload> make_profile_workload(ProfileSpec spec);
// The same, for `setup.batch_size` per rank: every time scaled by setup.batch_size / spec.batch_size.
std::unique_ptr<Workload> make_profile_workload(ProfileSpec spec, const WorkloadSetup& setup);

// Sum of the layers' parameters.
size_t total_params(const ProfileSpec& spec);

}  // namespace bagua
