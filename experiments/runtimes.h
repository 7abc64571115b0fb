// The runtimes a config can name in "runtime": each registered by name with a one-line description,
// what the composition root must know of it before it makes a world (RuntimeTraits), and a factory
// that makes its World (core/world.h) from what a point gives (WorldRequest). register_runtimes()
// (experiments/runtimes.cc) is the only place that names a runtime, and the only place where optional
// runtimes are left out of a build: a runtime not built is registered as missing, with the reason, so
// that a config naming it is still valid and fails only when a world of it is made.
//
// Terms (those of core/world.h): a job runtime's world is one rank per process, started once per
// process (the first point that needs it) and kept for the whole run; an in-process runtime's world
// is made anew for every run of a point. A virtual-time runtime reports (RunReport) after each run.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/units.h"
#include "core/world.h"
#include "netsim/simulation.h"
#include "runtime/common/watchdog.h"

namespace bagua::experiments {

// The runtime of a config that names none.
inline constexpr const char* kDefaultRuntime = "sim";

// What config validation and the runner decide from a runtime's name alone.
struct RuntimeTraits {
  // A job runtime (core/world.h): the cluster is optional (the job's size is the launcher's), one
  // run of `bagua` uses one job, only the job's rank 0 writes results.
  bool job = false;
  // The runtime models virtual time: the cluster's network and device model matter, its world gives a
  // report (links.csv, ranks.csv, output.trace), and its points are independent and deterministic,
  // so they may run in parallel.
  bool virtual_time = false;
};

// What a point gives a runtime's factory.
struct WorldRequest {
  const netsim::ClusterSpec* cluster = nullptr;  // null when the config gives none (job runtimes only)
  int ranks = 0;           // the cluster's hosts x devices_per_host; 0 without a cluster
  int ranks_per_host = 0;  // the cluster's devices_per_host; 0 without a cluster
  bool trace = false;      // output.trace: record a timeline (virtual-time runtimes record it)
  TraceFilter trace_filter;
  Time watchdog = runtime::Watchdog::kDefaultLimit;  // runtime_options.watchdog (real runtimes)
  int* argc = nullptr;     // the process's arguments, for a launcher's library (MPI_Init)
  char*** argv = nullptr;
};

class RuntimeRegistry {
 public:
  using Factory = std::function<std::unique_ptr<World>(const WorldRequest&)>;
  struct Entry {
    std::string name;
    std::string description;
    RuntimeTraits traits;
    Factory factory;      // empty when the runtime was not built
    std::string missing;  // why it was not built, e.g. "this bagua was built without Open MPI"

    bool available() const { return static_cast<bool>(factory); }
  };

  // A runtime this bagua was built with.
  void add(std::string name, std::string description, RuntimeTraits traits, Factory factory);
  // A runtime this bagua was built without: named in `bagua list` and accepted by configs, refused
  // when a world of it is made.
  void add_missing(std::string name, std::string description, RuntimeTraits traits,
                   std::string missing);

  const Entry* find(const std::string& name) const;
  // Throws ConfigError listing the known names when `name` is unknown.
  const Entry& at(const std::string& name) const;
  // In registration order.
  std::vector<const Entry*> entries() const;
  std::vector<std::string> names() const;

  // Makes a world of runtime `name`. ConfigError when it is unknown or was not built:
  //   runtime: "mpi" is not available: this bagua was built without Open MPI
  std::unique_ptr<World> make(const std::string& name, const WorldRequest& request) const;

 private:
  void insert(Entry entry);
  std::vector<Entry> entries_;
};

// Every runtime of the project, in the order `bagua list` prints them.
void register_runtimes(RuntimeRegistry& registry);

// Byte messages between the processes of the job a launcher (mpirun) started, for the work around
// training runs rather than in them: a sweep's simulated points handed out to the job's processes
// (experiments/distribute.h). A wait may last as long as a point runs, and costs no core meanwhile.
// Messages between the same pair with the same tag arrive in order; one thread at a time uses a given
// peer and tag in each direction.
class JobChannel {
 public:
  virtual ~JobChannel() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The job's processes on this process's node (this one included).
  virtual int local_size() const = 0;
  virtual void send(std::span<const uint8_t> bytes, int dst, int tag) = 0;
  virtual std::vector<uint8_t> receive(int src, int tag) = 0;
};

// Joins the job mpirun started this process in (MPI_Init, collective over the job) and returns its
// channel; MPI is finalized when the channel goes away. ConfigError when this bagua was built without
// Open MPI.
std::unique_ptr<JobChannel> make_job_channel(int* argc, char*** argv);

}  // namespace bagua::experiments
