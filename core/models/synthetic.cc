#include "core/models/synthetic.h"

#include <cmath>
#include <limits>
#include <numeric>

#include "core/check.h"
#include "core/models/random.h"
#include "core/models/synthetic_detail.h"

namespace bagua {

namespace detail {

std::vector<Layer> split_layers(const std::string& name, size_t count, int parts, const Work& forward,
                                const Work& backward) {
  BAGUA_CHECK(parts > 0 && static_cast<size_t>(parts) <= count,
              "split of " + std::to_string(count) + " parameters into " + std::to_string(parts));
  std::vector<Layer> layers;
  size_t offset = 0;
  const size_t base = count / static_cast<size_t>(parts);
  const size_t extra = count % static_cast<size_t>(parts);
  for (int p = 0; p < parts; ++p) {
    const size_t n = base + (static_cast<size_t>(p) < extra ? 1 : 0);
    const double share = static_cast<double>(n) / static_cast<double>(count);
    auto part_of = [&](const Work& w) {
      return Work{
          w.flops * share,
          Bytes(static_cast<int64_t>(std::llround(static_cast<double>(w.memory.count()) * share))),
          Time::zero()};
    };
    layers.push_back(
        Layer{name + "." + std::to_string(p), offset, n, part_of(forward), part_of(backward)});
    offset += n;
  }
  return layers;
}

void check_host_buffer(const std::string& workload, const BufferView& v, size_t count,
                       const char* what) {
  if (v.count() != count)
    throw ConfigError("workload '" + workload + "': " + what + " buffer has " +
                      std::to_string(v.count()) + " elements, expected " + std::to_string(count));
  if (!v.is_host())
    throw ConfigError("workload '" + workload + "': synthetic models compute in host memory, but the " +
                      what + " buffer is in " + to_string(v.memory()) + " memory");
  if (v.dtype() != DType::kF32 && v.dtype() != DType::kF64)
    throw ConfigError("workload '" + workload + "': " + what + " buffer is " + to_string(v.dtype()) +
                      ", expected f32 or f64");
}

}  // namespace detail

double Objective::optimal_loss() const {
  return std::numeric_limits<double>::quiet_NaN();
}

double Objective::accuracy(std::span<const float>, std::span<const int64_t>) const {
  return std::numeric_limits<double>::quiet_NaN();
}

namespace {

constexpr uint64_t kStreamInit = 7;  // derive_seed stream of the initial weights

// One rank's model: the shared objective, the shared partition, this rank.
class SyntheticModel final : public Model {
 public:
  SyntheticModel(std::shared_ptr<const Objective> objective, std::shared_ptr<const Partition> partition,
                 std::shared_ptr<const std::vector<Layer>> layers, int rank, uint64_t seed)
      : objective_(std::move(objective)),
        partition_(std::move(partition)),
        layers_(std::move(layers)),
        rank_(rank),
        seed_(seed) {}

  const std::vector<Layer>& layers() const override { return *layers_; }
  size_t num_params() const override { return objective_->num_params(); }
  bool materialized() const override { return true; }

  void init_weights(const BufferView& w) const override {
    if (w.is_meta()) {
      BAGUA_CHECK_EQ(w.count(), num_params(), "init_weights: weight count");
      return;
    }
    detail::check_host_buffer(objective_->name(), w, num_params(), "weight");
    const uint64_t seed = derive_seed(seed_, kStreamInit);
    if (w.dtype() == DType::kF32)
      objective_->init_weights(w.as<float>(), seed);
    else
      objective_->init_weights(w.as<double>(), seed);
  }

  double forward_backward(const BufferView& w, const BufferView& g, int64_t step,
                          const std::function<void(int layer)>& ready) override {
    if (w.is_meta() || g.is_meta()) {
      BAGUA_CHECK_EQ(w.count(), num_params(), "forward_backward: weight count");
      BAGUA_CHECK_EQ(g.count(), num_params(), "forward_backward: gradient count");
      all_layers_ready(static_cast<int>(layers_->size()), ready);
      return std::numeric_limits<double>::quiet_NaN();
    }
    detail::check_host_buffer(objective_->name(), w, num_params(), "weight");
    detail::check_host_buffer(objective_->name(), g, num_params(), "gradient");
    if (w.dtype() != g.dtype())
      throw ConfigError("workload '" + objective_->name() + "': weights are " + to_string(w.dtype()) +
                        " but gradients " + to_string(g.dtype()));
    partition_->batch(rank_, step, batch_);
    if (w.dtype() == DType::kF32)
      return objective_->loss(std::span<const float>(w.as<float>()), g.as<float>(), batch_, ready);
    return objective_->loss(std::span<const double>(w.as<double>()), g.as<double>(), batch_, ready);
  }

  double full_loss(const BufferView& w) const override {
    if (w.is_meta()) return std::numeric_limits<double>::quiet_NaN();
    detail::check_host_buffer(objective_->name(), w, num_params(), "weight");
    std::vector<int64_t> all(static_cast<size_t>(objective_->dataset().samples()));
    std::iota(all.begin(), all.end(), int64_t{0});
    // Always evaluated in double precision, so that suboptimality gaps are exact to ~1e-15.
    std::vector<double> wd(num_params());
    if (w.dtype() == DType::kF32) {
      const std::span<float> wf = w.as<float>();
      std::copy(wf.begin(), wf.end(), wd.begin());
    } else {
      const std::span<double> w64 = w.as<double>();
      std::copy(w64.begin(), w64.end(), wd.begin());
    }
    return objective_->loss(std::span<const double>(wd), std::span<double>(), all, nullptr);
  }

  double optimal_loss() const override { return objective_->optimal_loss(); }

 private:
  std::shared_ptr<const Objective> objective_;
  std::shared_ptr<const Partition> partition_;
  std::shared_ptr<const std::vector<Layer>> layers_;
  int rank_;
  uint64_t seed_;
  std::vector<int64_t> batch_;  // workspace: this step's sample indices
};

void check_setup(const std::string& name, const WorkloadSetup& setup) {
  if (setup.world_size < 1)
    throw ConfigError("workload '" + name + "': world size must be at least 1, got " +
                      std::to_string(setup.world_size));
  if (setup.batch_size < 1)
    throw ConfigError("workload '" + name + "': batch_size must be at least 1, got " +
                      std::to_string(setup.batch_size));
}

int checked_layers(const std::string& name, const Params& params, size_t num_params) {
  const int64_t layers = params.get_int("layers");
  if (layers < 1 || static_cast<size_t>(layers) > num_params)
    throw ConfigError(name + ".layers: must be between 1 and the parameter count (" +
                      std::to_string(num_params) + "), got " + std::to_string(layers));
  return static_cast<int>(layers);
}

}  // namespace

Partition make_partition(const std::string& name, const Params& params, const Dataset& data,
                         const WorkloadSetup& setup) {
  const PartitionKind kind = parse_partition_kind(params.get_string("partition"), name + ".partition");
  if (kind == PartitionKind::kIid)
    return Partition::iid(data.samples(), setup.world_size, setup.batch_size);
  return Partition::dirichlet(data.labels, data.classes, setup.world_size, setup.batch_size,
                              params.get_double("alpha"), setup.seed);
}

ParamSchema& add_partition_params(ParamSchema& s) {
  s.add_string("partition", "iid", "how samples are dealt to ranks: iid | dirichlet (label-skewed)",
               {"iid", "dirichlet"});
  // 0.5: the concentration of the heterogeneous partitions of Wang et al. 2020, "Federated Learning
  // with Matched Averaging" (ICLR, experiments), after Hsu, Qi & Brown 2019 (arXiv:1909.06335).
  s.add_double("alpha", 0.5, "Dirichlet concentration of the dirichlet partition (small: skewed)", 0.0,
               std::nullopt, /*min_exclusive=*/true);
  return s;
}

SyntheticWorkload::SyntheticWorkload(std::shared_ptr<const Objective> objective, Partition partition,
                                     uint64_t seed)
    : objective_(std::move(objective)),
      partition_(std::make_shared<const Partition>(std::move(partition))),
      layers_(std::make_shared<const std::vector<Layer>>(objective_->layers(partition_->batch_size()))),
      seed_(seed) {
  BAGUA_CHECK_EQ(partition_->samples(), objective_->dataset().samples(),
                 "partition and data set sizes");
}

std::unique_ptr<Model> SyntheticWorkload::make_model(int rank) const {
  if (rank < 0 || rank >= partition_->world_size())
    throw ConfigError("workload '" + name() + "': rank " + std::to_string(rank) +
                      " outside a world of " + std::to_string(partition_->world_size()));
  return std::make_unique<SyntheticModel>(objective_, partition_, layers_, rank, seed_);
}

// Default sizes of every synthetic workload are a design choice, not a measurement: small enough that
// 100 iterations at 8 ranks x 32 samples take well under a second of real time, large enough that the
// models have a few thousand parameters to bucket and compress.

ParamSchema linear_regression_schema() {
  ParamSchema s;
  s.add_int("features", 64, "input features = parameters", 1)
      .add_int("samples", 8192, "training samples (all ranks together)", 1)
      .add_double("noise", 0.1, "standard deviation of the target noise", 0.0)
      .add_int("layers", 4, "equal contiguous layers the parameter vector is split into", 1)
      .add_int("classes", 10,
               "quantile buckets of the target, used as labels by the dirichlet partition", 1);
  return add_partition_params(s);
}

ParamSchema logistic_regression_schema() {
  ParamSchema s;
  s.add_int("features", 32, "input features", 1)
      .add_int("samples", 8192, "training samples (all ranks together)", 1)
      .add_int("classes", 2, "classes: 2 = binary (sigmoid), more = multinomial (softmax)", 2)
      .add_double("separation", 2.0, "distance scale of the class centres from the origin", 0.0)
      .add_int("clusters_per_class", 1, "Gaussian clusters per class", 1)
      .add_int("layers", 4, "equal contiguous layers the parameter vector is split into", 1);
  return add_partition_params(s);
}

ParamSchema mlp_schema() {
  ParamSchema s;
  s.add_int("features", 32, "input features", 1)
      .add_int("samples", 8192, "training samples (all ranks together)", 1)
      .add_int("classes", 10, "classes (softmax output)", 2)
      .add_int("hidden", 64, "width of every hidden layer", 1)
      .add_int("hidden_layers", 2, "hidden tanh layers", 1)
      .add_double("separation", 3.0, "distance scale of the cluster centres from the origin", 0.0)
      .add_int("clusters_per_class", 2, "Gaussian clusters per class (2+: not linearly separable)", 1);
  return add_partition_params(s);
}

std::unique_ptr<SyntheticWorkload> make_linear_regression(const Params& params,
                                                          const WorkloadSetup& setup) {
  const std::string name = "linear_regression";
  check_setup(name, setup);
  const int64_t features = params.get_int("features");
  const int64_t samples = params.get_int("samples");
  if (samples < features)
    throw ConfigError(name + ".samples: need at least as many samples as features (" +
                      std::to_string(features) + ") for a unique optimum, got " +
                      std::to_string(samples));
  auto data = std::make_shared<const Dataset>(
      make_regression_data(samples, features, params.get_double("noise"),
                           static_cast<int>(params.get_int("classes")), setup.seed));
  const int layers = checked_layers(name, params, static_cast<size_t>(features));
  auto objective = std::make_shared<const LinearRegression>(data, layers);
  return std::make_unique<SyntheticWorkload>(objective, make_partition(name, params, *data, setup),
                                             setup.seed);
}

std::unique_ptr<SyntheticWorkload> make_logistic_regression(const Params& params,
                                                            const WorkloadSetup& setup) {
  const std::string name = "logistic_regression";
  check_setup(name, setup);
  auto data = std::make_shared<const Dataset>(
      make_gaussian_mixture(params.get_int("samples"), params.get_int("features"),
                            static_cast<int>(params.get_int("classes")),
                            static_cast<int>(params.get_int("clusters_per_class")),
                            params.get_double("separation"), setup.seed));
  const int layers =
      checked_layers(name, params, LogisticRegression::param_count(data->features(), data->classes));
  auto objective = std::make_shared<const LogisticRegression>(data, layers);
  return std::make_unique<SyntheticWorkload>(objective, make_partition(name, params, *data, setup),
                                             setup.seed);
}

std::unique_ptr<SyntheticWorkload> make_mlp(const Params& params, const WorkloadSetup& setup) {
  const std::string name = "mlp";
  check_setup(name, setup);
  auto data = std::make_shared<const Dataset>(
      make_gaussian_mixture(params.get_int("samples"), params.get_int("features"),
                            static_cast<int>(params.get_int("classes")),
                            static_cast<int>(params.get_int("clusters_per_class")),
                            params.get_double("separation"), setup.seed));
  auto objective = std::make_shared<const Mlp>(data, params.get_int("hidden"),
                                               static_cast<int>(params.get_int("hidden_layers")));
  return std::make_unique<SyntheticWorkload>(objective, make_partition(name, params, *data, setup),
                                             setup.seed);
}

}  // namespace bagua
