#include "experiments/runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <map>
#include <mutex>
#include <numeric>
#include <ostream>
#include <set>
#include <thread>

#include "core/check.h"
#include "core/models/profile.h"
#include "core/services.h"
#include "core/trainer/averaged_model.h"
#include "experiments/profile_file.h"
#include "experiments/quantity.h"
#include "experiments/real_time_trace.h"
#include "experiments/result_store.h"

namespace bagua::experiments {

namespace {

// Every rank's TrainResult to rank 0, as bytes, over a subgroup of all ranks (a fresh tag space: the
// gather cannot match a message of the algorithm's). Rank 0 gets them in rank order in `all`.
void gather_results(Transport& transport, const TrainResult& mine, std::vector<TrainResult>* all) {
  constexpr Tag kSizeTag = 1;
  constexpr Tag kBytesTag = 2;
  if (transport.size() == 1) {
    all->assign(1, mine);
    return;
  }
  // The list of everyone is freed before this rank blocks in its sends: at P ranks, P lists of P
  // ranks held at once would take P^2 ints.
  std::unique_ptr<Transport> group = [&] {
    std::vector<int> everyone(static_cast<size_t>(transport.size()));
    std::iota(everyone.begin(), everyone.end(), 0);
    return transport.subgroup(everyone);
  }();
  if (group->rank() != 0) {
    std::vector<uint8_t> bytes = serialize(mine);
    int64_t size = static_cast<int64_t>(bytes.size());
    group->send(BufferView::of(std::span<int64_t>(&size, 1)), 0, kSizeTag);
    group->send(BufferView::of(std::span<uint8_t>(bytes)), 0, kBytesTag);
    return;
  }
  all->assign(static_cast<size_t>(group->size()), TrainResult{});
  (*all)[0] = mine;
  for (int r = 1; r < group->size(); ++r) {
    int64_t size = 0;
    group->recv(BufferView::of(std::span<int64_t>(&size, 1)), r, kSizeTag);
    std::vector<uint8_t> bytes(static_cast<size_t>(size));
    group->recv(BufferView::of(std::span<uint8_t>(bytes)), r, kBytesTag);
    (*all)[static_cast<size_t>(r)] = deserialize(bytes);
  }
}

std::string describe(const PointConfig& p) {
  std::string s = p.id;
  for (const auto& [path, value] : p.swept)
    s += " " + path + "=" + (value.is_string() ? value.get<std::string>() : json_text(value));
  return s;
}

// "12.345 ms" from seconds.
std::string time_text(double seconds) {
  if (!std::isfinite(seconds)) return "-";
  return to_string(Time::ns(static_cast<int64_t>(std::llround(seconds * 1e9))));
}

std::string loss_text(double x) {
  if (!std::isfinite(x)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

double number_from(const Json& v) {
  return v.is_number() ? v.get<double>() : std::nan("");
}

std::string links_csv(const std::vector<LinkStats>& links) {
  std::string out = csv_line({"link", "carried_bytes", "utilization"});
  for (const LinkStats& l : links)
    out += csv_line({l.name, std::to_string(l.carried.count()), csv_number(l.utilization)});
  return out;
}

std::string ranks_csv(const std::vector<RankStats>& ranks) {
  std::string out = csv_line({"rank", "compute_s", "busy_comm_s"});
  for (size_t r = 0; r < ranks.size(); ++r) {
    out += csv_line({std::to_string(r),
                     csv_number(static_cast<double>(ranks[r].compute.nanoseconds()) / 1e9),
                     csv_number(static_cast<double>(ranks[r].busy_comm.nanoseconds()) / 1e9)});
  }
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::unique_ptr<Workload> make_workload(const PointConfig& point, const Components& c, int world_size) {
  WorkloadSetup setup;
  setup.world_size = world_size;
  setup.batch_size = point.workload.batch_size;
  setup.seed = point.seed;
  if (point.workload.name == kProfileWorkload) {
    return make_profile_workload(read_profile(point.workload.file_found, point.workload.file), setup);
  }
  return c.workloads.create(point.workload.name, point.workload.params, setup);
}

RanksRun run_ranks(const PointConfig& point, const Components& c, Backends& backends,
                   int64_t iterations, const IterationObserver& observer, bool gather) {
  const int world_size = backends.world_size(point);
  const std::unique_ptr<Workload> workload = make_workload(point, c, world_size);
  TrainOptions options;
  options.iterations = iterations >= 0 ? iterations : point.schedule.iterations;
  options.eval_interval = point.schedule.eval_interval;
  options.bucket_bytes = point.schedule.bucket_size;
  options.overlap = point.schedule.overlap;

  RanksRun run;
  // Every rank's records as they are made, kept for a run that stops early (Diverged): in-process all
  // ranks', in a job this process's rank's; only for models that can diverge.
  std::vector<TrainResult> seen(static_cast<size_t>(world_size));
  // A runtime in real time records its timeline here (the simulator records its own, in its report).
  const bool real_time_trace = point.output.trace && !backends.traits(point).virtual_time;
  // Service ranks (core/services.h): the cluster's CPU hosts run the algorithm's server loop; only the
  // workers train, are timed and give results. An algorithm that runs nothing there is refused.
  const int service_ranks = point.has_cluster ? point.cluster.cpu_hosts.count : 0;
  const AlgorithmDeps algorithm_deps{c.compressors, c.optimizers};
  if (service_ranks > 0 && !uses_service_ranks(point.algorithm.name, point.algorithm.params, c)) {
    throw ConfigError("cluster.cpu_hosts: algorithm \"" + point.algorithm.name +
                      "\" runs nothing on service ranks (byteps with \"servers\": \"cpu_hosts\" does)");
  }
  try {
    backends.run(
        point,
        [&](RankContext& job_ctx) {
          if (service_ranks > 0 && job_ctx.transport().rank() >= world_size) {
            // A service rank: the model only gives the layers the workers' buckets are made of.
            const std::unique_ptr<Model> model = workload->make_model(0);
            const std::unique_ptr<Algorithm> algorithm =
                c.algorithms.create(point.algorithm.name, point.algorithm.params, algorithm_deps);
            serve(job_ctx, world_size, *model, *algorithm, options);
            return;
          }
          std::optional<WorkerContext> worker;
          if (service_ranks > 0) worker.emplace(job_ctx, world_size);
          RankContext& rank_ctx = worker ? *worker : job_ctx;
          std::optional<TracingContext> tracing;
          if (real_time_trace) tracing.emplace(rank_ctx, point.output.trace_filter);
          RankContext& ctx = tracing ? *tracing : rank_ctx;
          const int rank = ctx.transport().rank();
          std::unique_ptr<Model> model = workload->make_model(rank);
          // Flow granularity models NCCL's collectives without moving bytes (core/collectives/
          // nccl_flow.h): a workload whose buffers hold data needs them moved.
          if (point.has_cluster && model->materialized() &&
              point.cluster.collective_granularity == collectives::CollectiveGranularity::kFlow)
            throw ConfigError(
                "cluster.collective_granularity: \"flow\" carries no data and needs meta buffers (a "
                "profile workload); workload \"" +
                point.workload.name + "\" holds data: use \"slice\"");
          // The optimizer's state lives where the weights do: meta for a profile, else the rank's
          // space.
          const BufferView like(nullptr, 0, DType::kF32,
                                model->materialized() ? &ctx.space() : &meta_space());
          std::unique_ptr<Optimizer> optimizer = c.optimizers.create(
              point.optimizer.name, point.optimizer.params, model->num_params(), like);
          const AlgorithmDeps deps{c.compressors, c.optimizers};
          std::unique_ptr<Algorithm> algorithm =
              c.algorithms.create(point.algorithm.name, point.algorithm.params, deps);
          TrainResult& mine = seen[static_cast<size_t>(rank)];
          mine.rank = rank;
          const bool may_diverge = model->materialized();  // a profile has no loss (trainer.h)
          TrainOptions rank_options = options;
          rank_options.keep_evaluated_weights = model->has_test_set();
          TrainResult result =
              train(ctx, *model, *optimizer, *algorithm, rank_options, [&](const IterationRecord& rec) {
                if (may_diverge) mine.iterations.push_back(rec);
                if (rank == 0 && observer) observer(rec);
              });
          // The gather is simulated traffic like any other (it shows in links.csv and ranks.csv), and
          // at scale a costly part of a run: P - 1 flows into one link, re-shared as each comes and
          // goes. A trial run skips it.
          if (!gather) return;
          std::vector<TrainResult> all;
          gather_results(ctx.transport(), result, &all);
          // The averaged model's test accuracy (core/trainer/averaged_model.h), over a group of its own,
          // once rank 0 holds every rank's result: every rank has finished training.
          std::vector<double> averaged;
          if (model->has_test_set()) {
            std::vector<int> everyone(static_cast<size_t>(ctx.transport().size()));
            std::iota(everyone.begin(), everyone.end(), 0);
            averaged = averaged_model_accuracy(*ctx.transport().subgroup(everyone), *model, result);
            result.evaluated_weights = {};
          }
          std::string trace = tracing ? gather_trace(ctx.transport(), tracing->spans(),
                                                     point.output.trace_filter)
                                      : "";
          if (rank == 0) {
            run.ranks = std::move(all);
            run.optimal_loss = model->optimal_loss();
            run.averaged_model_accuracy = std::move(averaged);
            run.trace = std::move(trace);
          }
        },
        &run.report);
  } catch (const Diverged& d) {
    run.ranks = std::move(seen);
    run.diverged = PointFailure{PointStatus::kDiverged, d.what(), d.iteration()};
    run.report.reset();
    if (backends.traits(point).job) {
      // In a job every rank threw the same Diverged (runtime/mpi/world.h) and holds only its own
      // records: rank 0 gathers them, as after a run that ended normally.
      std::vector<TrainResult> mine = std::move(run.ranks);
      backends.run(
          point,
          [&](RankContext& ctx) {
            const int rank = ctx.transport().rank();
            std::vector<TrainResult> all;
            gather_results(ctx.transport(), mine[static_cast<size_t>(rank)], &all);
            if (rank == 0) run.ranks = std::move(all);
          },
          nullptr);
    }
  }
  return run;
}

PointOutput run_point(const PointConfig& point, const Components& c, Backends& backends,
                      const IterationObserver& observer) {
  RanksRun run = run_ranks(point, c, backends, /*iterations=*/-1, observer);
  PointOutput out;
  if (!backends.is_writer()) return out;
  if (run.diverged) {
    // The iterations before the first one any rank's loss was not finite, on every rank.
    const size_t kept =
        std::min(finite_prefix(run.ranks),
                 static_cast<size_t>(std::max<int64_t>(0, run.diverged->diverged_at_iteration)));
    for (TrainResult& r : run.ranks)
      r.iterations.resize(std::min(kept, r.iterations.size()));
    out.failure =
        PointFailure{PointStatus::kDiverged, run.diverged->error, run.diverged->diverged_at_iteration};
    if (kept > 0) {
      // A run that diverged early keeps fewer iterations than measured_from skips: measure the last.
      out.metrics =
          compute_metrics(run.ranks, point.workload.batch_size, run.optimal_loss,
                          std::min<int64_t>(point.measured_from, static_cast<int64_t>(kept) - 1));
      out.files.emplace_back("iterations.csv", iterations_csv(out.metrics));
    }
    out.summary = summary_json(point, out.metrics, &*out.failure);
    out.files.emplace_back("summary.json", out.summary.dump(2) + "\n");
    return out;
  }
  out.metrics = compute_metrics(run.ranks, point.workload.batch_size, run.optimal_loss,
                                point.measured_from, run.averaged_model_accuracy);
  out.summary = summary_json(point, out.metrics);
  out.files.emplace_back("iterations.csv", iterations_csv(out.metrics));
  if (run.report) {
    out.files.emplace_back("links.csv", links_csv(run.report->links));
    out.files.emplace_back("ranks.csv", ranks_csv(run.report->ranks));
  }
  if (point.output.trace) out.files.emplace_back("trace.json", run.report ? run.report->trace : run.trace);
  out.files.emplace_back("summary.json", out.summary.dump(2) + "\n");
  return out;
}

namespace {

// A cluster path that only the simulator models (experiments/config.h: "intra_host, nic, topology,
// device, cpu, factors and transport matter only to the simulator", and the CPU hosts' CPU): a real
// runtime measures the real network and CPUs instead.
bool simulator_only(const std::string& path) {
  for (const char* k : {"intra_host", "nic", "topology", "device", "cpu", "factors", "transport",
                        "cpu_hosts.memory_bandwidth"}) {
    const std::string prefix = std::string("cluster.") + k;
    if (path == prefix || path.rfind(prefix + ".", 0) == 0) return true;
  }
  return false;
}

}  // namespace

void check_points(const Experiment& e, const Components& c, Backends& backends) {
  // A sweep of a network value on a real runtime would label its points 1/10/100 Gbps and measure the
  // same network every time.
  for (const PointConfig& p : e.points) {
    if (backends.traits(p).virtual_time) continue;
    for (const auto& [path, value] : p.swept) {
      if (!simulator_only(path)) continue;
      throw ConfigError(
          "sweep.axes." + path + ": a sweep of a simulated network value on runtime \"" + p.runtime +
          "\", which measures the real network (sweep it with \"runtime\": " + "\"sim\")");
    }
  }
  // What decides whether the components accept a world: its shape and the components themselves.
  std::map<std::string, const PointConfig*> distinct;
  for (const PointConfig& p : e.points) {
    const Json& r = p.resolved;
    Json key = Json::object();
    key["runtime"] = r["runtime"];
    if (r.contains("cluster")) {
      for (const char* k : {"hosts", "devices_per_host", "topology"})
        if (r["cluster"].contains(k)) key[k] = r["cluster"][k];
    }
    key["workload"] = r["workload"];
    key["algorithm"] = r["algorithm"];
    key["optimizer"] = r["optimizer"];
    key["bucket_size"] = r["schedule"]["bucket_size"];
    key["overlap"] = r["schedule"]["overlap"];
    distinct.emplace(key.dump(), &p);
  }
  std::vector<const PointConfig*> order;
  for (const auto& [k, p] : distinct)
    order.push_back(p);
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->index < b->index; });
  for (const PointConfig* p : order) {
    try {
      run_ranks(*p, c, backends, /*iterations=*/0, /*observer=*/{}, /*gather=*/false);
    } catch (const ConfigError& err) {
      throw ConfigError(std::string(err.what()) +
                        (e.points.size() > 1 ? " (point " + describe(*p) + ")" : ""));
    }
  }
}

namespace {

// "1h02m", "3m05s", "12s"
std::string duration_text(double seconds) {
  const int64_t s = std::max<int64_t>(0, static_cast<int64_t>(std::llround(seconds)));
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s % 3600 / 60));
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  else
    std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(s));
  return buf;
}

}  // namespace

int run_experiment(const Experiment& e, const Components& c, Backends& backends,
                   const RunOptions& options, std::ostream& out, std::ostream& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  // Under a job runtime (mpi, nccl) every process runs every point in step; start the job first, so
  // that only its rank 0 writes.
  const std::string& first = e.points.front().runtime;
  if (backends.traits(e.points.front()).job) {
    for (const PointConfig& p : e.points) {
      if (p.runtime != first) {
        throw ConfigError("runtime: an experiment under " + first + " cannot also have \"" + p.runtime +
                          "\" points");
      }
    }
    backends.start_job(e.points.front());
  }
  const bool writer = backends.is_writer();
  const bool chatty = writer && !options.quiet;
  check_points(e, c, backends);

  // The points this run covers (--point, --where): all unless a selection is given.
  const size_t n = e.points.size();
  std::vector<uint8_t> selected(n, 1);
  if (options.select) {
    for (size_t i = 0; i < n; ++i)
      selected[i] = options.select(e.points[i]) ? 1 : 0;
  }

  // The folder is claimed (created, checked writable, locked, its experiment checked) and the points
  // already done found by the writer; the outcome is shared with every MPI rank: byte 0 is 1 when the
  // writer failed (it throws; the others end quietly), then one byte per point.
  std::unique_ptr<ExperimentDir> claim;
  std::unique_ptr<ResultStore> store;
  std::vector<uint8_t> skip(n + 1, 0);  // 1: folder and ok row present; 2: ok folder, row missing
  std::vector<Json> summaries(n);
  std::optional<ConfigError> claim_error;
  if (writer) {
    try {
      std::set<std::string> ids;
      for (const PointConfig& p : e.points)
        ids.insert(p.id);
      claim = std::make_unique<ExperimentDir>(e.output_dir, e.name, config_hash(e), ids, options.fresh);
      if (!claim->moved_aside().empty()) {
        write_line(progress, "--fresh: moved the previous results of " + e.output_dir + " to " +
                                 claim->moved_aside().string());
      }
      store = std::make_unique<ResultStore>(e.output_dir, results_header(e.axes));
      claim->record();
      for (size_t i = 0; i < n; ++i) {
        std::optional<Json> s = store->read_summary(e.points[i].id);
        if (!s || !is_summary_of(*s, e.points[i].id)) continue;
        if (summary_status(*s) != PointStatus::kOk) {
          summaries[i] = std::move(*s);  // shown if this run does not reach it
          continue;
        }
        summaries[i] = std::move(*s);
        skip[i + 1] = store->row_status(e.points[i].id) == std::optional<std::string>("ok") ? 1 : 2;
      }
    } catch (const ConfigError& err) {
      claim_error = err;
      skip.assign(n + 1, 0);
      skip[0] = 1;
    }
  }
  skip = backends.share_from_writer(std::move(skip));
  if (claim_error) throw *claim_error;
  if (skip[0]) throw ConfigError("the writing rank could not claim " + e.output_dir);
  skip.erase(skip.begin());
  std::unique_ptr<OrderedRows> rows = writer ? std::make_unique<OrderedRows>(*store, n) : nullptr;

  size_t to_run = 0;
  for (size_t i = 0; i < n; ++i)
    if (selected[i] && !skip[i]) ++to_run;

  std::mutex mu;  // progress lines, failure list, summaries
  std::vector<std::string> failures;
  size_t finished = 0;  // selected points, done or skipped
  size_t ran = 0;       // points run by this run
  const size_t total = static_cast<size_t>(std::count(selected.begin(), selected.end(), 1));
  auto report = [&](size_t i, const std::string& line, bool counted) {
    std::lock_guard<std::mutex> lock(mu);
    ++finished;
    if (counted) ++ran;
    if (!chatty) return;
    std::string eta;
    if (counted && ran < to_run) {
      const double elapsed = seconds_since(t0);
      eta = ", ETA " +
            duration_text(elapsed / static_cast<double>(ran) * static_cast<double>(to_run - ran));
    }
    write_line(progress, "[" + std::to_string(finished) + "/" + std::to_string(total) + "] " +
                             describe(e.points[i]) + ": " + line + eta);
  };

  const bool parallel = std::all_of(e.points.begin(), e.points.end(), [&](const PointConfig& p) {
    return backends.traits(p).virtual_time;
  });
  PointExecutor* executor = parallel ? options.executor : nullptr;

  auto run_one = [&](int lane, size_t i) {
    const PointConfig& p = e.points[i];
    if (!selected[i]) {
      if (writer) rows->done(i, std::nullopt);
      return;
    }
    if (skip[i]) {
      if (writer)
        rows->done(i, skip[i] == 2 ? std::optional(results_row(summaries[i], e.axes)) : std::nullopt);
      report(i, "already done, skipped", false);
      return;
    }
    const auto start = std::chrono::steady_clock::now();
    // A line every progress_interval_s of wall time while a point runs: iteration k of N and the
    // (simulated, or real) time of rank 0 so far.
    auto last_line = start;
    const IterationObserver observer = [&, start](const IterationRecord& rec) mutable {
      if (!chatty || options.progress_interval_s <= 0) return;
      const auto now = std::chrono::steady_clock::now();
      if (std::chrono::duration<double>(now - last_line).count() < options.progress_interval_s) return;
      last_line = now;
      char wall[32];
      std::snprintf(wall, sizeof wall, "%.0f s", seconds_since(start));
      std::lock_guard<std::mutex> lock(mu);
      write_line(progress, "  " + p.id + ": iteration " + std::to_string(rec.iteration + 1) + " of " +
                               std::to_string(p.schedule.iterations) + ", " +
                               (backends.traits(p).virtual_time ? "simulated" : "elapsed") + " time " +
                               to_string(rec.end) + " [wall " + wall + "]");
    };
    PointOutput o;
    try {
      o = executor ? executor->run(lane, p) : run_point(p, c, backends, observer);
    } catch (const std::exception& err) {
      // The point failed: recorded (its summary.json and row say so) and the sweep goes on.
      o = PointOutput{};
      o.failure = PointFailure{
          PointStatus::kFailed,
          std::string(dynamic_cast<const ConfigError*>(&err) ? "config error: " : "error: ") +
              err.what(),
          -1};
      if (writer) {
        o.summary = summary_json(p, o.metrics, &*o.failure);
        o.files.emplace_back("summary.json", o.summary.dump(2) + "\n");
      }
    }
    if (!writer) return;
    store->write_point(p.id, o.files);
    rows->done(i, results_row(o.summary, e.axes));
    {
      std::lock_guard<std::mutex> lock(mu);
      summaries[i] = o.summary;
      if (o.failure)
        failures.push_back("point " + p.id + ": " + o.failure->error);  // "diverged: ...", "error: ..."
    }
    char wall[32];
    std::snprintf(wall, sizeof wall, "%.2f s", seconds_since(start));
    if (o.failure && o.failure->status == PointStatus::kFailed) {
      report(i, "FAILED: " + o.failure->error + " [wall " + wall + "]", true);
      return;
    }
    report(i,
           std::string(o.failure ? "DIVERGED (" + o.failure->error + "); before it " : "") +
               time_text(o.metrics.time_per_iteration_s) + "/iteration (compute " +
               time_text(o.metrics.compute_per_iteration_s) + ", exposed communication " +
               time_text(o.metrics.exposed_comm_per_iteration_s) + "), final loss " +
               loss_text(o.metrics.final_loss) + " [wall " + wall + "]",
           true);
  };

  const int lanes = executor ? executor->lanes() : parallel ? options.jobs : 1;
  const int jobs = std::max(1, std::min<int>(lanes, static_cast<int>(n)));
  // What cannot be recorded as a point's failure (the results folder cannot be written, say) stops the
  // run: the first such error is rethrown once every worker has stopped.
  std::exception_ptr fatal;
  std::atomic<bool> stop{false};
  auto run_guarded = [&](int lane, size_t i) {
    try {
      run_one(lane, i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!fatal) fatal = std::current_exception();
      stop = true;
    }
  };
  if (jobs == 1) {
    for (size_t i = 0; i < n && !stop; ++i)
      run_guarded(0, i);
  } else {
    // Each simulation is independent: workers take the next point until none is left.
    std::atomic<size_t> next{0};
    std::vector<std::thread> workers;
    for (int w = 0; w < jobs; ++w) {
      workers.emplace_back([&, w] {
        for (size_t i = next++; i < n && !stop; i = next++)
          run_guarded(w, i);
      });
    }
    for (std::thread& t : workers)
      t.join();
  }
  if (fatal) std::rethrow_exception(fatal);

  if (writer) {
    size_t diverged = 0;
    size_t failed = 0;
    out << e.name << ": " << total << " point" << (total == 1 ? "" : "s");
    if (total != n) out << " of " << n;
    out << "\n";
    for (size_t i = 0; i < n; ++i) {
      if (!selected[i]) continue;
      const Json& s = summaries[i];
      out << "  " << describe(e.points[i]) << "\n    ";
      if (s.is_null()) {
        out << "not run\n";
        continue;
      }
      const PointStatus status = summary_status(s);
      if (status == PointStatus::kFailed) {
        ++failed;
        out << "failed: " << s.value("error", std::string()) << "\n";
        continue;
      }
      if (status == PointStatus::kDiverged) {
        ++diverged;
        out << s.value("error", std::string()) << "; before it: ";
      }
      out << time_text(number_from(s.at("time_per_iteration_s"))) << "/iteration = compute "
          << time_text(number_from(s.at("compute_per_iteration_s"))) << " + exposed communication "
          << time_text(number_from(s.at("exposed_comm_per_iteration_s"))) << "; final loss "
          << loss_text(number_from(s.at("final_loss"))) << ", full loss "
          << loss_text(number_from(s.at("final_full_loss"))) << "\n";
    }
    if (failed + diverged > 0) {
      out << failed + diverged << " of " << total << " point" << (total == 1 ? "" : "s")
          << " did not complete (" << failed << " failed, " << diverged
          << " diverged); a rerun retries only those\n";
    }
    out << "results: " << store->results_file().string() << std::endl;
    if (!options.quiet) {
      char wall[64];
      std::snprintf(wall, sizeof wall, "wall time %.2f s", seconds_since(t0));
      write_line(progress, wall);
    }
    for (const std::string& f : failures)
      if (!chatty) write_line(progress, f);
    return static_cast<int>(failed + diverged);
  }
  return 0;
}

void write_line(std::ostream& out, const std::string& line) {
  out << (line + "\n") << std::flush;
}

}  // namespace bagua::experiments
