// A simulated rank's RankContext: its transport, its clock, streams and events as fibers, and a tracer.
//
// Clock::compute(work) blocks the calling fiber (the rank's main fiber or one of its streams) for
//   work.duration + max(flops / device.peak_flops, memory / device.memory_bandwidth)
// where `device` is the cluster's device (a worker's Processor::kDevice work), its cpu (a worker's
// Processor::kHostCpu work) or its CPU hosts' cpu (any work of a service rank); a zero peak_flops or
// memory_bandwidth makes its term 0 (that resource is not modelled), each
// term rounded up to whole nanoseconds. Streams of one rank compute independently, as concurrent
// kernels on one GPU would if they did not contend: the device is not shared between a rank's streams.
// Clock::sleep(d) blocks without charging compute.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/context.h"
#include "netsim/simulation.h"
#include "netsim/transport.h"

namespace bagua::netsim {

class World;

class SimClock final : public Clock {
 public:
  SimClock(World& world, int rank) : world_(world), rank_(rank) {}
  Time now() const override;
  Time compute(const Work& work) override;
  void sleep(Time d) override;
  // The modelled duration of `work` on `device` (exposed for tests and cost predictions).
  static Time duration_of(const Work& work, const DeviceSpec& device);

 private:
  World& world_;
  int rank_;
};

class SimTracer final : public Tracer {
 public:
  SimTracer(World& world, int rank) : world_(world), rank_(rank) {}
  void span(std::string_view name, std::string_view category, int track, Time begin, Time end) override;
  void begin_iteration(int64_t k) override;

 private:
  World& world_;
  int rank_;
};

class SimContext final : public RankContext {
 public:
  SimContext(World& world, int rank);
  Transport& transport() override { return transport_; }
  Clock& clock() override { return clock_; }
  std::unique_ptr<Stream> make_stream(std::string name) override;
  EventPtr make_event() override;
  Tracer* tracer() override;

 private:
  World& world_;
  int rank_;
  SimTransport transport_;
  SimClock clock_;
  SimTracer tracer_;
  std::vector<bool> tracks_in_use_;  // [k]: track k + 1 is a live stream's
};

}  // namespace bagua::netsim
