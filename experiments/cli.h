// The `bagua` command line.
//
//   bagua run CONFIG [--set dotted.path=value ...] [--out DIR] [--jobs N] [--quiet] [--shard K/N]
//   bagua merge DIR
//   bagua validate CONFIG [--set dotted.path=value ...]
//   bagua list
//
// Under mpirun, a sweep of simulated points is spread over the job's processes
// (experiments/distribute.h); --shard and merge serve job arrays (experiments/shards.h).
//
// Exit status: 0 success; 1 a point failed while running; 2 the config is invalid (nothing was
// written: one line "config error: PATH: message" on stderr); CLI11's own codes for a bad command line.
#pragma once

#include <iosfwd>

namespace bagua::experiments {

int run_cli(int argc, char** argv);

// `bagua list`: every registered component with its parameters, and the topologies.
struct Components;
void print_components(const Components& c, std::ostream& out);

}  // namespace bagua::experiments
