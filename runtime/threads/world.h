// A world of ranks as threads of this process, with real time.
#pragma once

#include <functional>

#include "core/context.h"

namespace bagua::runtime::threads {

class ThreadsWorld {
 public:
  // `ranks` threads; rank r is on host r / ranks_per_host.
  explicit ThreadsWorld(int ranks, int ranks_per_host = 1);
  // Runs `body` on every rank, each on its own thread, and joins them. If a rank throws, the others'
  // waits are aborted and the first exception is rethrown here.
  void run(const std::function<void(RankContext&)>& body);

 private:
  int ranks_;
  int ranks_per_host_;
};

}  // namespace bagua::runtime::threads
