#include "experiments/cli.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "core/check.h"
#include "experiments/backend.h"
#include "experiments/calibrate.h"
#include "experiments/components.h"
#include "experiments/config.h"
#include "experiments/distribute.h"
#include "experiments/quantity.h"
#include "experiments/recommend.h"
#include "experiments/runner.h"
#include "experiments/shards.h"

namespace bagua::experiments {

namespace {

constexpr int kExitPointFailed = 1;
constexpr int kExitConfigError = 2;

template <class R>
void print_registry(const R& registry, const std::string& title, std::ostream& out) {
  out << title << ":\n";
  for (const auto* e : registry.entries()) {
    out << "  " << e->name << "  " << e->description << "\n";
    for (const ParamSpec& s : e->schema.specs()) {
      out << "      " << s.name << " ("
          << (s.unit == ParamUnit::kNone ? to_string(s.type) : to_string(s.unit));
      if (s.presence == ParamPresence::kDefaulted)
        out << ", default " << bagua::to_string(s.default_value);
      else
        out << ", " << to_string(s.presence);
      if (s.min && s.unit == ParamUnit::kNone)
        out << ", " << (s.min_exclusive ? "> " : ">= ") << *s.min;
      if (s.max) out << ", <= " << *s.max;
      if (!s.choices.empty()) {
        out << ", one of ";
        for (size_t i = 0; i < s.choices.size(); ++i)
          out << (i ? "|" : "") << s.choices[i];
      }
      out << ")  " << s.description << "\n";
    }
  }
}

// "  name  description", the descriptions aligned; " [not built]" after a runtime this bagua lacks.
void print_runtimes(const RuntimeRegistry& runtimes, std::ostream& out) {
  size_t width = 0;
  for (const RuntimeRegistry::Entry* e : runtimes.entries())
    width = std::max(width, e->name.size());
  out << "runtimes:\n";
  for (const RuntimeRegistry::Entry* e : runtimes.entries()) {
    out << "  " << e->name << std::string(width - e->name.size() + 2, ' ') << e->description
        << (e->available() ? "" : " [not built]") << "\n";
  }
}

struct RunArgs {
  std::string config;
  std::vector<std::string> sets;
  std::vector<std::string> points;  // --point
  std::vector<std::string> wheres;  // --where
  bool fresh = false;
  double progress_interval_s = 5;
  std::string out;
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool quiet = false;
  std::string shard;  // "K/N" (experiments/shards.h)
};

void add_config_args(CLI::App* cmd, RunArgs& args) {
  cmd->add_option("config", args.config, "experiment config (JSON)")->required();
  cmd->add_option(
         "--set", args.sets,
         "override before validation: dotted.path=value (JSON, else a string); repeatable. A swept "
         "path set this way is fixed (its axis removed); sweep.<axis path>=[values] replaces (or adds) "
         "an axis's values, sweep.mode=grid|zip the mode, e.g. --set "
         "'sweep.cluster.nic.bandwidth=[\"1 Gbps\", \"10 Gbps\"]'")
      ->allow_extra_args(false);
}

// Which points --point and --where select (all given must hold). --point takes a point id
// ("p003-1a2b3c4d"), its index part ("p003") or its index ("3"); --where an axis path and a value as
// the sweep writes it (JSON, else a string: cluster.nic.bandwidth="10 Gbps" or ...=10 Gbps).
std::function<bool(const PointConfig&)> point_selection(const Experiment& e,
                                                        const std::vector<std::string>& points,
                                                        const std::vector<std::string>& wheres) {
  if (points.empty() && wheres.empty()) return {};
  struct Where {
    std::string path;
    Json value;
  };
  std::vector<Where> conditions;
  for (const std::string& w : wheres) {
    const size_t eq = w.find('=');
    if (eq == std::string::npos || eq == 0)
      throw ConfigError("--where \"" + w + "\": expected axis.path=value");
    Where c{w.substr(0, eq), parse_override_value(std::string_view(w).substr(eq + 1), "--where " + w.substr(0, eq))};
    if (std::find(e.axes.begin(), e.axes.end(), c.path) == e.axes.end()) {
      std::string axes;
      for (const std::string& a : e.axes)
        axes += (axes.empty() ? "" : ", ") + a;
      throw ConfigError("--where " + c.path +
                        ": not an axis of the sweep (axes: " + (axes.empty() ? "none" : axes) + ")");
    }
    conditions.push_back(std::move(c));
  }
  auto point_matches = [&points](const PointConfig& p) {
    if (points.empty()) return true;
    for (const std::string& id : points) {
      if (id == p.id || id == p.id.substr(0, p.id.find('-')) || id == std::to_string(p.index))
        return true;
    }
    return false;
  };
  auto where_matches = [conditions](const PointConfig& p) {
    for (const Where& c : conditions) {
      bool hit = false;
      for (const auto& [path, value] : p.swept)
        hit = hit || (path == c.path && (value == c.value || json_text(value) == json_text(c.value)));
      if (!hit) return false;
    }
    return true;
  };
  std::function<bool(const PointConfig&)> select = [point_matches,
                                                    where_matches](const PointConfig& p) {
    return point_matches(p) && where_matches(p);
  };
  // Each --point must name a point, and the selection must not be empty.
  for (const std::string& id : points) {
    const bool found = std::any_of(e.points.begin(), e.points.end(), [&](const PointConfig& p) {
      return id == p.id || id == p.id.substr(0, p.id.find('-')) || id == std::to_string(p.index);
    });
    if (!found)
      throw ConfigError("--point " + id + ": no such point (" + std::to_string(e.points.size()) +
                        " points, p" + std::string(e.points.front().id.find('-') - 1, '0') + " to " +
                        e.points.back().id + "; `bagua validate` lists them)");
  }
  if (std::none_of(e.points.begin(), e.points.end(), select)) {
    std::string given;
    for (const std::string& w : wheres)
      given += (given.empty() ? "" : " ") + w;
    throw ConfigError("--where " + given + ": no point of the sweep matches" +
                      (points.empty() ? "" : " the --point given"));
  }
  return select;
}

}  // namespace

void print_components(const Components& c, std::ostream& out) {
  print_registry(c.algorithms, "algorithms", out);
  print_registry(c.compressors, "compressors", out);
  print_registry(c.workloads, "workloads", out);
  print_registry(c.optimizers, "optimizers", out);
  print_registry(c.topologies, "topologies", out);
  print_runtimes(c.runtimes, out);
}

int run_cli(int argc, char** argv) {
  CLI::App app{
      "bagua: system relaxations for data-parallel training, on real runtimes and a network simulator"};
  app.require_subcommand(1);
  RunArgs run_args;
  CLI::App* run =
      app.add_subcommand("run", "run an experiment (every point of its sweep) and write its results");
  run->footer(
      "A point that fails or diverges (a NaN or infinite loss) is recorded with its status and error "
      "in "
      "results.csv and its summary.json, and the other points run; a rerun runs only the points "
      "without "
      "an ok result. The results folder belongs to one experiment (its experiment.json holds the "
      "config "
      "hash; another config is refused, --fresh moves the old folder aside) and one run at a time (a "
      "lock). Exit status: 0 every point ok, 1 some point failed or diverged (the summary says how "
      "many), 2 a config error.");
  add_config_args(run, run_args);
  run->add_option("--out", run_args.out, "results directory (default: the config's output.dir)");
  run->add_option("--jobs,-j", run_args.jobs,
                  "simulated points run in parallel (default: the number of cores)")
      ->check(CLI::PositiveNumber);
  run->add_flag("--quiet,-q", run_args.quiet, "no progress lines on stderr");
  run->add_option("--point", run_args.points,
                  "run only this point of the sweep: its id (p003-1a2b3c4d), index part (p003) or "
                  "index (3); repeatable")
      ->allow_extra_args(false);
  run->add_option("--where", run_args.wheres,
                  "run only the points whose swept value at an axis path is this: "
                  "axis.path=value (JSON, else a string); repeatable, all must hold")
      ->allow_extra_args(false);
  run->add_option("--progress-interval", run_args.progress_interval_s,
                  "seconds of wall time between progress lines while a point runs (iteration k of N, "
                  "simulated time so far; default 5; 0: none)")
      ->check(CLI::NonNegativeNumber);
  run->add_flag("--fresh", run_args.fresh,
                "when the results folder holds another experiment's results, move it aside to "
                "DIR.old-<UTC time> and start afresh (without: refused)");
  run->add_option("--shard", run_args.shard,
                  "run shard K of N (1 <= K <= N: every N-th point) into DIR/shards/K-of-N; default "
                  "from SLURM_ARRAY_TASK_ID in a Slurm array job; bagua merge DIR joins the parts");
  std::string merge_dir;
  CLI::App* merge = app.add_subcommand(
      "merge", "join the parts that `bagua run --shard K/N` wrote into DIR's results");
  merge->add_option("dir", merge_dir, "the results folder holding shards/")->required();
  RunArgs validate_args;
  CLI::App* validate =
      app.add_subcommand("validate", "check a config (and that its components accept its worlds)");
  add_config_args(validate, validate_args);
  RunArgs calibrate_args;
  CLI::App* calibrate = app.add_subcommand(
      "calibrate",
      "measure a real runtime's network (under mpirun: the job's) and write a cluster file for the "
      "simulator");
  calibrate->add_option("config", calibrate_args.config,
                        "experiment whose runtime and cluster say what to measure (default: the MPI "
                        "job mpirun started)");
  calibrate->add_option("--set", calibrate_args.sets, "override in the config: dotted.path=value")
      ->allow_extra_args(false);
  calibrate->add_option("--out", calibrate_args.out, "the cluster file to write")->required();
  std::string calibrate_max_size = "4 MiB";
  std::string calibrate_stream_size = "1 MiB";
  CalibrationOptions calibrate_options;
  calibrate->add_option("--max-size", calibrate_max_size, "largest ping-pong message (default 4 MiB)");
  calibrate->add_option("--stream-size", calibrate_stream_size,
                        "size of each streamed message (default 1 MiB; 16 are streamed)");
  calibrate->add_option("--repeats", calibrate_options.repeats,
                        "most samples per ping-pong size (default 30)");
  RunArgs recommend_args;
  RecommendOptions recommend_options;
  CLI::App* recommend_cmd = app.add_subcommand(
      "recommend",
      "simulate every algorithm (or those listed) on the config's workload and cluster and print them "
      "ranked by time per iteration, with the speed-up over ddp, why, and the convergence caveats");
  add_config_args(recommend_cmd, recommend_args);
  recommend_cmd->add_option("--algorithms", recommend_options.algorithms,
                            "candidates, comma-separated: name or name(key=value,...) (default: every "
                            "registered algorithm)");
  recommend_cmd->add_option("--iterations", recommend_options.iterations,
                            "iterations simulated per candidate (default: the config's schedule)")
      ->check(CLI::PositiveNumber);
  recommend_cmd->add_option("--jobs,-j", recommend_options.jobs,
                            "simulations run in parallel (default: the number of cores)")
      ->check(CLI::PositiveNumber);
  recommend_cmd->add_flag("--json", recommend_options.json,
                          "print a JSON list, fastest first, instead of the table");
  recommend_options.jobs = run_args.jobs;
  app.add_subcommand(
      "list", "list algorithms, compressors, workloads, optimizers (with parameters) and topologies");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  // Under mpirun every process loads the config and meets the same config errors; only the first
  // prints them. Its line must be out before any other rank exits with an error: Open MPI's mpirun
  // ends the whole job as soon as one process exits with a non-zero status, and a rank 0 still on its
  // way to printing was killed with it (a world-size mismatch under mpirun -np 8 lost its line in 6 of
  // 10 runs).
  // So the job (if one runs) outlives the printing: every rank ends it after the catch below, and
  // MPI_Finalize waits for every rank (Open MPI's ends with a fence of all processes), rank 0's line
  // being out by then.
  const bool may_print = launched_rank() == 0;
  std::unique_ptr<Components> components;
  std::unique_ptr<Backends> job;
  try {
    components = make_components();
    if (app.got_subcommand("list")) {
      print_components(*components, std::cout);
      return 0;
    }
    job = std::make_unique<Backends>(components->runtimes, &argc, &argv);
    Backends& backends = *job;
    if (app.got_subcommand("calibrate")) {
      calibrate_options.max_size = parse_bytes(calibrate_max_size);
      calibrate_options.stream_size = parse_bytes(calibrate_stream_size);
      PointConfig point;
      point.name = "calibrate";
      point.runtime = "mpi";
      if (!calibrate_args.config.empty()) {
        LoadOptions calibrate_load;
        calibrate_load.sets = calibrate_args.sets;
        point = load_experiment(calibrate_args.config, calibrate_load, *components).points.front();
      }
      calibrate_world(point, backends, calibrate_options, calibrate_args.out, std::cout);
      return 0;
    }
    if (app.got_subcommand("recommend")) {
      recommend_options.sets = recommend_args.sets;
      const auto ranked =
          recommend(recommend_args.config, recommend_options, *components, backends);
      print_recommendations(ranked, recommend_options, std::cout);
      return 0;
    }
    if (app.got_subcommand("validate")) {
      LoadOptions options;
      options.sets = validate_args.sets;
      const Experiment e = load_experiment(validate_args.config, options, *components);
      check_points(e, *components, backends);
      if (backends.is_writer()) {
        std::cout << validate_args.config << ": valid, " << e.points.size() << " point"
                  << (e.points.size() == 1 ? "" : "s") << ", results to " << e.output_dir << "\n";
        for (const PointConfig& p : e.points) {
          std::cout << "  " << p.id;
          for (const auto& [path, value] : p.swept)
            std::cout << " " << path << "=" << json_text(value);
          std::cout << "\n";
        }
      }
      return 0;
    }
    if (app.got_subcommand("merge")) {
      merge_parts(merge_dir, std::cout);
      return 0;
    }
    LoadOptions options;
    options.sets = run_args.sets;
    if (!run_args.out.empty()) options.out_dir = run_args.out;
    const Experiment whole = load_experiment(run_args.config, options, *components);
    const std::optional<Shard> shard =
        run_args.shard.empty() ? shard_from_slurm() : std::optional(parse_shard(run_args.shard));
    const Experiment e = shard ? shard_of(whole, *shard) : whole;
    RunOptions run_options;
    run_options.jobs = run_args.jobs;
    run_options.quiet = run_args.quiet;
    run_options.fresh = run_args.fresh;
    run_options.progress_interval_s = run_args.progress_interval_s;
    run_options.select = point_selection(e, run_args.points, run_args.wheres);
    if (shard && !shard->whole() && !run_args.quiet && may_print) {
      write_line(std::cerr, "shard " + std::to_string(shard->index) + "/" +
                                std::to_string(shard->count) +
                                (run_args.shard.empty() ? " (Slurm array)" : "") + ": " +
                                std::to_string(e.points.size()) + " of " +
                                std::to_string(whole.points.size()) + " points, into " + e.output_dir);
    }
    int failed = 0;
    std::unique_ptr<JobChannel> channel;
    if (!e.points.empty() && spread_over_job(e, components->runtimes)) {
      channel = make_job_channel(&argc, &argv);
      if (channel->size() == 1) channel.reset();
    }
    if (channel) {
      // Under mpirun: rank 0 writes, every process runs points (experiments/distribute.h).
      if (run->count("--jobs") == 0) run_options.jobs = default_jobs_in_job(*channel);
      const SpreadOutcome outcome =
          run_spread(e, *components, backends, run_options, *channel, std::cout, std::cerr);
      if (outcome.config_error) throw ConfigError(*outcome.config_error);
      failed = outcome.failed;
    } else if (!e.points.empty()) {
      failed = run_experiment(e, *components, backends, run_options, std::cout, std::cerr);
    }
    const bool writer = channel ? channel->rank() == 0 : backends.is_writer() && may_print;
    if (shard && !shard->whole() && writer) write_part(whole, *shard);
    return failed == 0 ? 0 : kExitPointFailed;
  } catch (const ConfigError& e) {
    if (may_print) write_line(std::cerr, std::string("config error: ") + e.what());
    // A rank of mpirun other than 0 whose error came before any job started (a config's own checks,
    // when it is loaded) has no MPI_Finalize to wait in for rank 0's line: its non-zero exit would end
    // the job at once, rank 0 possibly before it printed (under ASan, 1 run in 20 at -np 8). It exits
    // quietly with 0 and leaves the job's status to rank 0, which meets the same error: mpirun exits
    // with rank 0's status, 2.
    const bool quiet_rank = !may_print && (!job || job->is_writer());
    job.reset();  // ends the job, if one runs: MPI_Finalize, after rank 0 printed
    return quiet_rank ? 0 : kExitConfigError;
  }
}

}  // namespace bagua::experiments
