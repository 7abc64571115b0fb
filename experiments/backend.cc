#include "experiments/backend.h"

#include <cstdlib>
#include <optional>

#include "core/check.h"
#include "netsim/simulation.h"

namespace bagua::experiments {

int launched_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK"}) {
    if (const char* v = std::getenv(var)) return std::atoi(v);
  }
  return 0;
}

namespace {

// The links the point's cluster states, for a real runtime's cost models (World::set_link_hint);
// none without a cluster (a job launched without one: NCCL's defaults).
std::optional<LinkHint> link_hint_of(const PointConfig& point) {
  if (!point.has_cluster) return std::nullopt;
  return netsim::link_hint_of(point.cluster);
}

WorldRequest request_of(const PointConfig& point, int* argc, char*** argv) {
  WorldRequest q;
  if (point.has_cluster) {
    q.cluster = &point.cluster;
    q.ranks = point.world_size();
    q.ranks_per_host = point.cluster.devices_per_host;
  }
  q.trace = point.output.trace;
  q.trace_filter = point.output.trace_filter;
  q.watchdog = point.runtime_options.watchdog;
  q.argc = argc;
  q.argv = argv;
  return q;
}

}  // namespace

// The job this process is one rank of: the world of a job runtime.
struct Backends::Job {
  std::string runtime;
  int ranks_per_host = 0;
  Time watchdog;
  std::unique_ptr<World> world;
};

Backends::Backends(const RuntimeRegistry& runtimes, int* argc, char*** argv)
    : runtimes_(runtimes), argc_(argc), argv_(argv) {}
Backends::~Backends() = default;

const RuntimeTraits& Backends::traits(const PointConfig& point) const {
  return runtimes_.at(point.runtime).traits;
}

void Backends::start_job(const PointConfig& point) {
  BAGUA_CHECK(traits(point).job, "not a job runtime");
  const int ranks_per_host = point.has_cluster ? point.cluster.devices_per_host : 0;
  if (job_) {
    if (job_->runtime != point.runtime) {
      throw ConfigError("runtime: one run cannot use both " + job_->runtime + " and " + point.runtime +
                        " (a job starts once per process: MPI cannot start twice)");
    }
    if (job_->ranks_per_host != ranks_per_host) {
      throw ConfigError("cluster.devices_per_host: every " + point.runtime +
                        " point of a run needs the same host layout (" +
                        std::to_string(job_->ranks_per_host) + " and " +
                        std::to_string(ranks_per_host) + ")");
    }
    if (job_->watchdog != point.runtime_options.watchdog) {
      throw ConfigError("runtime_options.watchdog: every " + point.runtime +
                        " point of a run needs the same limit (" + to_string(job_->watchdog) + " and " +
                        to_string(point.runtime_options.watchdog) + ")");
    }
    return;
  }
  auto job = std::make_unique<Job>();
  job->runtime = point.runtime;
  job->ranks_per_host = ranks_per_host;
  job->watchdog = point.runtime_options.watchdog;
  job->world = runtimes_.make(point.runtime, request_of(point, argc_, argv_));
  BAGUA_CHECK(job->world->is_job(), "runtime '" + point.runtime + "' registered as a job runtime");
  job_ = std::move(job);
}

int Backends::world_size(const PointConfig& point) {
  if (!traits(point).job) return point.world_size();
  start_job(point);
  return job_->world->size();
}

bool Backends::is_writer() const {
  return !job_ || job_->world->rank() == 0;
}

std::vector<uint8_t> Backends::share_from_writer(std::vector<uint8_t> bytes) {
  if (!job_ || job_->world->size() == 1) return bytes;
  job_->world->run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    int64_t n = static_cast<int64_t>(bytes.size());
    if (t.rank() == 0) {
      for (int r = 1; r < t.size(); ++r) {
        t.send(BufferView::of(std::span<int64_t>(&n, 1)), r, 0);
        t.send(BufferView::of(std::span<uint8_t>(bytes)), r, 1);
      }
    } else {
      t.recv(BufferView::of(std::span<int64_t>(&n, 1)), 0, 0);
      bytes.resize(static_cast<size_t>(n));
      t.recv(BufferView::of(std::span<uint8_t>(bytes)), 0, 1);
    }
  });
  return bytes;
}

void Backends::run(const PointConfig& point, const std::function<void(RankContext&)>& body,
                   std::optional<RunReport>* report) {
  if (report) report->reset();
  if (traits(point).job) {
    start_job(point);
    if (point.has_cluster && point.world_size() != job_->world->size()) {
      throw ConfigError("cluster: hosts x devices_per_host = " + std::to_string(point.world_size()) +
                        " ranks, but mpirun started " + std::to_string(job_->world->size()) +
                        " processes");
    }
    job_->world->set_link_hint(link_hint_of(point));
    job_->world->run(body);
    return;
  }
  const std::unique_ptr<World> world = runtimes_.make(point.runtime, request_of(point, argc_, argv_));
  BAGUA_CHECK(!world->is_job(), "runtime '" + point.runtime + "' registered as in-process");
  world->set_link_hint(link_hint_of(point));
  world->run(body);
  if (report) {
    if (const RunReport* r = world->report()) *report = *r;
  }
}

}  // namespace bagua::experiments
