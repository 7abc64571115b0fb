#include "runtime/common/real_clock.h"

#include <thread>

namespace bagua::runtime {

Time RealClock::now() const {
  return Time::ns(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Steady::now() - origin_).count());
}

Time RealClock::compute(const Work& work) {
  if (work.duration <= Time::zero()) return Time::zero();
  const auto until = Steady::now() + std::chrono::nanoseconds(work.duration.nanoseconds());
  // The emulated device is busy until `until`. A GPU computing leaves the host's cores to the
  // communication thread, so sleep through most of the time and spin only the last stretch, which keeps
  // the end accurate (a sleep may wake late by the scheduler's latency, well under the margin).
  if (until - Steady::now() > kSpinMargin) std::this_thread::sleep_until(until - kSpinMargin);
  while (Steady::now() < until) {
  }
  return work.duration;
}

void RealClock::sleep(Time d) {
  if (d > Time::zero()) std::this_thread::sleep_for(std::chrono::nanoseconds(d.nanoseconds()));
}

}  // namespace bagua::runtime
