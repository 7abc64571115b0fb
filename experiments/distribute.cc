#include "experiments/distribute.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <ostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/check.h"

namespace bagua::experiments {

namespace {

// Tags of the channel: a worker's lane count once, then one tag per lane (orders and answers).
constexpr int kHelloTag = 1;
constexpr int kFirstLaneTag = 2;
constexpr int lane_tag(int lane) {
  return kFirstLaneTag + lane;
}

// An order's first field: a point's sweep index (>= 0), or kStop.
constexpr int64_t kStop = -1;

// An answer's first byte.
enum class AnswerKind : uint8_t { kOutput = 0, kConfigError = 1, kError = 2 };

// Bytes in native order (every process of a job runs on one kind of machine, as for the MPI runtime's
// gather of TrainResults, experiments/results.h).
class Writer {
 public:
  template <class T>
  void put(T value) {
    const size_t at = bytes_.size();
    bytes_.resize(at + sizeof value);
    std::memcpy(bytes_.data() + at, &value, sizeof value);
  }
  void put_text(const std::string& s) {
    put<int64_t>(static_cast<int64_t>(s.size()));
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

class Reader {
 public:
  explicit Reader(const std::vector<uint8_t>& bytes) : bytes_(bytes) {}
  template <class T>
  T take() {
    BAGUA_CHECK(at_ + sizeof(T) <= bytes_.size(), "a message of the job channel is cut short");
    T value;
    std::memcpy(&value, bytes_.data() + at_, sizeof value);
    at_ += sizeof value;
    return value;
  }
  std::string take_text() {
    const int64_t n = take<int64_t>();
    BAGUA_CHECK(n >= 0 && static_cast<size_t>(n) <= bytes_.size() - at_,
                "a message of the job channel is cut short");
    std::string s(reinterpret_cast<const char*>(bytes_.data() + at_), static_cast<size_t>(n));
    at_ += static_cast<size_t>(n);
    return s;
  }
  bool done() const { return at_ == bytes_.size(); }

 private:
  const std::vector<uint8_t>& bytes_;
  size_t at_ = 0;
};

std::vector<uint8_t> encode_output(const PointOutput& o) {
  Writer w;
  w.put(static_cast<uint8_t>(AnswerKind::kOutput));
  const PointMetrics& m = o.metrics;
  w.put<int64_t>(m.world_size);
  w.put<int64_t>(m.iterations);
  w.put<int64_t>(m.slowest_rank);
  for (double x : {m.time_per_iteration_s, m.compute_per_iteration_s, m.exposed_comm_per_iteration_s,
                   m.final_loss, m.final_full_loss, m.optimal_loss, m.final_test_accuracy,
                   m.final_test_accuracy_avg_model, m.samples_per_s})
    w.put<double>(x);
  w.put<int64_t>(static_cast<int64_t>(m.rows.size()));
  for (const IterationRow& r : m.rows) {
    w.put<int64_t>(r.iteration);
    for (double x :
         {r.time_s, r.iteration_s, r.compute_s, r.exposed_comm_s, r.loss, r.full_loss, r.test_accuracy,
          r.test_accuracy_min, r.test_accuracy_max, r.test_accuracy_avg_model})
      w.put<double>(x);
  }
  w.put_text(o.summary.dump());
  w.put<int64_t>(static_cast<int64_t>(o.files.size()));
  for (const auto& [name, content] : o.files) {
    w.put_text(name);
    w.put_text(content);
  }
  // A diverged point's failure (a failed one is an error answer instead).
  w.put<uint8_t>(o.failure ? 1 : 0);
  if (o.failure) {
    w.put<uint8_t>(static_cast<uint8_t>(o.failure->status));
    w.put_text(o.failure->error);
    w.put<int64_t>(o.failure->diverged_at_iteration);
  }
  return std::move(w.bytes());
}

PointOutput decode_output(Reader& r) {
  PointOutput o;
  PointMetrics& m = o.metrics;
  m.world_size = static_cast<int>(r.take<int64_t>());
  m.iterations = r.take<int64_t>();
  m.slowest_rank = static_cast<int>(r.take<int64_t>());
  for (double* x : {&m.time_per_iteration_s, &m.compute_per_iteration_s,
                    &m.exposed_comm_per_iteration_s, &m.final_loss, &m.final_full_loss, &m.optimal_loss,
                    &m.final_test_accuracy, &m.final_test_accuracy_avg_model, &m.samples_per_s})
    *x = r.take<double>();
  const int64_t rows = r.take<int64_t>();
  BAGUA_CHECK(rows >= 0, "a point's answer with a negative row count");
  m.rows.resize(static_cast<size_t>(rows));
  for (IterationRow& row : m.rows) {
    row.iteration = r.take<int64_t>();
    for (double* x : {&row.time_s, &row.iteration_s, &row.compute_s, &row.exposed_comm_s, &row.loss,
                      &row.full_loss, &row.test_accuracy, &row.test_accuracy_min,
                      &row.test_accuracy_max, &row.test_accuracy_avg_model})
      *x = r.take<double>();
  }
  o.summary = Json::parse(r.take_text());
  const int64_t files = r.take<int64_t>();
  BAGUA_CHECK(files >= 0, "a point's answer with a negative file count");
  for (int64_t i = 0; i < files; ++i) {
    std::string name = r.take_text();
    o.files.emplace_back(std::move(name), r.take_text());
  }
  if (r.take<uint8_t>() != 0) {
    PointFailure f;
    f.status = static_cast<PointStatus>(r.take<uint8_t>());
    f.error = r.take_text();
    f.diverged_at_iteration = r.take<int64_t>();
    o.failure = std::move(f);
  }
  BAGUA_CHECK(r.done(), "a point's answer longer than its content");
  return o;
}

std::vector<uint8_t> encode_error(AnswerKind kind, const std::string& message) {
  Writer w;
  w.put(static_cast<uint8_t>(kind));
  w.put_text(message);
  return std::move(w.bytes());
}

std::vector<uint8_t> encode_order(const PointConfig& point) {
  Writer w;
  w.put<int64_t>(point.index);
  w.put_text(point.id);
  return std::move(w.bytes());
}

std::vector<uint8_t> encode_stop() {
  Writer w;
  w.put<int64_t>(kStop);
  return std::move(w.bytes());
}

// The job's size as the launcher's environment gives it before MPI starts: Open MPI's mpirun sets
// OMPI_COMM_WORLD_SIZE (Open MPI 4.1 mpirun(1), "Exported Environment Variables"); a PMIx launcher
// (srun --mpi=pmix) sets PMIX_RANK, the size being known only once MPI runs (0 here). 1: no launcher.
int launched_size() {
  if (const char* v = std::getenv("OMPI_COMM_WORLD_SIZE")) return std::max(1, std::atoi(v));
  if (std::getenv("PMIX_RANK")) return 0;
  return 1;
}

// Rank 0's executor: lanes [0, own) run points on this process; each later lane is one lane of a
// worker, whose hello said how many it has.
class Farm final : public PointExecutor {
 public:
  Farm(const Components& c, Backends& backends, JobChannel& channel, int own)
      : c_(c), backends_(backends), channel_(channel), own_(own) {
    for (int worker = 1; worker < channel.size(); ++worker) {
      const std::vector<uint8_t> hello = channel.receive(worker, kHelloTag);
      Reader r(hello);
      const int64_t lanes = r.take<int64_t>();
      BAGUA_CHECK(lanes >= 1, "rank " + std::to_string(worker) + " offers no lane");
      for (int lane = 0; lane < lanes; ++lane)
        remote_.push_back({worker, lane});
    }
  }
  Farm(const Farm&) = delete;
  Farm& operator=(const Farm&) = delete;
  // Stops every worker's lanes (once).
  void stop() {
    if (stopped_) return;
    stopped_ = true;
    const std::vector<uint8_t> order = encode_stop();
    for (const RemoteLane& l : remote_)
      channel_.send(order, l.worker, lane_tag(l.lane));
  }
  // A farm dropped without stop() (rank 0 failed unexpectedly) still lets its workers go.
  ~Farm() override {
    try {
      stop();
    } catch (...) {
    }
  }

  int lanes() const override { return own_ + static_cast<int>(remote_.size()); }
  int processes() const { return channel_.size(); }

  PointOutput run(int lane, const PointConfig& point) override {
    BAGUA_CHECK(lane >= 0 && lane < lanes(),
                "lane " + std::to_string(lane) + " of " + std::to_string(lanes()));
    if (lane < own_) return run_point(point, c_, backends_);
    const RemoteLane& l = remote_[static_cast<size_t>(lane - own_)];
    channel_.send(encode_order(point), l.worker, lane_tag(l.lane));
    const std::vector<uint8_t> answer = channel_.receive(l.worker, lane_tag(l.lane));
    Reader r(answer);
    const auto kind = static_cast<AnswerKind>(r.take<uint8_t>());
    if (kind == AnswerKind::kOutput) return decode_output(r);
    const std::string message = r.take_text();
    if (kind == AnswerKind::kConfigError) throw ConfigError(message);
    throw std::runtime_error(message + " (on rank " + std::to_string(l.worker) + ")");
  }

 private:
  struct RemoteLane {
    int worker;
    int lane;
  };
  const Components& c_;
  Backends& backends_;
  JobChannel& channel_;
  int own_;
  std::vector<RemoteLane> remote_;
  bool stopped_ = false;
};

// A worker: `lanes` threads, each running the points its orders name until a stop order.
void serve(const Experiment& e, const Components& c, Backends& backends, JobChannel& channel,
           int lanes) {
  std::map<int64_t, const PointConfig*> by_index;
  for (const PointConfig& p : e.points)
    by_index[p.index] = &p;
  Writer hello;
  hello.put<int64_t>(lanes);
  channel.send(hello.bytes(), 0, kHelloTag);

  std::vector<std::thread> threads;
  for (int lane = 0; lane < lanes; ++lane) {
    threads.emplace_back([&, lane] {
      for (;;) {
        const std::vector<uint8_t> order = channel.receive(0, lane_tag(lane));
        Reader r(order);
        const int64_t index = r.take<int64_t>();
        if (index == kStop) return;
        const std::string id = r.take_text();
        std::vector<uint8_t> answer;
        const auto it = by_index.find(index);
        if (it == by_index.end() || it->second->id != id) {
          answer = encode_error(AnswerKind::kConfigError,
                                "rank " + std::to_string(channel.rank()) + " has no point " + id +
                                    " (every process must load the same config and files)");
        } else {
          try {
            answer = encode_output(run_point(*it->second, c, backends));
          } catch (const ConfigError& err) {
            answer = encode_error(AnswerKind::kConfigError, err.what());
          } catch (const std::exception& err) {
            answer = encode_error(AnswerKind::kError, err.what());
          }
        }
        channel.send(answer, 0, lane_tag(lane));
      }
    });
  }
  for (std::thread& t : threads)
    t.join();
}

}  // namespace

bool spread_over_job(const Experiment& e, const RuntimeRegistry& runtimes) {
  const int size = launched_size();
  if (size == 1 || e.points.empty()) return false;
  for (const PointConfig& p : e.points) {
    const RuntimeTraits& t = runtimes.at(p.runtime).traits;
    if (t.job) return false;  // one job of mpi or nccl ranks, as without a sweep
    if (!t.virtual_time) {
      throw ConfigError("runtime: \"" + p.runtime +
                        "\" runs every rank in one process, in real time: under mpirun each process "
                        "would run the whole sweep; run bagua alone, or use \"mpi\"");
    }
  }
  return true;  // every point simulated
}

int default_jobs_in_job(const JobChannel& channel) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, channel.local_size()));
}

SpreadOutcome run_spread(const Experiment& e, const Components& c, Backends& backends,
                         const RunOptions& options, JobChannel& channel, std::ostream& out,
                         std::ostream& progress) {
  const int lanes = std::max(1, options.jobs);
  if (channel.rank() != 0) {
    serve(e, c, backends, channel, lanes);
    return {};
  }
  Farm farm(c, backends, channel, lanes);
  if (!options.quiet) {
    write_line(progress, std::to_string(e.points.size()) + " points over " +
                             std::to_string(farm.processes()) + " processes, " +
                             std::to_string(farm.lanes()) + " at a time (rank 0 writes)");
  }
  RunOptions farmed = options;
  farmed.executor = &farm;
  try {
    const int failed = run_experiment(e, c, backends, farmed, out, progress);
    farm.stop();
    return {failed, std::nullopt};
  } catch (const ConfigError& err) {
    farm.stop();
    return {0, std::string(err.what())};
  }
}

}  // namespace bagua::experiments
