// A world of ranks as threads of this process, with real time (an in-process World, core/world.h).
#pragma once

#include <functional>

#include "core/context.h"
#include "core/units.h"
#include "core/world.h"
#include "runtime/common/watchdog.h"

namespace bagua::runtime::threads {

class ThreadsWorld final : public World {
 public:
  // `ranks` threads; rank r is on host r / ranks_per_host. A receive waiting longer than `watchdog`
  // ends the run (runtime/common/watchdog.h). `service_ranks` more threads after them (core/services.h),
  // each on a host of its own after the workers' hosts.
  explicit ThreadsWorld(int ranks, int ranks_per_host = 1, Time watchdog = Watchdog::kDefaultLimit,
                        int service_ranks = 0);
  // Runs `body` on every rank, each on its own thread, and joins them. If a rank throws, the others'
  // waits are aborted and the first exception is rethrown here. When the watchdog expires, every
  // rank's waits are aborted with the watchdog's line, which run() throws (std::runtime_error).
  void run(const std::function<void(RankContext&)>& body) override;
  int rank() const override { return 0; }
  int size() const override { return ranks_ + service_ranks_; }
  void set_link_hint(std::optional<LinkHint> hint) override { hint_ = hint; }

 private:
  int ranks_;
  int ranks_per_host_;
  Time watchdog_;
  int service_ranks_;
  std::optional<LinkHint> hint_;
};

}  // namespace bagua::runtime::threads
