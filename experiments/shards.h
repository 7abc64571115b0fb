// A sweep cut into shards for job arrays (Slurm's sbatch --array) and GNU parallel: each shard runs
// alone into its own part of the results folder, and `bagua merge` makes the parts one results folder.
//
//   bagua run SWEEP --shard K/N    shard K of N (1 <= K <= N): the points whose sweep index i has
//                                  i % N == K - 1, into DIR/shards/K-of-N/ (a results folder of its
//                                  own: results.csv, points/, and part.json once the shard's run ended)
//   bagua merge DIR                the parts' points into DIR/results.csv and DIR/points/, in sweep
//                                  order, byte for byte those of the sweep run alone; refused, with one
//                                  line naming the points, when a point is missing or in two parts
//
// K counts from 1, as the --shard K/N of Playwright and Jest do. Without --shard, in a Slurm array job
// (SLURM_ARRAY_TASK_ID is set), the shard comes from the array: N = SLURM_ARRAY_TASK_COUNT and
// K = (SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN) / SLURM_ARRAY_TASK_STEP + 1, so that
// --array=0-7, --array=1-8 and --array=0-14:2 all give shards 1/8 to 8/8 (Slurm's job_array.html and
// sbatch(1), "OUTPUT ENVIRONMENT VARIABLES"); an array that is not one range with one step is refused.
// --shard 1/1 runs the whole sweep into DIR itself, as without --shard.
//
// part.json: {"experiment": name, "shard": K, "shards": N, "columns": [results.csv's header],
// "points": [every point id of the sweep, in sweep order]}: what merge checks the parts against.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "experiments/config.h"

namespace bagua::experiments {

struct Shard {
  int index = 1;  // K, from 1
  int count = 1;  // N

  bool whole() const { return count == 1; }
  // "K-of-N": the part's folder under DIR/shards/.
  std::string folder() const;
};

// "K/N". ConfigError: `--shard: expected K/N with 1 <= K <= N, got "0/4"`.
Shard parse_shard(const std::string& text);

// The shard of this Slurm array task, or nullopt outside an array job. ConfigError naming the
// variable when the array's variables are missing, malformed or not one range.
std::optional<Shard> shard_from_slurm();

// The shard's points of `e` (each keeps its sweep index and id), its results going to
// DIR/shards/K-of-N. The whole sweep unchanged for 1/1.
Experiment shard_of(const Experiment& e, const Shard& shard);

// Writes DIR/shards/K-of-N/part.json for shard `shard` of `whole` (the sweep before sharding).
void write_part(const Experiment& whole, const Shard& shard);

// `bagua merge DIR`: see above. Prints one line on `out` ("merged 200 points from 4 parts into
// DIR/results.csv"). ConfigError: one line naming the missing or duplicated points.
void merge_parts(const std::filesystem::path& dir, std::ostream& out);

}  // namespace bagua::experiments
