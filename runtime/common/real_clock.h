// Real time for real runtimes. Modelled arithmetic (flops, memory bytes) costs nothing extra — it
// really happened — while a profiled duration is emulated by spinning, so profile workloads put real
// compute gaps between real communication (a sleep would be too coarse for sub-millisecond layers).
#pragma once

#include <chrono>

#include "core/clock.h"

namespace bagua::runtime {

class RealClock final : public Clock {
 public:
  using Steady = std::chrono::steady_clock;
  explicit RealClock(Steady::time_point origin = Steady::now()) : origin_(origin) {}
  Time now() const override;
  Time compute(const Work& work) override;
  void sleep(Time d) override;

 private:
  Steady::time_point origin_;
};

}  // namespace bagua::runtime
