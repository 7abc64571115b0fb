#include "runtime/common/real_clock.h"

#include <thread>

namespace bagua::runtime {

Time RealClock::now() const {
  return Time::ns(std::chrono::duration_cast<std::chrono::nanoseconds>(Steady::now() - origin_).count());
}

Time RealClock::compute(const Work& work) {
  if (work.duration <= Time::zero()) return Time::zero();
  const auto until = Steady::now() + std::chrono::nanoseconds(work.duration.nanoseconds());
  while (Steady::now() < until) {
    // Spin: the emulated device is busy for exactly this long.
  }
  return work.duration;
}

void RealClock::sleep(Time d) {
  if (d > Time::zero()) std::this_thread::sleep_for(std::chrono::nanoseconds(d.nanoseconds()));
}

}  // namespace bagua::runtime
