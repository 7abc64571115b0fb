#include "experiments/backend.h"

#include <cstdlib>
#include <sstream>

#include "core/check.h"
#include "runtime/threads/world.h"

#if BAGUA_HAVE_MPI
#include "runtime/mpi/world.h"
#endif
#if BAGUA_HAVE_NCCL
#include "runtime/nccl/world.h"
#endif

namespace bagua::experiments {

int launched_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK"}) {
    if (const char* v = std::getenv(var)) return std::atoi(v);
  }
  return 0;
}

// The job this process is one rank of: an MpiWorld or an NcclWorld.
struct Backends::Job {
  RuntimeKind kind = RuntimeKind::kMpi;
  int ranks_per_host = 0;
#if BAGUA_HAVE_MPI
  std::unique_ptr<runtime::mpi::MpiWorld> mpi;
#endif
#if BAGUA_HAVE_NCCL
  std::unique_ptr<runtime::nccl::NcclWorld> nccl;
#endif

  int rank() const {
#if BAGUA_HAVE_NCCL
    if (nccl) return nccl->rank();
#endif
#if BAGUA_HAVE_MPI
    if (mpi) return mpi->rank();
#endif
    return 0;
  }
  int size() const {
#if BAGUA_HAVE_NCCL
    if (nccl) return nccl->size();
#endif
#if BAGUA_HAVE_MPI
    if (mpi) return mpi->size();
#endif
    return 1;
  }
  void run(const std::function<void(RankContext&)>& body) {
#if BAGUA_HAVE_NCCL
    if (nccl) return nccl->run(body);
#endif
#if BAGUA_HAVE_MPI
    if (mpi) return mpi->run(body);
#endif
    throw InternalError("no job to run on");
  }
};

Backends::Backends(int* argc, char*** argv) : argc_(argc), argv_(argv) {}
Backends::~Backends() = default;

void Backends::start_job(const PointConfig& point) {
  BAGUA_CHECK(point.runtime == RuntimeKind::kMpi || point.runtime == RuntimeKind::kNccl,
              "not a job runtime");
  const int ranks_per_host = point.has_cluster ? point.cluster.devices_per_host : 0;
  if (job_) {
    if (job_->kind != point.runtime) {
      throw ConfigError("runtime: one run cannot use both mpi and nccl (MPI starts once per process)");
    }
    if (job_->ranks_per_host != ranks_per_host) {
      throw ConfigError("cluster.devices_per_host: every " + to_string(point.runtime) +
                        " point of a run needs the same host layout (" +
                        std::to_string(job_->ranks_per_host) + " and " +
                        std::to_string(ranks_per_host) + ")");
    }
    return;
  }
  auto job = std::make_unique<Job>();
  job->kind = point.runtime;
  job->ranks_per_host = ranks_per_host;
  if (point.runtime == RuntimeKind::kMpi) {
#if BAGUA_HAVE_MPI
    job->mpi = std::make_unique<runtime::mpi::MpiWorld>(argc_, argv_, ranks_per_host);
#else
    throw ConfigError("runtime: \"mpi\" is not available: this bagua was built without Open MPI");
#endif
  } else {
#if BAGUA_HAVE_NCCL
    job->nccl = std::make_unique<runtime::nccl::NcclWorld>(argc_, argv_, ranks_per_host);
#else
    throw ConfigError("runtime: \"nccl\" is not available: this bagua was built without CUDA and NCCL");
#endif
  }
  job_ = std::move(job);
}

int Backends::world_size(const PointConfig& point) {
  if (point.runtime == RuntimeKind::kSim || point.runtime == RuntimeKind::kThreads)
    return point.world_size();
  start_job(point);
  return job_->size();
}

bool Backends::is_writer() const {
  return !job_ || job_->rank() == 0;
}

std::vector<uint8_t> Backends::share_from_writer(std::vector<uint8_t> bytes) {
  if (!job_ || job_->size() == 1) return bytes;
  job_->run([&](RankContext& ctx) {
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
                   SimReport* sim) {
  switch (point.runtime) {
    case RuntimeKind::kSim: {
      netsim::SimOptions options;
      options.trace = point.output.trace;
      netsim::Simulation simulation(point.cluster, options);
      const Time end = simulation.run(body);
      if (sim) {
        sim->end = end;
        sim->ranks = simulation.rank_stats();
        sim->links = simulation.link_stats();
        if (point.output.trace) {
          std::ostringstream trace;
          simulation.write_trace(trace);
          sim->trace = trace.str();
        }
      }
      return;
    }
    case RuntimeKind::kThreads:
      runtime::threads::ThreadsWorld(point.world_size(), point.cluster.devices_per_host).run(body);
      return;
    case RuntimeKind::kMpi:
    case RuntimeKind::kNccl: {
      start_job(point);
      if (point.has_cluster && point.world_size() != job_->size()) {
        throw ConfigError("cluster: hosts x devices_per_host = " + std::to_string(point.world_size()) +
                          " ranks, but mpirun started " + std::to_string(job_->size()) + " processes");
      }
      job_->run(body);
      return;
    }
  }
  throw InternalError("unknown runtime");
}

}  // namespace bagua::experiments
