// Compressor choice inside an algorithm's parameters.
//
// An algorithm that compresses declares a string parameter `compressor` (its choices are registered
// compressors) and, for every parameter p of every choice c, a parameter "<c>_<p>" with c's default,
// range and description: topk_ratio, randomk_seed, qsgd_levels, minmax_uint8_chunk_size, ... Prefixing
// keeps each compressor's defaults (chunk_size is 0 for minmax_uint8 but 512 for qsgd) and lets a
// config or a sweep set any of them; the ones of compressors not chosen are simply unused. Optionally a
// boolean `error_feedback` wraps every instance with error feedback (core/compress/error_feedback.h).
#pragma once

#include <string>
#include <vector>

#include "core/compress/compressor.h"
#include "core/params.h"

namespace bagua {

struct CompressorChoice {
  std::string default_name;
  std::vector<std::string> choices;  // empty: every registered compressor
  bool error_feedback_param = true;  // declare `error_feedback`
  bool error_feedback_default = false;
  std::string description = "compressor of the communicated values";
};

// Adds `compressor`, the prefixed parameters of every choice and (optionally) `error_feedback`.
void add_compressor_params(ParamSchema& schema, const CompressorRegistry& compressors,
                           const CompressorChoice& choice);

// The factory for the compressor named by params' `compressor`, configured from its prefixed
// parameters. `error_feedback` wraps the instances (the algorithm decides: its own parameter, or
// implied by the variant). Throws ConfigError for an unknown compressor or an invalid value.
CompressorFactory make_compressor_factory(const CompressorRegistry& compressors, const Params& params,
                                          bool error_feedback);

}  // namespace bagua
