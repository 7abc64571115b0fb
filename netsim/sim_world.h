// The simulator as a runtime World (core/world.h): every rank a fiber of this process, virtual time.
// Each run() is a fresh Simulation of the same cluster (a Simulation runs once), so that runs do not
// share virtual time or statistics; report() is the last run's end time, rank and link totals, and
// timeline.
#pragma once

#include <functional>

#include "core/world.h"
#include "netsim/simulation.h"

namespace bagua::netsim {

class SimWorld final : public bagua::World {
 public:
  // Validates `spec` (ConfigError naming the field, see validate()).
  explicit SimWorld(ClusterSpec spec, SimOptions options = {});

  int rank() const override { return 0; }
  int size() const override { return spec_.total_ranks(); }
  // Simulation::run on a new Simulation; its exception, if any, is rethrown and no report is kept.
  void run(const std::function<void(RankContext&)>& body) override;
  const RunReport* report() const override { return has_report_ ? &report_ : nullptr; }

 private:
  ClusterSpec spec_;
  SimOptions options_;
  RunReport report_;
  bool has_report_ = false;
};

}  // namespace bagua::netsim
