#include "experiments/runtimes.h"

#include <utility>

#include "core/check.h"
#include "netsim/sim_world.h"
#include "runtime/threads/world.h"

#if BAGUA_HAVE_MPI
#include "runtime/mpi/channel.h"
#include "runtime/mpi/transport.h"
#include "runtime/mpi/world.h"
#endif
#if BAGUA_HAVE_NCCL
#include "runtime/nccl/world.h"
#endif

namespace bagua::experiments {

void RuntimeRegistry::insert(Entry entry) {
  BAGUA_CHECK(!find(entry.name), "runtime '" + entry.name + "' registered twice");
  entries_.push_back(std::move(entry));
}

void RuntimeRegistry::add(std::string name, std::string description, RuntimeTraits traits,
                          Factory factory) {
  BAGUA_CHECK(static_cast<bool>(factory), "runtime '" + name + "' registered without a factory");
  insert(Entry{std::move(name), std::move(description), traits, std::move(factory), ""});
}

void RuntimeRegistry::add_missing(std::string name, std::string description, RuntimeTraits traits,
                                  std::string missing) {
  BAGUA_CHECK(!missing.empty(), "runtime '" + name + "' registered as missing without a reason");
  insert(Entry{std::move(name), std::move(description), traits, nullptr, std::move(missing)});
}

const RuntimeRegistry::Entry* RuntimeRegistry::find(const std::string& name) const {
  for (const Entry& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

const RuntimeRegistry::Entry& RuntimeRegistry::at(const std::string& name) const {
  if (const Entry* e = find(name)) return *e;
  std::string known;
  for (const Entry& e : entries_)
    known += (known.empty() ? "" : ", ") + e.name;
  throw ConfigError("unknown runtime '" + name + "' (known: " + known + ")");
}

std::vector<const RuntimeRegistry::Entry*> RuntimeRegistry::entries() const {
  std::vector<const Entry*> out;
  for (const Entry& e : entries_)
    out.push_back(&e);
  return out;
}

std::vector<std::string> RuntimeRegistry::names() const {
  std::vector<std::string> out;
  for (const Entry& e : entries_)
    out.push_back(e.name);
  return out;
}

std::unique_ptr<World> RuntimeRegistry::make(const std::string& name,
                                             const WorldRequest& request) const {
  const Entry& e = at(name);
  if (!e.available()) throw ConfigError("runtime: \"" + name + "\" is not available: " + e.missing);
  return e.factory(request);
}

namespace {

constexpr RuntimeTraits kInProcess{.job = false, .virtual_time = false};
constexpr RuntimeTraits kSimulated{.job = false, .virtual_time = true};
constexpr RuntimeTraits kJob{.job = true, .virtual_time = false};

// An in-process runtime needs the point's cluster (config validation requires it for them).
const netsim::ClusterSpec& cluster_of(const WorldRequest& q) {
  BAGUA_CHECK(q.cluster != nullptr, "an in-process runtime needs a cluster");
  return *q.cluster;
}

// A job runtime's processes are all workers: mpirun's ranks would have to be split into workers and
// service ranks (core/services.h), which these worlds do not do.
[[maybe_unused]] void refuse_cpu_hosts(const WorldRequest& q, const std::string& runtime) {
  if (q.cluster && q.cluster->cpu_hosts.count > 0)
    throw ConfigError("cluster.cpu_hosts: runtime \"" + runtime +
                      "\" runs no service ranks (the sim and threads runtimes do)");
}

}  // namespace

void register_runtimes(RuntimeRegistry& r) {
  r.add("sim", "the discrete-event network simulator (virtual time, deterministic)", kSimulated,
        [](const WorldRequest& q) {
          return std::make_unique<netsim::SimWorld>(cluster_of(q),
                                                    netsim::SimOptions{.trace = q.trace, .trace_filter = q.trace_filter});
        });
  r.add("threads", "one thread per rank in this process (real time)", kInProcess,
        [](const WorldRequest& q) {
          const netsim::ClusterSpec& c = cluster_of(q);
          return std::make_unique<runtime::threads::ThreadsWorld>(c.world_size(), c.devices_per_host,
                                                                  q.watchdog, c.cpu_hosts.count);
        });
#if BAGUA_HAVE_MPI
  r.add("mpi", "one Open MPI process per rank, started by mpirun (real time)", kJob,
        [](const WorldRequest& q) {
          refuse_cpu_hosts(q, "mpi");
          return std::make_unique<runtime::mpi::MpiWorld>(q.argc, q.argv, q.ranks_per_host, q.watchdog);
        });
#else
  r.add_missing("mpi", "one Open MPI process per rank, started by mpirun (real time)", kJob,
                "this bagua was built without Open MPI");
#endif
#if BAGUA_HAVE_NCCL
  r.add("nccl", "one process per GPU, started by mpirun, NCCL transport (real time)", kJob,
        [](const WorldRequest& q) {
          refuse_cpu_hosts(q, "nccl");
          return std::make_unique<runtime::nccl::NcclWorld>(q.argc, q.argv, q.ranks_per_host,
                                                            q.watchdog);
        });
#else
  r.add_missing("nccl", "one process per GPU, started by mpirun, NCCL transport (real time)", kJob,
                "this bagua was built without CUDA and NCCL");
#endif
}

#if BAGUA_HAVE_MPI
namespace {

// The MPI world (MPI initialized with MPI_THREAD_MULTIPLE, finalized last) and a channel beside it.
class MpiJobChannel final : public JobChannel {
 public:
  MpiJobChannel(int* argc, char*** argv) : world_(argc, argv), channel_(world_.transport().comm()) {}
  int rank() const override { return channel_.rank(); }
  int size() const override { return channel_.size(); }
  int local_size() const override { return channel_.local_size(); }
  void send(std::span<const uint8_t> bytes, int dst, int tag) override {
    channel_.send(bytes, dst, tag);
  }
  std::vector<uint8_t> receive(int src, int tag) override { return channel_.receive(src, tag); }

 private:
  runtime::mpi::MpiWorld world_;
  runtime::mpi::MpiChannel channel_;
};

}  // namespace

std::unique_ptr<JobChannel> make_job_channel(int* argc, char*** argv) {
  return std::make_unique<MpiJobChannel>(argc, argv);
}
#else
std::unique_ptr<JobChannel> make_job_channel(int*, char***) {
  throw ConfigError(
      "runtime: this process runs under mpirun, but this bagua was built without Open MPI: it "
      "cannot share the sweep's points with the job's other processes (run it alone)");
}
#endif

}  // namespace bagua::experiments
