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
//     "device": string,                    -> ProfileSpec::device (the GPU the times are of)
//     "precision": "fp32" | "tf32" | "mixed"  -> ProfileSpec::precision (the arithmetic of the times)
//     "precision_note": string,            what the precision means on that device
//     "peak_flops": number > 0,            the device's datasheet peak in that precision, FLOP/s
//     "batch_size": integer > 0,           -> ProfileSpec::batch_size (per GPU, of the stated times)
//     "source": string,                    -> ProfileSpec::source (the measurement the times come from)
//     "total_params": integer,             sum of the layers' params (checked)
//     "published_params": integer,         the network's published total
//     "published_params_source": string,   its citation
//     "measured": {...},                   the measurement (throughput or time, batch size, citation)
//     "achieved_efficiency": number,       fraction of peak_flops the layers' times run at
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
// "device" and "precision" may be left out of a hand-written profile (precision kUnstated); the
// generated ones (scripts/make_profiles.py) state both, and a test checks that every shipped file does.
// clang-format off
// clang-format on
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/models/model.h"

namespace bagua {

// The arithmetic a profile's times were measured in: FP32 CUDA cores, TF32 tensor cores (what fp32
// training runs on on A100 and H100), or mixed precision (FP16/BF16 tensor cores, FP32 master weights).
enum class Precision { kUnstated, kFp32, kTf32, kMixed };
std::string to_string(Precision p);
// "fp32", "tf32" or "mixed"; std::nullopt for anything else.
std::optional<Precision> parse_precision(const std::string& text);

struct ProfileLayer {
  std::string name;
  size_t params = 0;
  Time forward;  // at ProfileSpec::batch_size
  Time backward;
};

struct ProfileSpec {
  std::string name;
  std::string device;
  Precision precision = Precision::kUnstated;
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
