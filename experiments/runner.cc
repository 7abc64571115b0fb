#include "experiments/runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <numeric>
#include <ostream>
#include <thread>

#include "core/check.h"
#include "core/models/profile.h"
#include "experiments/profile_file.h"
#include "experiments/quantity.h"
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
  std::vector<int> everyone(static_cast<size_t>(transport.size()));
  std::iota(everyone.begin(), everyone.end(), 0);
  std::unique_ptr<Transport> group = transport.subgroup(everyone);
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
                   int64_t iterations) {
  const int world_size = backends.world_size(point);
  const std::unique_ptr<Workload> workload = make_workload(point, c, world_size);
  TrainOptions options;
  options.iterations = iterations >= 0 ? iterations : point.schedule.iterations;
  options.eval_interval = point.schedule.eval_interval;
  options.bucket_bytes = point.schedule.bucket_size;
  options.overlap = point.schedule.overlap;

  RanksRun run;
  backends.run(
      point,
      [&](RankContext& ctx) {
        const int rank = ctx.transport().rank();
        std::unique_ptr<Model> model = workload->make_model(rank);
        // The optimizer's state lives where the weights do: meta for a profile, else the rank's space.
        const BufferView like(nullptr, 0, DType::kF32,
                              model->materialized() ? &ctx.space() : &meta_space());
        std::unique_ptr<Optimizer> optimizer = c.optimizers.create(
            point.optimizer.name, point.optimizer.params, model->num_params(), like);
        const AlgorithmDeps deps{c.compressors, c.optimizers};
        std::unique_ptr<Algorithm> algorithm =
            c.algorithms.create(point.algorithm.name, point.algorithm.params, deps);
        const TrainResult result = train(ctx, *model, *optimizer, *algorithm, options);
        std::vector<TrainResult> all;
        gather_results(ctx.transport(), result, &all);
        if (rank == 0) {
          run.ranks = std::move(all);
          run.optimal_loss = model->optimal_loss();
        }
      },
      &run.report);
  return run;
}

PointOutput run_point(const PointConfig& point, const Components& c, Backends& backends) {
  RanksRun run = run_ranks(point, c, backends);
  PointOutput out;
  if (!backends.is_writer()) return out;
  out.metrics =
      compute_metrics(run.ranks, point.workload.batch_size, run.optimal_loss, point.measured_from);
  out.summary = summary_json(point, out.metrics);
  out.files.emplace_back("iterations.csv", iterations_csv(out.metrics));
  if (run.report) {
    out.files.emplace_back("links.csv", links_csv(run.report->links));
    out.files.emplace_back("ranks.csv", ranks_csv(run.report->ranks));
    if (point.output.trace) out.files.emplace_back("trace.json", run.report->trace);
  }
  out.files.emplace_back("summary.json", out.summary.dump(2) + "\n");
  return out;
}

void check_points(const Experiment& e, const Components& c, Backends& backends) {
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
      run_ranks(*p, c, backends, /*iterations=*/0);
    } catch (const ConfigError& err) {
      throw ConfigError(std::string(err.what()) +
                        (e.points.size() > 1 ? " (point " + describe(*p) + ")" : ""));
    }
  }
}

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

  // Which points are done already (decided by the writer, shared with every MPI rank).
  const size_t n = e.points.size();
  std::unique_ptr<ResultStore> store;
  std::vector<uint8_t> skip(n, 0);  // 1: folder and row present; 2: folder present, row missing
  std::vector<Json> summaries(n);
  if (writer) {
    store = std::make_unique<ResultStore>(e.output_dir, results_header(e.axes));
    for (size_t i = 0; i < n; ++i) {
      std::optional<Json> s = store->read_summary(e.points[i].id);
      if (s && is_summary_of(*s, e.points[i].id)) {
        summaries[i] = std::move(*s);
        skip[i] = store->has_row(e.points[i].id) ? 1 : 2;
      }
    }
  }
  skip = backends.share_from_writer(std::move(skip));
  std::unique_ptr<OrderedRows> rows = writer ? std::make_unique<OrderedRows>(*store, n) : nullptr;

  std::mutex mu;  // progress lines, failure list, summaries
  std::vector<std::string> failures;
  size_t finished = 0;
  auto report = [&](size_t i, const std::string& line) {
    std::lock_guard<std::mutex> lock(mu);
    ++finished;
    if (chatty) {
      write_line(progress, "[" + std::to_string(finished) + "/" + std::to_string(n) + "] " +
                               describe(e.points[i]) + ": " + line);
    }
  };

  auto run_one = [&](size_t i) {
    const PointConfig& p = e.points[i];
    if (skip[i]) {
      if (writer)
        rows->done(i, skip[i] == 2 ? std::optional(results_row(summaries[i], e.axes)) : std::nullopt);
      report(i, "already done, skipped");
      return;
    }
    const auto start = std::chrono::steady_clock::now();
    try {
      PointOutput o = run_point(p, c, backends);
      if (writer) {
        store->write_point(p.id, o.files);
        rows->done(i, results_row(o.summary, e.axes));
        {
          std::lock_guard<std::mutex> lock(mu);
          summaries[i] = o.summary;
        }
        char wall[32];
        std::snprintf(wall, sizeof wall, "%.2f s", seconds_since(start));
        report(i, time_text(o.metrics.time_per_iteration_s) + "/iteration (compute " +
                      time_text(o.metrics.compute_per_iteration_s) + ", exposed communication " +
                      time_text(o.metrics.exposed_comm_per_iteration_s) + "), final loss " +
                      loss_text(o.metrics.final_loss) + " [wall " + wall + "]");
      }
    } catch (const std::exception& err) {
      // The point's row is not written, nor any later one: a rerun resumes here, in order.
      std::lock_guard<std::mutex> lock(mu);
      failures.push_back(
          std::string(dynamic_cast<const ConfigError*>(&err) ? "config error: " : "error: ") +
          "point " + p.id + ": " + err.what());
      if (chatty) write_line(progress, failures.back());
    }
  };

  const bool parallel = std::all_of(e.points.begin(), e.points.end(), [&](const PointConfig& p) {
    return backends.traits(p).virtual_time;
  });
  const int jobs = parallel ? std::max(1, std::min<int>(options.jobs, static_cast<int>(n))) : 1;
  if (jobs == 1) {
    for (size_t i = 0; i < n; ++i) {
      run_one(i);
      if (!failures.empty()) break;
    }
  } else {
    // Each simulation is independent: workers take the next point until none is left or one failed.
    std::atomic<size_t> next{0};
    std::atomic<bool> stop{false};
    std::vector<std::thread> workers;
    for (int w = 0; w < jobs; ++w) {
      workers.emplace_back([&] {
        for (size_t i = next++; i < n && !stop; i = next++) {
          run_one(i);
          std::lock_guard<std::mutex> lock(mu);
          if (!failures.empty()) stop = true;
        }
      });
    }
    for (std::thread& t : workers)
      t.join();
  }

  if (writer) {
    out << e.name << ": " << n << " point" << (n == 1 ? "" : "s") << "\n";
    for (size_t i = 0; i < n; ++i) {
      const Json& s = summaries[i];
      out << "  " << describe(e.points[i]) << "\n    ";
      if (s.is_null()) {
        out << "not run\n";
        continue;
      }
      out << time_text(number_from(s.at("time_per_iteration_s"))) << "/iteration = compute "
          << time_text(number_from(s.at("compute_per_iteration_s"))) << " + exposed communication "
          << time_text(number_from(s.at("exposed_comm_per_iteration_s"))) << "; final loss "
          << loss_text(number_from(s.at("final_loss"))) << ", full loss "
          << loss_text(number_from(s.at("final_full_loss"))) << "\n";
    }
    out << "results: " << store->results_file().string() << std::endl;
    if (!options.quiet) {
      char wall[64];
      std::snprintf(wall, sizeof wall, "wall time %.2f s", seconds_since(t0));
      write_line(progress, wall);
    }
  }
  for (const std::string& f : failures)
    if (!chatty && writer) write_line(progress, f);
  return static_cast<int>(failures.size());
}

void write_line(std::ostream& out, const std::string& line) {
  out << (line + "\n") << std::flush;
}

}  // namespace bagua::experiments
