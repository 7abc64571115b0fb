// Real time for real runtimes. Modelled arithmetic (flops, memory bytes) costs nothing extra — it
// really happened — while a profiled duration is emulated for real, so profile workloads put real
// compute gaps between real communication: a sleep for all but the last kSpinMargin, then a spin (a
// sleep alone would be too coarse for sub-millisecond layers; a spin alone would take the CPU that the
// communication thread needs, which a GPU's compute would not).
#pragma once

#include <chrono>

#include "core/clock.h"

namespace bagua::runtime {

class RealClock final : public Clock {
 public:
  using Steady = std::chrono::steady_clock;
  explicit RealClock(Steady::time_point origin = Steady::now()) : origin_(origin) {}
  static constexpr std::chrono::milliseconds kSpinMargin{2};

  Time now() const override;
  Time compute(const Work& work) override;
  void sleep(Time d) override;

 private:
  Steady::time_point origin_;
};

}  // namespace bagua::runtime
