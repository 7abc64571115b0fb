#include "netsim/sim_world.h"

#include <sstream>
#include <utility>

namespace bagua::netsim {

SimWorld::SimWorld(ClusterSpec spec, SimOptions options) : spec_(std::move(spec)), options_(options) {
  validate(spec_);
}

void SimWorld::run(const std::function<void(RankContext&)>& body) {
  has_report_ = false;
  Simulation simulation(spec_, options_);
  RunReport report;
  report.end = simulation.run(body);
  report.ranks = simulation.rank_stats();
  report.links = simulation.link_stats();
  if (options_.trace) {
    std::ostringstream trace;
    simulation.write_trace(trace);
    report.trace = trace.str();
  }
  report_ = std::move(report);
  has_report_ = true;
}

}  // namespace bagua::netsim
