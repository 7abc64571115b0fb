// Reduced convergence runs for the convergence tests: one point of an experiment config, run on the
// simulator through the experiments library, with every rank's weights recorded at the start of its
// last iteration and at the end, and the arithmetic to judge them (losses, gaps, consensus distance,
// the rank-weighted objective of a non-IID partition, one-step updates recomputed from the data).
#pragma once

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <numeric>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "core/algorithms/async_model_average.h"
#include "core/check.h"
#include "core/models/synthetic.h"
#include "core/trainer/trainer.h"
#include "experiments/backend.h"
#include "experiments/components.h"
#include "experiments/config.h"
#include "experiments/json_util.h"
#include "experiments/runner.h"
#include "tests/core/algorithms/forwarding_algorithm.h"

namespace bagua::convergence {

using Weights = std::vector<double>;

// What a run left: the weights of every rank and the workload they were trained on.
struct Outcome {
  int world_size = 0;
  double lr = 0;  // the optimizer's learning rate
  int64_t iterations = 0;
  std::vector<Weights> before_last;    // per rank: the weights at the start of the last iteration
  std::vector<Weights> final_weights;  // per rank: the weights after finish()
  std::vector<TrainResult> results;    // per rank
  std::vector<int64_t> async_rounds;   // per rank (async_model_average only, else 0)
  std::shared_ptr<const Workload> workload;

  const SyntheticWorkload& synthetic() const;
  const Objective& objective() const { return synthetic().objective(); }
  const Partition& partition() const { return synthetic().partition(); }

  // The full-data loss of `w` (double precision), and its gap to the closed-form optimum (linear
  // regression only).
  double loss(const Weights& w) const;
  double gap(const Weights& w) const;
  // The mean over ranks of the full-data loss of each rank's final weights (what the suite reports as
  // final_full_loss) and its gap.
  double mean_loss() const;
  double mean_gap() const;
  // The average of the ranks' final weights and its gap.
  Weights average() const;
  // sqrt(mean over ranks of |x_r - average|^2): how far the ranks disagree.
  double consensus_distance() const;
  // The largest |x_r - x_0| / |x_0| over ranks r.
  double spread() const;

  // The gradient of rank r's batch loss at `w` for iteration `step` (double precision).
  Weights batch_gradient(int rank, int64_t step, const Weights& w) const;
};

// The objective that data-parallel SGD minimizes on a partition whose shards differ in size: every
// rank's shard loss weighs 1 / P, F(w) = (1/P) sum_r f_r(w), f_r the mean loss over shard r. For linear
// regression its minimizer solves sum_r (1/n_r) X_r X_r^T w = sum_r (1/n_r) X_r y_r.
struct RankWeighted {
  explicit RankWeighted(const Outcome& o);
  double loss(const Weights& w) const;
  double gap(const Weights& w) const { return loss(w) - optimal_loss; }
  Eigen::VectorXd optimum;
  double optimal_loss = 0;

 private:
  const Outcome& o_;
};

// Builds a config: 2 hosts x 4 devices of the paper's testbed network (inline), `workload` and
// `algorithm` as JSON text, plain SGD with `lr` unless `optimizer` (JSON text) is given.
std::string config_text(const std::string& workload, const std::string& algorithm, double lr,
                        int64_t iterations, int hosts = 2, int devices_per_host = 4,
                        const std::string& optimizer = "", const std::string& device = "");

// Loads the config (one point) and runs it on the simulator.
Outcome run(const std::string& config_text);

double relative_distance(const Weights& a, const Weights& b);
double norm(const Weights& a);

// ---- definitions -----------------------------------------------------------------------------------

namespace detail {

using experiments::Components;

inline const Components& components() {
  static const std::unique_ptr<Components> c = experiments::make_components();
  return *c;
}

inline Weights to_weights(const BufferView& w) {
  const std::span<float> f = w.as<float>();
  return Weights(f.begin(), f.end());
}

// Forwards every hook to the algorithm under test and records the weights at the start of the last
// iteration and after finish().
class Recorder final : public testing::ForwardingAlgorithm {
 public:
  Recorder(std::unique_ptr<Algorithm> inner, int64_t iterations, Weights& before_last, Weights& final)
      : ForwardingAlgorithm(*inner),
        owned_(std::move(inner)),
        last_(iterations - 1),
        before_last_(before_last),
        final_(final) {}

  void before_forward(TrainState& s) override {
    if (s.step == last_) read_weights(s, [&] { before_last_ = to_weights(s.weights); });
    ForwardingAlgorithm::before_forward(s);
  }
  void finish(TrainState& s) override {
    ForwardingAlgorithm::finish(s);
    final_ = to_weights(s.weights);
  }

 private:
  std::unique_ptr<Algorithm> owned_;
  int64_t last_;
  Weights& before_last_;
  Weights& final_;
};

}  // namespace detail

inline const SyntheticWorkload& Outcome::synthetic() const {
  const auto* s = dynamic_cast<const SyntheticWorkload*>(workload.get());
  BAGUA_CHECK(s != nullptr, "convergence tests need a synthetic workload");
  return *s;
}

inline double Outcome::loss(const Weights& w) const {
  std::vector<int64_t> all(static_cast<size_t>(objective().dataset().samples()));
  std::iota(all.begin(), all.end(), int64_t{0});
  return objective().loss(std::span<const double>(w), std::span<double>(), all, nullptr);
}

inline double Outcome::gap(const Weights& w) const {
  return loss(w) - objective().optimal_loss();
}

inline double Outcome::mean_loss() const {
  double sum = 0;
  for (const Weights& w : final_weights)
    sum += loss(w);
  return sum / static_cast<double>(final_weights.size());
}

inline double Outcome::mean_gap() const {
  return mean_loss() - objective().optimal_loss();
}

inline Weights Outcome::average() const {
  Weights avg(final_weights.at(0).size(), 0.0);
  for (const Weights& w : final_weights)
    for (size_t i = 0; i < w.size(); ++i)
      avg[i] += w[i];
  for (double& x : avg)
    x /= static_cast<double>(final_weights.size());
  return avg;
}

inline double Outcome::consensus_distance() const {
  const Weights avg = average();
  double sum = 0;
  for (const Weights& w : final_weights)
    for (size_t i = 0; i < w.size(); ++i)
      sum += (w[i] - avg[i]) * (w[i] - avg[i]);
  return std::sqrt(sum / static_cast<double>(final_weights.size()));
}

inline double Outcome::spread() const {
  double worst = 0;
  for (const Weights& w : final_weights)
    worst = std::max(worst, relative_distance(w, final_weights.at(0)));
  return worst;
}

inline Weights Outcome::batch_gradient(int rank, int64_t step, const Weights& w) const {
  std::vector<int64_t> batch;
  partition().batch(rank, step, batch);
  Weights g(w.size(), 0.0);
  objective().loss(std::span<const double>(w), std::span<double>(g), batch, nullptr);
  return g;
}

inline RankWeighted::RankWeighted(const Outcome& o) : o_(o) {
  const auto& objective = dynamic_cast<const LinearRegression&>(o.objective());
  const Dataset& data = objective.dataset();
  const Eigen::Index d = data.features();
  Eigen::MatrixXd gram = Eigen::MatrixXd::Zero(d, d);
  Eigen::VectorXd rhs = Eigen::VectorXd::Zero(d);
  for (int r = 0; r < o.world_size; ++r) {
    const std::vector<int64_t>& shard = o.partition().shard(r);
    BAGUA_CHECK(!shard.empty(), "RankWeighted needs a partition with shards (dirichlet)");
    const double weight = 1.0 / static_cast<double>(shard.size());
    for (int64_t i : shard) {
      const Eigen::VectorXd x = data.x.col(i).cast<double>();
      gram += weight * x * x.transpose();
      rhs += weight * x * static_cast<double>(data.y(i));
    }
  }
  optimum = gram.llt().solve(rhs);
  optimal_loss = loss(Weights(optimum.data(), optimum.data() + optimum.size()));
}

inline double RankWeighted::loss(const Weights& w) const {
  double sum = 0;
  for (int r = 0; r < o_.world_size; ++r)
    sum += o_.objective().loss(std::span<const double>(w), std::span<double>(), o_.partition().shard(r),
                               nullptr);
  return sum / static_cast<double>(o_.world_size);
}

inline std::string config_text(const std::string& workload, const std::string& algorithm, double lr,
                               int64_t iterations, int hosts, int devices_per_host,
                               const std::string& optimizer, const std::string& device) {
  std::ostringstream s;
  s << R"({"name": "convergence_test", "runtime": "sim", "seed": 1,)"
    // The paper's testbed network (configs/clusters/paper.json), inline.
    << R"("cluster": {"hosts": )" << hosts << R"(, "devices_per_host": )" << devices_per_host
    << R"(, "intra_host": {"bandwidth": "150 GB/s", "latency": "1 us"},)"
    << R"( "nic": {"bandwidth": "100 Gbps", "latency": "5 us"})"
    << (device.empty() ? "" : ", \"device\": " + device) << "},"
    << R"("workload": )" << workload << ","
    << R"("algorithm": )" << algorithm << ","
    << R"("optimizer": )"
    << (optimizer.empty() ? R"({"name": "sgd", "lr": )" + std::to_string(lr) + "}" : optimizer) << ","
    << R"("schedule": {"iterations": )" << iterations << "}}";
  return s.str();
}

inline Outcome run(const std::string& text) {
  const experiments::Components& c = detail::components();
  const experiments::Experiment e =
      experiments::load_experiment_json(experiments::parse_json(text, "convergence test"), ".", {}, c);
  BAGUA_CHECK_EQ(e.points.size(), size_t{1}, "points of a convergence test config");
  const experiments::PointConfig& point = e.points[0];
  experiments::Backends backends(c.runtimes, nullptr, nullptr);
  const int world = point.world_size();

  Outcome o;
  o.world_size = world;
  o.iterations = point.schedule.iterations;
  o.lr = point.optimizer.params.has("lr") ? point.optimizer.params.get_double("lr") : 0.0;
  o.workload = experiments::make_workload(point, c, world);
  o.before_last.resize(static_cast<size_t>(world));
  o.final_weights.resize(static_cast<size_t>(world));
  o.results.resize(static_cast<size_t>(world));
  o.async_rounds.assign(static_cast<size_t>(world), 0);

  TrainOptions options;
  options.iterations = point.schedule.iterations;
  options.eval_interval = point.schedule.eval_interval;
  options.bucket_bytes = point.schedule.bucket_size;
  options.overlap = point.schedule.overlap;

  backends.run(
      point,
      [&](RankContext& ctx) {
        const auto r = static_cast<size_t>(ctx.transport().rank());
        std::unique_ptr<Model> model = o.workload->make_model(static_cast<int>(r));
        const BufferView like(nullptr, 0, DType::kF32, &ctx.space());
        std::unique_ptr<Optimizer> optimizer = c.optimizers.create(
            point.optimizer.name, point.optimizer.params, model->num_params(), like);
        const AlgorithmDeps deps{c.compressors, c.optimizers};
        detail::Recorder recorder(
            c.algorithms.create(point.algorithm.name, point.algorithm.params, deps), options.iterations,
            o.before_last[r], o.final_weights[r]);
        o.results[r] = train(ctx, *model, *optimizer, recorder, options);
        if (auto* a = dynamic_cast<AsyncModelAverage*>(&recorder.inner()))
          o.async_rounds[r] = a->rounds();
      },
      nullptr);
  return o;
}

inline double norm(const Weights& a) {
  double s = 0;
  for (double x : a)
    s += x * x;
  return std::sqrt(s);
}

inline double relative_distance(const Weights& a, const Weights& b) {
  BAGUA_CHECK_EQ(a.size(), b.size(), "weight counts");
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i)
    s += (a[i] - b[i]) * (a[i] - b[i]);
  return std::sqrt(s) / std::max(norm(b), 1e-300);
}

}  // namespace bagua::convergence
