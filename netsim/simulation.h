// The simulator's public face: a cluster description and a Simulation that runs one function per rank,
// each as a cooperative fiber, on a discrete-event engine with a flow-level network model.
//
// This header is the contract with the composition root (experiments/); everything else in netsim/ is
// internal to it.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/params.h"
#include "core/units.h"

namespace bagua::netsim {

struct LinkSpec {
  Bandwidth bandwidth;
  Time latency;
};

// A device (GPU) model for Clock::compute: duration + max(flops / peak_flops, memory /
// memory_bandwidth). Each term is rounded up to whole nanoseconds; a zero peak_flops or
// memory_bandwidth leaves its term out (that resource is not modelled). A rank's streams compute
// concurrently, without contending.
struct DeviceSpec {
  double peak_flops = 0;       // FLOP/s
  Bandwidth memory_bandwidth;  // device memory
};

// Which registered topology (netsim/topology.h) and its parameters, as given: make_topology checks
// them against the topology's schema and fills in the defaults. A bandwidth parameter is a double in
// bytes per second, a time parameter an int64_t in nanoseconds (core/params.h, ParamUnit).
struct TopologySpec {
  std::string name = "star";
  std::map<std::string, ParamValue> params;
};

// Named model factors, all 1 (or unlimited) by default so that the uncalibrated model is exactly the
// alpha-beta closed form; calibration is explicit.
struct ModelFactors {
  double bandwidth_efficiency = 1.0;  // a flow gets at most this fraction of each link's bandwidth
  double latency_factor = 1.0;        // route latency is multiplied by this
  Bandwidth flow_window_cap = Bandwidth::infinite();  // per-flow rate cap (e.g. TCP window / RTT)
};

struct ClusterSpec {
  int hosts = 1;
  int devices_per_host = 1;
  LinkSpec intra_host;  // device <-> host fabric, one full-duplex link per device (NVLink-like)
  LinkSpec nic;         // a NIC <-> its switch: one full-duplex link per host (per device: rails)
  TopologySpec topology;
  DeviceSpec device;
  ModelFactors factors;

  int world_size() const { return hosts * devices_per_host; }
};

// Throws ConfigError naming the first invalid field, prefixed by `prefix` (e.g. "cluster."), as in
// "cluster.nic.bandwidth must be > 0, got 0". Fields: hosts, devices_per_host, intra_host.bandwidth,
// intra_host.latency, nic.bandwidth, nic.latency, topology.<parameter> (the topology's own checks,
// e.g. "cluster.topology.k must be even, got 3"), device.peak_flops, device.memory_bandwidth,
// factors.bandwidth_efficiency, factors.latency_factor, factors.flow_window_cap. Link bandwidths must
// be finite and > 0; latencies >= 0; a zero peak_flops or memory_bandwidth leaves that term out of
// compute times.
void validate(const ClusterSpec& spec, const std::string& prefix = "");

// The time the simulator charges one message of `bytes` from world rank `src` to `dst` when it is alone
// on the network: route latency * latency_factor + ceil(bytes / the route's slowest capacity, capped by
// the window), the alpha-beta closed form; 0 from a rank to itself. For closed-form tests and for
// printing predicted costs before a run. `spec` must be valid.
Time lone_transfer_time(const ClusterSpec& spec, int src, int dst, Bytes bytes);

struct SimOptions {
  bool trace = false;  // record a Chrome trace-event timeline
};

// Per-rank totals over the whole run.
struct RankStats {
  Time compute;    // charged by Clock::compute on any stream
  Time busy_comm;  // time with at least one of this rank's flows or messages in flight
};

struct LinkStats {
  std::string name;  // e.g. "host3.nic.up"
  Bytes carried;
  double utilization;  // carried / (bandwidth * simulated time)
};

class Simulation {
 public:
  // Validates `spec` (ConfigError naming the field, see validate()).
  Simulation(ClusterSpec spec, SimOptions options = {});
  ~Simulation();
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  // Runs `body` on every rank (rank r on host r / devices_per_host) until every one returns; returns
  // the simulated time at which the last finished. An exception thrown by any rank stops the run and
  // is rethrown here (the first one, by simulated time); a deadlock (ranks blocked, nothing scheduled)
  // throws InternalError naming the blocked ranks and what they wait for. A Simulation runs once.
  Time run(const std::function<void(RankContext&)>& body);

  const ClusterSpec& spec() const { return spec_; }
  std::vector<RankStats> rank_stats() const;
  std::vector<LinkStats> link_stats() const;
  // The timeline recorded when options.trace was set, in the Chrome trace-event format (Perfetto).
  void write_trace(std::ostream& out) const;
  // Number of events processed (for the simulator-speed benchmark).
  uint64_t events_processed() const;

 private:
  struct Impl;
  ClusterSpec spec_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace bagua::netsim
