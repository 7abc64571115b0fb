// Experiment configs: one JSON file describes one experiment (configs/README.md is the user's guide).
//
// Loading a config:
//   1. read the file (JSON; `//` and `/* */` comments allowed);
//   2. apply the `--set dotted.path=value` overrides (the value is JSON when it parses as JSON,
//      otherwise a string), in the order given;
//   3. expand the sweep (experiments/sweep.h) into points, each value set at its axis path;
//   4. validate every point into a PointConfig: every object rejects unknown keys, every value is
//      checked for its type and range, component parameters are checked against the registered
//      component's ParamSchema. The first error is thrown as ConfigError, one line naming the
//      JSON path:
//        cluster.nic.bandwidth: must be > 0, got "0 Gbps"
//        algorithm.hierarchical: expected bool, got 3
//        schedule.iterationz: unknown key (known: iterations, eval_interval, bucket_size, overlap,
//        measured_from)
//      When the config has several points, the line ends with the point:
//      " (sweep point 3/6: a=1, b=2)".
//
// Schema (keys in the order of the resolved config; * = required):
//
//   name*          letters, digits, '_', '-', '.': names the experiment and its default output folder
//   description    string
//   seed           integer >= 0, default 1: data sets, initial weights, randomized compressors
//   runtime        a registered runtime (experiments/runtimes.cc, `bagua list`), default "sim": "sim"
//                  the discrete-event simulator; "threads" one thread per rank in this process (real
//                  time); "mpi" Open MPI processes started by mpirun (real time); "nccl" the same with
//                  one GPU per rank and NCCL
//   cluster*       (optional for job runtimes, mpi and nccl: the job's size is mpirun's; given, it must
//                  match)
//     extends      a cluster file (configs/clusters/*.json: a cluster object, which may extend
//                  another); the keys given here override its keys, objects merging key by key
//     hosts*, devices_per_host*       integers >= 1; rank r runs on host r / devices_per_host
//     intra_host*  {"bandwidth"*, "latency"*}: each device's full-duplex link to its host fabric
//     nic*         {"bandwidth"*, "latency"*}: each host's full-duplex link to its switch
//     topology     a registered topology's name (default "star": one non-blocking switch), or
//                  {"name"*, ...its parameters}: "leaf_spine" {hosts_per_leaf*, oversubscription,
//                  spine_bandwidth, spine_latency}, "fat_tree" {k*, oversubscription},
//                  "rail_optimized" {hosts_per_leaf, oversubscription}, "torus" {x*, y*, z}
//                  (netsim/topologies/*.h; `bagua list`); resolved to the bare name when it has no
//                  parameters, else to an object with the defaults filled in
//     device       {"peak_flops", "memory_bandwidth"}: the device model of Clock::compute; default an
//                  NVIDIA V100 SXM2 (see config.cc); "compute_capability" (CUDA's major.minor, default
//                  7.0) and "nic_path" ("pix", "pxb" (default), "phb", "sys": the PCIe path from a
//                  device to its NIC), which NCCL's tuning model reads (core/collectives/nccl.h)
//     cpu          {"memory_bandwidth"}: each worker host's CPU, for Work on Processor::kHostCpu (a
//                  colocated BytePS server's sums); default_cpu() (see config.cc). A CPU host's CPU is
//                  cpu_hosts.memory_bandwidth, default this one. Written out only when given
//     factors      the network model's factors (netsim/simulation.h ModelFactors), each off by
//                  default (the uncalibrated model is exactly the alpha-beta closed form):
//                  "bandwidth_efficiency" in (0, 1] (default 1), "latency_factor" > 0 (default 1),
//                  "flow_window_cap" a per-flow rate cap, a bandwidth or "inf" (default),
//                  "tcp_window" a size, default "0 B" (none): between hosts a connection moves at most
//                  one window per round trip (2 x route latency), "connections_per_peer" >= 1
//                  (default 1): connections carrying each message (the window is per connection),
//                  "host_bandwidth_ceiling" a bandwidth or "inf" (default): the most one host's
//                  inter-host flows may move out (and, apart, in) together, "message_overhead" and
//                  "message_gap" times, default "0 s": LogGP's o (sender CPU time before a message
//                  between hosts leaves, and receiver CPU time before its receive completes) and g
//                  (one rank injects messages between hosts at least max(o, g) apart),
//                  "tcp_slow_start" false (default), true, or {"initial_window" (default "14480 B"),
//                  "restart_after_idle" (default true), "rto_min" (default "200 ms")}: Linux's TCP slow
//                  start per connection (a pair of world ranks), from the initial window, doubling per
//                  round trip up to tcp_window (which it needs), halved per RTO (RTT + rto_min) of
//                  idle; Linux's figures (netsim/simulation.h, ModelFactors)
//     transport    {"model": "alpha_beta" (default: a send completes when its bytes have landed) |
//                  "mpi" (eager below "eager_limit", default "64 KiB" between hosts, and
//                  "eager_limit_intra_host", default "4 KiB": the send completes at once; above, a
//                  rendezvous round trip before the bytes) | "nccl" ("slots" >= 1, default 8, credit
//                  slots per connection of "slot_bytes", default "512 KiB": a send completes once it
//                  holds a slot), "ordered" (any model; default false: every message is its own
//                  flow; true: FIFO transfer per connection, the messages from one world rank to
//                  another move their bytes one after another, as one TCP stream or RDMA queue pair)};
//                  the defaults are Open MPI 4.1's and NCCL's (netsim/model_factors.cc)
//     intra_host, nic, topology, device, cpu, factors and transport matter only to the simulator; for
//     other runtimes they are checked and left out of the resolved config.
//   workload*      {"name"*, "batch_size" (per rank, default 32), ...the workload's parameters}
//                  e.g. {"name": "profile", "file": "configs/workloads/vgg16.json", "batch_size": 32}
//                  (a profile file is read and checked when the config is loaded)
//   algorithm*     {"name"*, ...the algorithm's parameters}
//   optimizer*     {"name"*, ...the optimizer's parameters}
//   schedule       {"iterations" >= 1 (default 100), "eval_interval" >= 0 (default 0: evaluate the
//                  full loss only after the last iteration), "bucket_size" (default "10 MiB"),
//                  "overlap" (default true), "measured_from" (the first measured iteration, from 0:
//                  default 1, or 0 with one iteration; below "iterations"; the resolved config lists it
//                  only when given)}
//   output         {"dir" (default "results/<name>"; `bagua run --out` overrides), "trace" (default
//                  false; a Chrome trace-event timeline per point, trace.json: on the simulator in
//                  virtual time, on the real runtimes in real time, gathered to rank 0),
//                  "trace_ranks" (default every rank: a list of the ranks to record),
//                  "trace_iterations" (default every one: [first, last], the iterations to record,
//                  from 0)}
//   sweep          {"mode": "grid" | "zip", "axes": {"dotted.path": [values], ...}}
//
// Quantities are strings with units (experiments/quantity.h): bandwidths "100 Gbps", "12.5 GB/s"; times
// "5 us", "1.5 ms"; sizes "10 MiB", "4096 B"; flops "15.7 TFLOPS". A bare number is an error.
//
// Limits. Each breach is a ConfigError naming the JSON path, like any other mistake (`bagua` exits 2):
//   JSON         a key given twice in one object; nesting deeper than 64 levels (kMaxJsonDepth), in the
//                file or in a --set value, and dotted paths of more than 64 segments; numbers beyond a
//                double's range (1e400); integers beyond int64 (or 9e15 written as 1e16)
//   quantities   times 0 .. 1 day, bandwidths 1 Kbps .. 1e18 B/s (experiments/quantity.h, "Ranges": what
//                the integer-nanosecond clock can add up); bandwidth x factors.bandwidth_efficiency at
//                least 1 Kbps; factors.latency_factor at most 1000
//   memory       estimated from the config before anything is allocated (config.cc, "memory"): the
//                result rows (iterations x ranks), a synthetic data set (samples x features), the
//                simulator's links (hosts x devices_per_host) and the sweep's points, each at most the
//                machine's physical memory
//   sweep        at most 1,000,000 points (kMaxSweepPoints)
//   name         at most 100 characters
// Values echoed in messages are cut to 80 characters; a near-miss key, name, choice or unit gets
// "did you mean ...?" (edit distance; experiments/json_util.h).
//
// Files named in a config ("extends", a profile's "file") are looked up relative to the current
// directory, then relative to the config file's directory and each directory above it.
//
// The resolved config of a point is its canonical form: every default filled in, every quantity written
// in one canonical unit, cluster "extends" replaced by the cluster's content, component parameters in
// their schema's order, output.dir left out (it says where results go, not what they are). The point id
// is "p<index>-<hash>": the point's index in the sweep, zero-padded, and the first 8 hex digits of the
// FNV-1a 64-bit hash of the resolved config's compact JSON text.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/params.h"
#include "core/trace.h"
#include "experiments/components.h"
#include "experiments/json_util.h"
#include "experiments/sweep.h"
#include "netsim/simulation.h"
#include "runtime/common/watchdog.h"

namespace bagua::experiments {

struct ComponentConfig {
  std::string name;
  Params params;  // every parameter of the component's schema, defaults filled in
};

// The workload whose parameter "file" names a profile file (core/models/profile.h).
inline constexpr const char* kProfileWorkload = "profile";

struct WorkloadConfig {
  std::string name;                  // a registered workload
  int64_t batch_size = 32;           // per rank
  std::string file;                  // "profile": the profile file as written in the config
  std::filesystem::path file_found;  // "profile": where the file was found
  Params params;
};

struct ScheduleConfig {
  int64_t iterations = 100;
  int64_t eval_interval = 0;
  Bytes bucket_size{10 << 20};
  bool overlap = true;
};

struct OutputConfig {
  std::string dir;
  bool trace = false;        // a Chrome trace-event timeline per point (trace.json)
  TraceFilter trace_filter;  // output.trace_ranks, output.trace_iterations
};

// Settings of a real runtime's run that never change its results: left out of the resolved config and
// of the point's id, so that a rerun with other settings resumes the same points.
struct RuntimeOptions {
  // A wait (receive, send, native collective) of a real runtime longer than this ends the run with one
  // line naming the rank, the peer, the operation and the bucket (runtime/common/watchdog.h). The
  // default is Bagua's comm-op watchdog, 300 s (BaguaSys/bagua
  // rust/bagua-core/bagua-core-internal/src/lib.rs, comm_monitor).
  Time watchdog = runtime::Watchdog::kDefaultLimit;
};

// One point of an experiment, validated.
struct PointConfig {
  int index = 0;      // position in the sweep, from 0
  std::string id;     // "p003-1a2b3c4d"
  SweptValues swept;  // this point's sweep values
  std::string name;
  std::string description;
  uint64_t seed = 1;
  std::string runtime = kDefaultRuntime;  // a registered runtime (experiments/runtimes.h)
  bool has_cluster = false;  // false only for a job runtime without a cluster (the job's world)
  netsim::ClusterSpec cluster;
  WorkloadConfig workload;
  ComponentConfig algorithm;
  ComponentConfig optimizer;
  ScheduleConfig schedule;
  // schedule.measured_from: the first iteration (from 0) that time_per_iteration_s measures; the ones
  // before it (warm-up) run but are not counted (experiments/results.h).
  int64_t measured_from = 1;
  OutputConfig output;
  RuntimeOptions runtime_options;
  Json resolved;  // the canonical form (see above)

  int world_size() const { return cluster.world_size(); }
};

struct Experiment {
  std::string name;
  std::vector<std::string> axes;  // sweep axis paths, in order (empty without a sweep)
  std::vector<PointConfig> points;
  std::string output_dir;  // where results go (output.dir, or --out)
};

struct LoadOptions {
  std::vector<std::string> sets;       // "dotted.path=value", applied in order before validation
  std::optional<std::string> out_dir;  // replaces output.dir
  // The most bytes the estimated memory may take (see "Limits" above); default physical_memory_bytes().
  std::optional<double> memory_limit;
};

// This machine's physical memory in bytes (sysconf), 1 TiB when unknown.
double physical_memory_bytes();

// Loads, overrides, expands and validates a config file. Throws ConfigError (one line).
Experiment load_experiment(const std::filesystem::path& file, const LoadOptions& options,
                           const Components& c);

// The same from parsed JSON; `config_dir` is where relative file names are looked up (after the current
// directory, and before the directories above it).
Experiment load_experiment_json(Json config, const std::filesystem::path& config_dir,
                                const LoadOptions& options, const Components& c);

// Applies one "dotted.path=value" override. ConfigError on a malformed override.
void apply_override(Json& config, const std::string& assignment);

// FNV-1a 64-bit hash of `text`.
uint64_t fnv1a64(std::string_view text);

// The V100 device model used when a cluster gives none (sources in config.cc).
netsim::DeviceSpec default_device();
// The host CPU model used when a cluster gives none, for every host's CPU (cluster.cpu and
// cluster.cpu_hosts): what a BytePS server's sums achieve (sources in config.cc).
netsim::DeviceSpec default_cpu();

}  // namespace bagua::experiments
