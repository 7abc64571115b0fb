#include "experiments/cli.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <string>
#include <thread>

#include "core/check.h"
#include "experiments/backend.h"
#include "experiments/calibrate.h"
#include "experiments/components.h"
#include "experiments/config.h"
#include "experiments/quantity.h"
#include "experiments/runner.h"

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
  std::string out;
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool quiet = false;
};

void add_config_args(CLI::App* cmd, RunArgs& args) {
  cmd->add_option("config", args.config, "experiment config (JSON)")->required();
  cmd->add_option("--set", args.sets,
                  "override before validation: dotted.path=value (JSON, else a string); repeatable")
      ->allow_extra_args(false);
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
  add_config_args(run, run_args);
  run->add_option("--out", run_args.out, "results directory (default: the config's output.dir)");
  run->add_option("--jobs,-j", run_args.jobs,
                  "simulated points run in parallel (default: the number of cores)")
      ->check(CLI::PositiveNumber);
  run->add_flag("--quiet,-q", run_args.quiet, "no progress lines on stderr");
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
    LoadOptions options;
    options.sets = run_args.sets;
    if (!run_args.out.empty()) options.out_dir = run_args.out;
    const Experiment e = load_experiment(run_args.config, options, *components);
    RunOptions run_options;
    run_options.jobs = run_args.jobs;
    run_options.quiet = run_args.quiet;
    const int failed = run_experiment(e, *components, backends, run_options, std::cout, std::cerr);
    return failed == 0 ? 0 : kExitPointFailed;
  } catch (const ConfigError& e) {
    if (may_print) write_line(std::cerr, std::string("config error: ") + e.what());
    job.reset();  // ends the job, if one runs: MPI_Finalize, after rank 0 printed
    return kExitConfigError;
  }
}

}  // namespace bagua::experiments
