// The runtime registry (experiments/runtimes.h), the worlds it makes (core/world.h), and the job
// semantics of Backends (experiments/backend.h) on a stand-in job runtime, so that they are tested
// without mpirun.
#include "experiments/runtimes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/check.h"
#include "experiments/backend.h"
#include "experiments/cli.h"
#include "experiments/config.h"
#include "tests/experiments/fake_components.h"

namespace bagua::experiments {
namespace {

// 2 hosts x 2 devices, the links of the paper's cluster (configs/clusters/paper.json).
netsim::ClusterSpec small_cluster() {
  netsim::ClusterSpec c;
  c.hosts = 2;
  c.devices_per_host = 2;
  c.intra_host = {Bandwidth::gigabytes_per_second(150), Time::us(1)};
  c.nic = {Bandwidth::gbps(100), Time::us(5)};
  return c;
}

RuntimeRegistry project_runtimes() {
  RuntimeRegistry r;
  register_runtimes(r);
  return r;
}

TEST(Runtimes, EveryRegisteredRuntimeHasANameAndADescription) {
  const RuntimeRegistry r = project_runtimes();
  std::set<std::string> names;
  for (const RuntimeRegistry::Entry* e : r.entries()) {
    EXPECT_FALSE(e->name.empty());
    EXPECT_FALSE(e->description.empty()) << e->name;
    EXPECT_TRUE(names.insert(e->name).second) << e->name << " twice";
    // A runtime is built (a factory) or says why not.
    EXPECT_NE(e->available(), !e->missing.empty()) << e->name;
    EXPECT_EQ(r.find(e->name), e);
  }
  // The names a config has always accepted, in the order `bagua list` has always printed them.
  EXPECT_EQ(r.names(), (std::vector<std::string>{"sim", "threads", "mpi", "nccl"}));
  ASSERT_NE(r.find(kDefaultRuntime), nullptr);
  EXPECT_TRUE(r.at(kDefaultRuntime).available());
  EXPECT_TRUE(r.at("sim").available());
  EXPECT_TRUE(r.at("sim").traits.virtual_time);
  EXPECT_TRUE(r.at("threads").available());
  EXPECT_FALSE(r.at("threads").traits.job);
  EXPECT_TRUE(r.at("mpi").traits.job);
  EXPECT_TRUE(r.at("nccl").traits.job);
}

// Every available in-process runtime runs a body on every rank, each rank seeing its own rank and the
// world's size; the world's answers agree with the registry's traits.
TEST(Runtimes, EveryInProcessRuntimeRunsEveryRank) {
  const RuntimeRegistry r = project_runtimes();
  const netsim::ClusterSpec cluster = small_cluster();
  WorldRequest q;
  q.cluster = &cluster;
  q.ranks = cluster.world_size();
  q.ranks_per_host = cluster.devices_per_host;
  int tested = 0;
  for (const RuntimeRegistry::Entry* e : r.entries()) {
    if (e->traits.job || !e->available()) continue;
    SCOPED_TRACE(e->name);
    ++tested;
    const std::unique_ptr<World> world = r.make(e->name, q);
    EXPECT_FALSE(world->is_job());
    EXPECT_EQ(world->rank(), 0);
    EXPECT_EQ(world->size(), 4);
    std::mutex mu;
    std::vector<int> seen;
    world->run([&](RankContext& ctx) {
      const int rank = ctx.transport().rank();
      const int size = ctx.transport().size();
      std::lock_guard<std::mutex> lock(mu);
      seen.push_back(size == 4 ? rank : -1);
    });
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(world->report() != nullptr, e->traits.virtual_time);
  }
  EXPECT_EQ(tested, 2);  // sim and threads
}

// The simulator's report reaches the caller through World: rank r computes (r + 1) ms of profiled
// work, so rank r's compute total is (r + 1) ms and the run ends at 4 ms (rank 3). A second run is a
// fresh simulation: 1 ms on every rank ends at 1 ms, not 5 ms.
TEST(Runtimes, SimulatorReportsEachRun) {
  const RuntimeRegistry r = project_runtimes();
  const netsim::ClusterSpec cluster = small_cluster();
  WorldRequest q;
  q.cluster = &cluster;
  const std::unique_ptr<World> world = r.make("sim", q);
  EXPECT_EQ(world->report(), nullptr);  // before the first run
  world->run([](RankContext& ctx) {
    ctx.clock().compute(Work{.duration = Time::ms(ctx.transport().rank() + 1)});
  });
  const RunReport* report = world->report();
  ASSERT_NE(report, nullptr);
  EXPECT_EQ(report->end, Time::ms(4));
  ASSERT_EQ(report->ranks.size(), 4u);
  for (int rank = 0; rank < 4; ++rank)
    EXPECT_EQ(report->ranks[static_cast<size_t>(rank)].compute, Time::ms(rank + 1));
  EXPECT_FALSE(report->links.empty());
  EXPECT_TRUE(report->trace.empty());  // not asked for

  world->run([](RankContext& ctx) { ctx.clock().compute(Work{.duration = Time::ms(1)}); });
  ASSERT_NE(world->report(), nullptr);
  EXPECT_EQ(world->report()->end, Time::ms(1));

  q.trace = true;
  const std::unique_ptr<World> traced = r.make("sim", q);
  traced->run([](RankContext& ctx) { ctx.clock().compute(Work{.duration = Time::ms(1)}); });
  ASSERT_NE(traced->report(), nullptr);
  EXPECT_NE(traced->report()->trace.find("traceEvents"), std::string::npos);
}

TEST(Runtimes, MissingAndUnknownRuntimesAreConfigErrors) {
  RuntimeRegistry r;
  r.add_missing("gloo", "a stand-in", RuntimeTraits{.job = true}, "this bagua was built without Gloo");
  try {
    r.make("gloo", {});
    FAIL() << "made a world of a runtime not built";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "runtime: \"gloo\" is not available: this bagua was built without Gloo");
  }
  try {
    r.at("ucx");
    FAIL() << "found an unknown runtime";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "unknown runtime 'ucx' (known: gloo)");
  }
}

// `bagua list` prints the registry's runtimes in registration order, descriptions aligned, and marks
// those not built.
TEST(Runtimes, ListPrintsTheRegistry) {
  Components c;
  c.runtimes.add("sim", "simulated", RuntimeTraits{.virtual_time = true},
                 [](const WorldRequest&) -> std::unique_ptr<World> { return nullptr; });
  c.runtimes.add_missing("longname", "a runtime not built", RuntimeTraits{.job = true}, "no library");
  std::ostringstream out;
  print_components(c, out);
  const std::string text = out.str();
  const std::string expected =
      "runtimes:\n"
      "  sim       simulated\n"
      "  longname  a runtime not built [not built]\n";
  const size_t at = text.find("runtimes:\n");
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_EQ(text.substr(at, expected.size()), expected);
  const size_t end = at + expected.size();
  EXPECT_TRUE(end == text.size() || text[end] != ' ') << "a third runtime line: " << text.substr(at);
}

// ---- config validation asks the registry ---------------------------------------------------------

// The ConfigError of loading the stand-in config (without its cluster when `cluster` is false) with
// `sets` ("" if none).
std::string load_error(const Components& c, const std::vector<std::string>& sets, bool cluster = true) {
  LoadOptions options;
  options.sets = sets;
  Json config = parse_json(testing::fake_config_text(), "test.json");
  if (!cluster) config.erase("cluster");
  try {
    load_experiment_json(config, ".", options, c);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// A stand-in in-process runtime with a given size.
class FakeWorld final : public World {
 public:
  FakeWorld(int rank, int size, bool job, int* made) : rank_(rank), size_(size), job_(job) {
    if (made) ++*made;
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool is_job() const override { return job_; }
  void run(const std::function<void(RankContext&)>&) override { ++runs; }
  int runs = 0;

 private:
  int rank_, size_;
  bool job_;
};

TEST(Runtimes, ConfigAcceptsExactlyTheRegisteredRuntimes) {
  auto c = testing::fake_components();
  EXPECT_EQ(load_error(*c, {"runtime=gloo"}),
            "runtime: must be one of sim|threads|mpi|nccl, got \"gloo\"");
  // Registered, the same name is valid; a job runtime needs no cluster, an in-process one does.
  c->runtimes.add("gloo", "a stand-in job runtime", RuntimeTraits{.job = true},
                  [](const WorldRequest&) { return std::make_unique<FakeWorld>(0, 1, true, nullptr); });
  c->runtimes.add("inproc", "a stand-in in-process runtime", RuntimeTraits{}, [](const WorldRequest&) {
    return std::make_unique<FakeWorld>(0, 1, false, nullptr);
  });
  EXPECT_EQ(load_error(*c, {"runtime=gloo"}), "");
  EXPECT_EQ(load_error(*c, {"runtime=gloo"}, false), "");
  EXPECT_EQ(load_error(*c, {"runtime=inproc"}, false), "cluster: missing (required)");
  // Every runtime records a timeline (a real-time one through the runner's TracingContext).
  EXPECT_EQ(load_error(*c, {"runtime=gloo", "output.trace=true"}), "");
  EXPECT_EQ(load_error(*c, {"runtime=nope"}),
            "runtime: must be one of sim|threads|mpi|nccl|gloo|inproc, got \"nope\"");
}

// ---- Backends on a stand-in job runtime ------------------------------------------------------------

struct FakeJobs {
  RuntimeRegistry registry;
  int made = 0;
  int job_rank = 0;
  int job_size = 4;
  FakeJobs() {
    for (const char* name : {"jobA", "jobB"}) {
      registry.add(name, "a stand-in job runtime", RuntimeTraits{.job = true},
                   [this](const WorldRequest&) {
                     return std::make_unique<FakeWorld>(job_rank, job_size, true, &made);
                   });
    }
  }
};

PointConfig job_point(const std::string& runtime, int hosts, int devices_per_host) {
  PointConfig p;
  p.runtime = runtime;
  p.has_cluster = true;
  p.cluster.hosts = hosts;
  p.cluster.devices_per_host = devices_per_host;
  return p;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Runtimes, AJobStartsOnceAndRefusesAnotherRuntimeOrHostLayout) {
  FakeJobs jobs;
  Backends backends(jobs.registry, nullptr, nullptr);
  EXPECT_TRUE(backends.is_writer());  // no job yet
  EXPECT_EQ(backends.world_size(job_point("jobA", 2, 2)), 4);
  EXPECT_EQ(backends.world_size(job_point("jobA", 2, 2)), 4);
  EXPECT_EQ(jobs.made, 1);
  const std::function<void(RankContext&)> nothing = [](RankContext&) {};
  std::optional<RunReport> report = RunReport{};
  backends.run(job_point("jobA", 2, 2), nothing, &report);
  EXPECT_FALSE(report.has_value());  // a real-time runtime reports nothing
  EXPECT_EQ(jobs.made, 1);
  EXPECT_EQ(error_of([&] { backends.world_size(job_point("jobB", 2, 2)); }),
            "runtime: one run cannot use both jobA and jobB (a job starts once per process: MPI "
            "cannot start twice)");
  EXPECT_EQ(error_of([&] { backends.world_size(job_point("jobA", 4, 1)); }),
            "cluster.devices_per_host: every jobA point of a run needs the same host layout (2 and 1)");
  EXPECT_EQ(error_of([&] { backends.run(job_point("jobA", 1, 2), nothing, nullptr); }),
            "cluster: hosts x devices_per_host = 2 ranks, but mpirun started 4 processes");
  EXPECT_EQ(jobs.made, 1);
  EXPECT_TRUE(backends.is_writer());  // the job's rank 0
}

TEST(Runtimes, OnlyTheJobsRankZeroWrites) {
  FakeJobs jobs;
  jobs.job_rank = 1;
  Backends backends(jobs.registry, nullptr, nullptr);
  backends.start_job(job_point("jobA", 2, 2));
  EXPECT_FALSE(backends.is_writer());
}

}  // namespace
}  // namespace bagua::experiments
