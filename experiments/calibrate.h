// `bagua calibrate`: measure a real runtime's network and write the cluster file that makes the
// simulator predict it.
//
// Terms:
//   pair          two world ranks measured against each other: the *inter-host* pair is rank 0 and the
//                 first rank of another host, the *intra-host* pair rank 0 and the next rank of its
//                 host
//   ping-pong     the first rank of a pair sends `size` bytes, the second sends them back; half the
//                 round trip is the one-way time of one message of that size
//   stream        the first rank posts `stream_messages` sends of `stream_size` bytes at once, the
//   second
//                 rank receives them all and answers with one byte; the time from the first post to the
//                 answer, less one round trip of latency, gives the pair's streaming bandwidth
//   all pairs     every rank streams to the rank of the same local index on the next host at once (a
//                 ring of hosts), so every NIC carries every rank of its host in each direction: the
//                 slowest rank's time gives what one host achieves in all
//   burst         the first rank posts `burst_messages` sends of 8 bytes at once and waits for all; the
//                 time beyond that of one such send, per extra message, is the per-message gap
//   device pass   every rank at once encodes and decodes `device_elements` floats with MinMax uint8
//                 (Bagua's ByteGrad compressor), the memory-bound kind of arithmetic that a real
//                 runtime does on the rank's own processor (compression, averaging, optimizer
//                 updates); the slowest rank's time of it gives the device model's memory bandwidth.
//                 Its floats are gradient-like (fill_device_pass_input): a chunk whose min or max is
//                 exactly zero takes MinMax's exact path for which zero wins (the reference's scalar
//                 scan, core/compress/kernels.cc checked_min_max), which made a pass over the former
//                 input, i % 1000 / 1000 (min 0), time encoding about 3x slower than on a gradient
//   sample        one timed repetition; every figure below is the median of its samples
//
// The fit (alpha-beta on every link, LogGP's g for the per-message cost):
//   one-way(size) = alpha + size / beta, least squares over the sizes >= the largest / 64 (all
//                   of them when fewer than two are) for 1 / beta, alpha = the smallest size's one-way
//                   less its size / beta
//   intra_host.latency = alpha(intra) / 2          (a same-host route crosses two device links)
//   nic.latency        = (alpha(inter) - 2 intra_host.latency) / 2   (a route between hosts crosses two
//                        device links and two NIC links; a lone message's CPU costs at both ends, LogGP's
//                        o, are part of alpha and so of the route's latency)
//   intra_host.bandwidth = the intra-host pair's streaming bandwidth
//   nic.bandwidth        = all pairs: ranks_per_host x stream bytes / (time - 2 alpha(inter)), both
//                        directions of every NIC busy, as a collective's traffic has them
//   factors.flow_window_cap = the inter-host pair's streaming bandwidth, when it is below 90% of
//                        nic.bandwidth (one flow cannot fill the NIC: a TCP window, a socket thread)
//   factors.message_gap = g = (burst - one send) / (burst_messages - 1): LogGP's gap, the least time
//                        between two messages one rank injects (or the wire time of 8 B, where longer:
//                        then g is taken as 0); between hosts only. A burst costs more per message
//                        than a lone message's CPU time (the transport's queueing, one system call a
//                        message), so it is the gap, not o, that it measures.
//   device.memory_bandwidth = the device pass's modelled bytes (the compressor's encode_cost and
//                        decode_cost) / its time, and device.peak_flops = its modelled flops / its
//                        time (a lower bound of the processor's rate: a memory-bound pass does not reach
//                        its peak): the simulator's roofline then charges that pass what it took here,
//                        all ranks computing at once as in training, and every pass like it alike
//   transport.model    = the runtime's own ("mpi": Open MPI's eager/rendezvous; "nccl": its slots)
// With one rank per host there is no intra-host pair: the device links get latency 0 and the NIC's
// bandwidth (each carries exactly its host's NIC traffic, so it never limits). With one host there is
// no NIC to measure: the NIC gets the device links' figures (a one-host cluster never uses it).
//
// Bad measurements stop with CalibrationError, one line naming the pair and the figure: a spread
// (interquartile range) larger than the median at the smallest size, a largest message not slower than
// the smallest, or slower by less than its own spread, a stream no slower than its latency.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/context.h"
#include "core/units.h"
#include "experiments/backend.h"
#include "experiments/config.h"
#include "experiments/json_util.h"
#include "netsim/simulation.h"

namespace bagua::experiments {

class CalibrationError : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

struct CalibrationOptions {
  // Ping-pong sizes: from min_size, times `factor`, up to max_size.
  Bytes min_size{8};
  Bytes max_size{4 << 20};
  int factor = 8;
  // Samples per ping-pong size: at most `repeats`, fewer when they would take longer than
  // `size_budget`, never fewer than `min_repeats`.
  int repeats = 30;
  int min_repeats = 5;
  Time size_budget = Time::s(1);
  Bytes stream_size{1 << 20};
  int stream_messages = 16;
  int stream_repeats = 3;
  int burst_messages = 64;
  int burst_repeats = 10;
  int warmup = 2;                            // unrecorded rounds before each measurement
  size_t device_elements = size_t{1} << 22;  // 16 MiB of floats: far larger than a processor's caches
  int device_repeats = 5;
};

// Throws ConfigError naming the option when one is out of range.
void validate(const CalibrationOptions& options);

// Fills `x` with the device pass's input: floats drawn from N(0, 0.01^2) with a fixed seed, as
// bench_compress draws its input (bench/compress.cc): a gradient's spread of signs and magnitudes, no
// zero at its min or max.
void fill_device_pass_input(std::span<float> x);

struct SizeSamples {
  Bytes size;
  std::vector<Time> one_way;
};

struct PairMeasurement {
  int from = 0;  // world ranks
  int to = 0;
  std::vector<SizeSamples> pingpong;  // ascending sizes
  std::vector<Time> stream;
  std::vector<Time> burst;
  std::vector<Time> single;  // one send of the burst's size, timed the same way
};

struct Measurements {
  CalibrationOptions options;
  int hosts = 1;
  int ranks_per_host = 1;
  std::optional<PairMeasurement> inter;  // when hosts >= 2
  std::optional<PairMeasurement> intra;  // when ranks_per_host >= 2
  std::vector<Time> all_pairs;           // when hosts >= 2: the slowest rank's time, per sample
  Work device_work;                      // the modelled cost of one device pass
  std::vector<Time> device;              // the slowest rank's time of a device pass, per sample
};

// Collective over every rank of ctx's world (ranks on hosts by ctx.transport().host_of; every host must
// hold the same number of ranks). Returns the measurements on rank 0 (elsewhere: its layout only).
Measurements measure(RankContext& ctx, const CalibrationOptions& options);

// One link's fitted alpha-beta figures and the spread they came with.
struct LinkFit {
  Time alpha;      // one-way time of an empty message
  Bandwidth beta;  // from the ping-pong slope
  Bandwidth stream;
};

struct Calibration {
  int hosts = 1;
  int ranks_per_host = 1;
  netsim::LinkSpec intra_host;
  netsim::LinkSpec nic;
  Bandwidth flow_window_cap = Bandwidth::infinite();
  Time message_gap;  // LogGP's g, between hosts (the simulator charges none within a host)
  // cluster.transport.model: "mpi" or "nccl" for those runtimes, whose send completion the simulator
  // models (netsim/transport.h); "alpha_beta" otherwise.
  std::string transport_model = "alpha_beta";
  std::optional<LinkFit> inter;
  std::optional<LinkFit> intra;
  std::optional<Bandwidth> host_bandwidth;  // all pairs
  Bandwidth device_memory_bandwidth;        // from the device pass (0: none measured)
  double device_peak_flops = 0;             // FLOP/s, likewise
};

// The fit above. Throws CalibrationError for bad measurements.
Calibration fit(const Measurements& m);

// Measures the world that `point` runs on (its runtime and cluster; under mpirun, the job's), fits it,
// and on the writing process writes the cluster file to `out_file` (through a temporary file renamed
// over it, so that a failed run leaves an existing file as it was) and prints the fitted figures on
// `out`. Throws CalibrationError or ConfigError.
void calibrate_world(const PointConfig& point, Backends& backends, const CalibrationOptions& options,
                     const std::string& out_file, std::ostream& out);

// The cluster file: a commented JSON object (topology star) that `bagua run` accepts as a cluster or
// extends; the comment above it gives every measured figure.
std::string cluster_file(const Calibration& c, const Measurements& m, const std::string& origin);

}  // namespace bagua::experiments
