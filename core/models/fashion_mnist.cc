#include "core/models/fashion_mnist.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>

#include "core/check.h"
#include "core/models/idx.h"
#include "core/models/random.h"
#include "core/models/synthetic.h"
#include "core/models/synthetic_detail.h"

namespace bagua {

namespace {

constexpr int kClasses = 10;      // Xiao et al. 2017, Table 1
constexpr int64_t kPixels = 784;  // 28 x 28
constexpr int64_t kTrainImages = 60000;
constexpr int64_t kTestImages = 10000;
constexpr uint64_t kInitStream = 7;  // derive_seed stream of the initial weights (as synthetic.cc)

Dataset read_split(const std::string& dir, const std::string& prefix, int64_t expected) {
  const std::string images_path = dir + "/" + prefix + "-images-idx3-ubyte.gz";
  const std::string labels_path = dir + "/" + prefix + "-labels-idx1-ubyte.gz";
  const IdxArray images = read_idx(images_path, 3);
  const IdxArray labels = read_idx(labels_path, 1);
  if (images.dims[0] != expected || images.dims[1] * images.dims[2] != kPixels)
    throw ConfigError("IDX file '" + images_path + "': " + std::to_string(images.dims[0]) +
                      " images of " + std::to_string(images.dims[1]) + " x " +
                      std::to_string(images.dims[2]) + ", expected " + std::to_string(expected) +
                      " of 28 x 28");
  if (labels.dims[0] != expected)
    throw ConfigError("IDX file '" + labels_path + "': " + std::to_string(labels.dims[0]) +
                      " labels, expected " + std::to_string(expected));
  Dataset d;
  d.classes = kClasses;
  d.x.resize(kPixels, expected);
  d.labels.resize(static_cast<size_t>(expected));
  for (int64_t i = 0; i < expected; ++i) {
    const uint8_t label = labels.data[static_cast<size_t>(i)];
    if (label >= kClasses)
      throw ConfigError("IDX file '" + labels_path + "': label " + std::to_string(label) +
                        " of image " + std::to_string(i) + " is not a class in [0, 10)");
    d.labels[static_cast<size_t>(i)] = label;
    for (int64_t j = 0; j < kPixels; ++j)
      d.x(j, i) = static_cast<float>(images.data[static_cast<size_t>(i * kPixels + j)]);
  }
  return d;
}

// StandardScaler: x := (x - mean) / std per pixel, mean and std (population) of the train set, std 0
// replaced by 1 (sklearn's handling of constant features).
void standardize(FashionMnistData& data) {
  const Eigen::MatrixXf& train = data.train.x;
  const double n = static_cast<double>(train.cols());
  Eigen::VectorXd sum = Eigen::VectorXd::Zero(kPixels);
  for (Eigen::Index i = 0; i < train.cols(); ++i)
    sum += train.col(i).cast<double>();
  const Eigen::VectorXd mean = sum / n;
  Eigen::VectorXd squares = Eigen::VectorXd::Zero(kPixels);
  for (Eigen::Index i = 0; i < train.cols(); ++i)
    squares += (train.col(i).cast<double>() - mean).array().square().matrix();
  const Eigen::VectorXd var = squares / n;
  Eigen::VectorXf scale(kPixels);
  for (int64_t j = 0; j < kPixels; ++j)
    scale(j) = static_cast<float>(var(j) > 0 ? 1.0 / std::sqrt(var(j)) : 1.0);
  const Eigen::VectorXf mean_f = mean.cast<float>();
  for (Dataset* d : {&data.train, &data.test})
    d->x = ((d->x.colwise() - mean_f).array().colwise() * scale.array()).matrix();
}

// Remembers the evaluations of the last weights evaluated (kRemembered of them), compared element by
// element.
class Evaluator {
 public:
  struct Result {
    double train_loss;
    double test_accuracy;
  };
  Evaluator(std::shared_ptr<const Objective> train, std::shared_ptr<const Objective> test,
            int64_t eval_samples)
      : train_(std::move(train)), test_(std::move(test)) {
    train_subset_.resize(static_cast<size_t>(eval_samples));
    std::iota(train_subset_.begin(), train_subset_.end(), int64_t{0});
    test_all_.resize(static_cast<size_t>(test_->dataset().samples()));
    std::iota(test_all_.begin(), test_all_.end(), int64_t{0});
  }

  Result evaluate(const BufferView& w) const {
    std::vector<float> weights(w.count());
    if (w.dtype() == DType::kF32) {
      const std::span<float> f = w.as<float>();
      std::copy(f.begin(), f.end(), weights.begin());
    } else {
      const std::span<double> d = w.as<double>();
      std::transform(d.begin(), d.end(), weights.begin(),
                     [](double x) { return static_cast<float>(x); });
    }
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [seen, result] : remembered_)
      if (seen == weights) return result;
    const std::span<const float> view(weights);
    const Result result{train_->loss(view, std::span<float>(), train_subset_, nullptr),
                        test_->accuracy(view, test_all_)};
    remembered_.emplace_back(std::move(weights), result);
    if (remembered_.size() > kRemembered) remembered_.pop_front();
    return result;
  }

 private:
  static constexpr size_t kRemembered = 4;
  std::shared_ptr<const Objective> train_, test_;
  std::vector<int64_t> train_subset_, test_all_;
  mutable std::mutex mutex_;
  mutable std::deque<std::pair<std::vector<float>, Result>> remembered_;
};

class FashionModel final : public Model {
 public:
  FashionModel(std::shared_ptr<const Objective> objective, std::shared_ptr<const Partition> partition,
               std::shared_ptr<const std::vector<Layer>> layers,
               std::shared_ptr<const Evaluator> evaluator, int rank, uint64_t seed)
      : objective_(std::move(objective)),
        partition_(std::move(partition)),
        layers_(std::move(layers)),
        evaluator_(std::move(evaluator)),
        rank_(rank),
        seed_(seed) {}

  const std::vector<Layer>& layers() const override { return *layers_; }
  size_t num_params() const override { return objective_->num_params(); }
  bool materialized() const override { return true; }

  void init_weights(const BufferView& w) const override {
    if (w.is_meta()) return;
    detail::check_host_buffer(kName, w, num_params(), "weight");
    const uint64_t seed = derive_seed(seed_, kInitStream);
    if (w.dtype() == DType::kF32)
      objective_->init_weights(w.as<float>(), seed);
    else
      objective_->init_weights(w.as<double>(), seed);
  }

  double forward_backward(const BufferView& w, const BufferView& g, int64_t step,
                          const std::function<void(int layer)>& ready) override {
    if (w.is_meta() || g.is_meta()) {
      all_layers_ready(static_cast<int>(layers_->size()), ready);
      return std::numeric_limits<double>::quiet_NaN();
    }
    detail::check_host_buffer(kName, w, num_params(), "weight");
    detail::check_host_buffer(kName, g, num_params(), "gradient");
    if (w.dtype() != g.dtype())
      throw ConfigError(std::string("workload '") + kName + "': weights are " + to_string(w.dtype()) +
                        " but gradients " + to_string(g.dtype()));
    partition_->batch(rank_, step, batch_);
    if (w.dtype() == DType::kF32)
      return objective_->loss(std::span<const float>(w.as<float>()), g.as<float>(), batch_, ready);
    return objective_->loss(std::span<const double>(w.as<double>()), g.as<double>(), batch_, ready);
  }

  double full_loss(const BufferView& w) const override {
    if (w.is_meta()) return std::numeric_limits<double>::quiet_NaN();
    detail::check_host_buffer(kName, w, num_params(), "weight");
    return evaluator_->evaluate(w).train_loss;
  }

  double test_accuracy(const BufferView& w) const override {
    if (w.is_meta()) return std::numeric_limits<double>::quiet_NaN();
    detail::check_host_buffer(kName, w, num_params(), "weight");
    return evaluator_->evaluate(w).test_accuracy;
  }

  bool has_test_set() const override { return true; }

 private:
  static constexpr const char* kName = "fashion_mnist";
  std::shared_ptr<const Objective> objective_;
  std::shared_ptr<const Partition> partition_;
  std::shared_ptr<const std::vector<Layer>> layers_;
  std::shared_ptr<const Evaluator> evaluator_;
  int rank_;
  uint64_t seed_;
  std::vector<int64_t> batch_;  // workspace: this step's sample indices
};

class FashionWorkload final : public Workload {
 public:
  FashionWorkload(std::shared_ptr<const FashionMnistData> data, std::shared_ptr<const Objective> train,
                  std::shared_ptr<const Objective> test, Partition partition, int64_t eval_samples,
                  uint64_t seed)
      : data_(std::move(data)),
        objective_(train),
        partition_(std::make_shared<const Partition>(std::move(partition))),
        layers_(std::make_shared<const std::vector<Layer>>(train->layers(partition_->batch_size()))),
        evaluator_(std::make_shared<const Evaluator>(std::move(train), std::move(test), eval_samples)),
        seed_(seed) {}
  std::string name() const override { return "fashion_mnist"; }
  std::unique_ptr<Model> make_model(int rank) const override {
    if (rank < 0 || rank >= partition_->world_size())
      throw ConfigError("workload 'fashion_mnist': rank " + std::to_string(rank) +
                        " outside a world of " + std::to_string(partition_->world_size()));
    return std::make_unique<FashionModel>(objective_, partition_, layers_, evaluator_, rank, seed_);
  }

 private:
  std::shared_ptr<const FashionMnistData> data_;  // keeps the data sets the objectives point into
  std::shared_ptr<const Objective> objective_;
  std::shared_ptr<const Partition> partition_;
  std::shared_ptr<const std::vector<Layer>> layers_;
  std::shared_ptr<const Evaluator> evaluator_;
  uint64_t seed_;
};

// A non-owning shared_ptr to a data set that `owner` keeps alive.
std::shared_ptr<const Dataset> alias(const std::shared_ptr<const FashionMnistData>& owner,
                                     const Dataset& d) {
  return std::shared_ptr<const Dataset>(owner, &d);
}

}  // namespace

std::shared_ptr<const FashionMnistData> load_fashion_mnist(const std::string& dir) {
  static std::mutex mutex;
  static std::map<std::string, std::weak_ptr<const FashionMnistData>> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto held = loaded[dir].lock()) return held;
  auto data = std::make_shared<FashionMnistData>();
  data->train = read_split(dir, "train", kTrainImages);
  data->test = read_split(dir, "t10k", kTestImages);
  standardize(*data);
  std::shared_ptr<const FashionMnistData> result = std::move(data);
  loaded[dir] = result;
  return result;
}

ParamSchema fashion_mnist_schema() {
  ParamSchema s;
  // Debian's dataset-fashion-mnist installs the four files there (dpkg -L dataset-fashion-mnist).
  s.add_string("data_dir", "/usr/share/datasets/fashion-mnist",
               "folder of the four gzip IDX files of Fashion-MNIST");
  s.add_string("model", "softmax", "softmax (multinomial logistic regression) | mlp",
               {"softmax", "mlp"});
  // 100 tanh units in one hidden layer: the MLPClassifier of the data set's benchmark
  // (benchmark/baselines.json: hidden_layer_sizes [100] with activation tanh or relu; Xiao et al. 2017,
  // Table 3).
  s.add_int("hidden", 100, "mlp: width of every hidden layer", 1)
      .add_int("hidden_layers", 1, "mlp: hidden tanh layers", 1)
      .add_int("layers", 1, "softmax: equal contiguous layers the parameter vector is split into", 1)
      // 10,000: as many as the test set, so that train loss and test accuracy cost alike.
      .add_int("eval_samples", 10000, "train images (the first ones) the reported train loss averages",
               1, kTrainImages);
  // The synthetic workloads' partitions (core/models/synthetic.h), alpha 0.5 by default.
  return add_partition_params(s);
}

std::unique_ptr<Workload> make_fashion_mnist(const Params& params, const WorkloadSetup& setup) {
  if (setup.world_size < 1 || setup.batch_size < 1)
    throw ConfigError("workload 'fashion_mnist': world size and batch_size must be at least 1, got " +
                      std::to_string(setup.world_size) + " and " + std::to_string(setup.batch_size));
  const bool softmax = params.get_string("model") == "softmax";
  const int64_t layers = params.get_int("layers");
  const size_t count = LogisticRegression::param_count(kPixels, kClasses);
  if (softmax && static_cast<size_t>(layers) > count)
    throw ConfigError("fashion_mnist.layers: must be between 1 and the parameter count (" +
                      std::to_string(count) + "), got " + std::to_string(layers));
  std::shared_ptr<const FashionMnistData> data = load_fashion_mnist(params.get_string("data_dir"));
  const std::shared_ptr<const Dataset> train = alias(data, data->train);
  const std::shared_ptr<const Dataset> test = alias(data, data->test);
  std::shared_ptr<const Objective> train_objective, test_objective;
  if (softmax) {
    train_objective = std::make_shared<const LogisticRegression>(train, static_cast<int>(layers));
    test_objective = std::make_shared<const LogisticRegression>(test, static_cast<int>(layers));
  } else {
    const int64_t hidden = params.get_int("hidden");
    const int hidden_layers = static_cast<int>(params.get_int("hidden_layers"));
    train_objective = std::make_shared<const Mlp>(train, hidden, hidden_layers);
    test_objective = std::make_shared<const Mlp>(test, hidden, hidden_layers);
  }
  Partition partition = make_partition("fashion_mnist", params, data->train, setup);
  return std::make_unique<FashionWorkload>(std::move(data), std::move(train_objective),
                                           std::move(test_objective), std::move(partition),
                                           params.get_int("eval_samples"), setup.seed);
}

}  // namespace bagua
