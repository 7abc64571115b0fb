// The per-rank Clock: `now()` and `compute(work)`.
//
// On the simulator, compute(work) advances the calling stream's virtual time by a device model:
//   duration + max(flops / peak flops, memory bytes / memory bandwidth)     (a roofline)
// of the processor the work runs on: the rank's device (its GPU), or its host's CPU (a server process's
// arithmetic beside the training, BytePS's sums; a service rank has only its host's CPU).
// On a real runtime, modelled arithmetic (flops, memory) costs nothing extra — the arithmetic really
// happened — while a profiled `duration` is emulated for real, so that profile workloads of large
// models put real compute gaps between real communication.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/units.h"

namespace bagua {

// Where a Work runs.
enum class Processor : uint8_t { kDevice, kHostCpu };
inline std::string_view to_string(Processor p) {
  return p == Processor::kDevice ? "device" : "host cpu";
}

struct Work {
  double flops = 0;  // floating-point operations of real or modelled arithmetic
  Bytes memory{0};   // bytes through device memory
  Time duration{};   // a profiled duration, charged as is (and emulated on real runtimes)
  // What the work is, for timelines ("forward conv1_1"); must outlive the compute() call. Empty:
  // "compute". Sums of works have none.
  std::string_view label{};
  Processor processor = Processor::kDevice;

  // Sums of works run where the left one does.
  Work operator+(const Work& o) const {
    return {flops + o.flops, memory + o.memory, duration + o.duration, {}, processor};
  }
  bool empty() const { return flops == 0 && memory.count() == 0 && duration == Time::zero(); }
};

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Time now() const = 0;
  // Charge `work` to the calling stream; returns the time it was charged (simulator: modelled time).
  virtual Time compute(const Work& work) = 0;
  // Let `d` pass on the calling stream without using the device.
  virtual void sleep(Time d) = 0;
};

}  // namespace bagua
