// `bagua recommend CONFIG`: which algorithm, for this model on this network.
//
// Every candidate (the list given with --algorithms; else the values of the config's grid-sweep axis
// "algorithm", which then leaves the sweep; else each registered algorithm with its default parameters,
// the config's own with the config's parameters) is simulated on the config's workload,
// cluster, optimizer and schedule — each point of the config's sweep separately — and the candidates are
// printed fastest first. Terms, per candidate and point:
//
//   time_per_iteration_s   as a `bagua run` of the same point writes it in summary.json (the simulator
//                          is deterministic: the same resolved config gives the same figure), with two
//                          exceptions. qadam is timed in its compressed phase: simulated with one
//                          warm-up step (its compressors' message sizes do not depend on the data, so
//                          the phase's time does not depend on the warm-up's length), the time is the
//                          mean over the iterations after the second. An algorithm that communicates
//                          every H steps (local_sgd's period, the decentralized algorithms'
//                          communication_interval) runs 1 + a multiple of H iterations, so that the
//                          measured window spans whole periods.
//   speedup                the reference's time over the candidate's; the reference is `ddp` when it is
//                          a candidate, else `gradient_allreduce`, else the slowest candidate
//   margin                 the fastest candidate's lead over the runner-up: t2 / t1 - 1
//   inter_host_bytes       bytes the hosts' NICs sent per host per iteration, averaged over the whole run
//                          (the worker hosts' links hostH.nic*.up, not the CPU hosts'; qadam's one
//                          warm-up step and the final gather of the results included)
//   exposed_comm_s         time per iteration the compute stream waited for communication
//   latency_bound_s        what the iteration loses to latency: its time minus the time of the same
//                          point with every latency of the cluster set to zero (one more simulation)
//   CPU hosts              a config's cluster.cpu_hosts serve the candidates that run servers on them
//                          (byteps with "servers": "cpu_hosts"); every other candidate runs on the same
//                          cluster without them (same hosts, NICs and topology otherwise): they would
//                          sit idle, and `bagua run` refuses them for such an algorithm. A byteps
//                          candidate that leaves `servers` open (and the config's own, in the list of
//                          every algorithm) runs once per placement on a cluster with CPU hosts, so that
//                          colocated servers and servers on the CPU hosts are ranked side by side
//   caveats                what the convergence suite measured for the candidate's kind of relaxation
//                          (asynchrony, a biased compressor without error feedback, decentralized
//                          disagreement, local steps), with its worst final-loss ratio to gradient
//                          allreduce from results/convergence/summary.md when that file is found
//
// With --json: one JSON list; for each point in sweep order, its candidates fastest first, each an object
// {point, swept, rank, algorithm, label, params, iterations (simulated), time_per_iteration_s, samples_per_s,
// speedup, speedup_over, inter_host_bytes_per_iteration, exposed_comm_per_iteration_s, latency_bound_s,
// caveats, cpu_hosts (the CPU hosts of the cluster it ran on), cpu_hosts_dropped (the config's CPU hosts
// it ran without)}.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include "experiments/backend.h"
#include "experiments/components.h"
#include "experiments/json_util.h"

namespace bagua::experiments {

struct RecommendOptions {
  std::vector<std::string> sets;  // --set overrides, applied before the candidates are made
  // --algorithms: "name" or "name(key=value,key=value)" each; empty: every registered algorithm.
  std::string algorithms;
  int64_t iterations = -1;  // --iterations: the schedule's when negative
  int jobs = 1;             // simulations run in parallel
  bool json = false;
};

// A candidate: an algorithm and the parameters it is given (the rest are its defaults).
struct Candidate {
  std::string name;
  Json params = Json::object();
};

// Parses the --algorithms list. ConfigError naming the candidate on a malformed entry or an unknown
// algorithm.
std::vector<Candidate> parse_candidates(const std::string& list, const Components& c);

// One candidate's figures on one point.
struct Recommendation {
  std::string point;  // the point id of the candidate's own run
  Json swept;         // the swept values of the config's point
  std::string algorithm;
  std::string label;       // the algorithm, with the parameters that tell it from a namesake candidate
  Json params;             // the candidate's resolved parameters
  int64_t iterations = 0;  // simulated
  double time_per_iteration_s = 0;
  double samples_per_s = 0;
  double speedup = 0;        // reference time / this time
  std::string speedup_over;  // the reference's algorithm name
  double inter_host_bytes = 0;
  double exposed_comm_s = 0;
  double latency_bound_s = 0;
  std::vector<std::string> caveats;
  int cpu_hosts = 0;          // CPU hosts in the cluster it ran on
  int cpu_hosts_dropped = 0;  // the config's CPU hosts it ran without (it runs nothing on them)
};

// Runs every candidate on every point of the config. Returns, point by point, the candidates fastest
// first (ties: the order the candidates were given in).
std::vector<std::vector<Recommendation>> recommend(const std::filesystem::path& config,
                                                   const RecommendOptions& options, const Components& c,
                                                   Backends& backends);

// Prints what recommend() returned, as text or (options.json) as the JSON list described above.
void print_recommendations(const std::vector<std::vector<Recommendation>>& ranked,
                           const RecommendOptions& options, std::ostream& out);

// The caveat lines for an algorithm and its resolved parameters; `summary_md` is the text of the
// convergence suite's summary (empty when not found: the caveats then carry no measured figure).
std::vector<std::string> convergence_caveats(const std::string& algorithm, const Json& params,
                                             const std::string& summary_md);

}  // namespace bagua::experiments
