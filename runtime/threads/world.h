// A world of ranks as threads of this process, with real time (an in-process World, core/world.h).
#pragma once

#include <functional>

#include "core/context.h"
#include "core/world.h"

namespace bagua::runtime::threads {

class ThreadsWorld final : public World {
 public:
  // `ranks` threads; rank r is on host r / ranks_per_host.
  explicit ThreadsWorld(int ranks, int ranks_per_host = 1);
  // Runs `body` on every rank, each on its own thread, and joins them. If a rank throws, the others'
  // waits are aborted and the first exception is rethrown here.
  void run(const std::function<void(RankContext&)>& body) override;
  int rank() const override { return 0; }
  int size() const override { return ranks_; }

 private:
  int ranks_;
  int ranks_per_host_;
};

}  // namespace bagua::runtime::threads
