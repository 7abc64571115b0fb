// Synthetic workloads with real arithmetic (Eigen): linear regression, logistic regression, an MLP.
//
// Terms:
//   objective   the model's mathematics over the shared data set: its parameter layout and layers, its
//               initial weights, and the mean loss (and gradient) over any list of samples. One per
//               workload, shared read-only by every rank's model.
//   batch       the samples a rank uses at a step, given by the partition (core/models/dataset.h).
//   model       one rank's view: objective + partition + rank (core/models/model.h).
//
// Arithmetic runs in the precision of the buffers it is given: float32 (the default for training) or
// float64 (used by tests to check gradients against finite differences). Buffers must be host memory;
// on meta buffers a synthetic model does no arithmetic, still calls ready() for every layer in backward
// order and returns a NaN loss, so the simulator can time it at any scale.
//
// Modelled cost of a layer (Layer::forward / backward): the FLOPs of its real computation for one
// rank's batch, 2 per multiply-accumulate (a dense layer's forward = 2 b in out), backward = 2 x
// forward (one product for the input gradient, one for the weight gradient; Kaplan et al. 2020,
// "Scaling Laws for Neural Language Models", arXiv:2001.08361, Sec. 2.1), except a first layer, whose
// input needs no gradient (1 x forward); and the float32 bytes its computation reads and writes
// (parameters, the batch's activations, gradients).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/models/dataset.h"
#include "core/models/model.h"

namespace bagua {

using ReadyFn = std::function<void(int layer)>;

class Objective {
 public:
  virtual ~Objective() = default;
  virtual std::string name() const = 0;
  virtual size_t num_params() const = 0;
  // Layers with the modelled cost of a batch of `batch` samples.
  virtual std::vector<Layer> layers(int64_t batch) const = 0;
  virtual void init_weights(std::span<float> w, uint64_t seed) const = 0;
  virtual void init_weights(std::span<double> w, uint64_t seed) const = 0;
  // Mean loss over samples `idx` at `w`. If `g` is not empty, writes the gradient of that mean loss
  // into it, calling ready(l) for l = L-1 .. 0 as each layer's slice is final.
  virtual double loss(std::span<const float> w, std::span<float> g, std::span<const int64_t> idx,
                      const ReadyFn& ready) const = 0;
  virtual double loss(std::span<const double> w, std::span<double> g, std::span<const int64_t> idx,
                      const ReadyFn& ready) const = 0;
  // The minimum of the full-data loss when known in closed form, else NaN.
  virtual double optimal_loss() const;
  // The fraction of the samples `idx` whose most probable class at `w` is their label (ties: the lowest
  // class); NaN for an objective that does not classify (linear regression).
  virtual double accuracy(std::span<const float> w, std::span<const int64_t> idx) const;
  const Dataset& dataset() const { return *dataset_; }

 protected:
  explicit Objective(std::shared_ptr<const Dataset> dataset) : dataset_(std::move(dataset)) {}
  std::shared_ptr<const Dataset> dataset_;
};

// A workload over one objective and one partition; makes the per-rank models.
class SyntheticWorkload final : public Workload {
 public:
  SyntheticWorkload(std::shared_ptr<const Objective> objective, Partition partition, uint64_t seed);
  std::string name() const override { return objective_->name(); }
  std::unique_ptr<Model> make_model(int rank) const override;

  const Objective& objective() const { return *objective_; }
  const Partition& partition() const { return *partition_; }
  const Dataset& dataset() const { return objective_->dataset(); }

 private:
  std::shared_ptr<const Objective> objective_;
  std::shared_ptr<const Partition> partition_;
  std::shared_ptr<const std::vector<Layer>> layers_;
  uint64_t seed_;
};

// Linear regression: loss(w) = mean over samples of (x . w - y)^2 / 2. The minimum over the whole
// training set is found once, in double precision, from the normal equations (X X^T) w = X y.
class LinearRegression final : public Objective {
 public:
  // Splits the `features` parameters into `layers` contiguous layers of (nearly) equal size, each
  // charged its share of the FLOPs, so that bucketing and overlap show in simulated time.
  LinearRegression(std::shared_ptr<const Dataset> dataset, int layers);
  std::string name() const override { return "linear_regression"; }
  size_t num_params() const override { return static_cast<size_t>(dataset_->features()); }
  std::vector<Layer> layers(int64_t batch) const override;
  void init_weights(std::span<float> w, uint64_t seed) const override;
  void init_weights(std::span<double> w, uint64_t seed) const override;
  double loss(std::span<const float> w, std::span<float> g, std::span<const int64_t> idx,
              const ReadyFn& ready) const override;
  double loss(std::span<const double> w, std::span<double> g, std::span<const int64_t> idx,
              const ReadyFn& ready) const override;
  double optimal_loss() const override { return optimal_loss_; }
  // The exact minimizer of the full-data loss.
  const Eigen::VectorXd& optimum() const { return optimum_; }

 private:
  template <class S>
  double loss_impl(std::span<const S> w, std::span<S> g, std::span<const int64_t> idx,
                   const ReadyFn& ready) const;
  int layers_;
  Eigen::VectorXd optimum_;
  double optimal_loss_ = 0;
};

// Logistic regression. classes == 2: one weight vector and a bias, sigmoid, binary cross-entropy
// (features + 1 parameters). classes > 2: multinomial, weights W (classes x features, column-major)
// then biases (classes), softmax cross-entropy. Parameters split into `layers` equal contiguous layers.
class LogisticRegression final : public Objective {
 public:
  LogisticRegression(std::shared_ptr<const Dataset> dataset, int layers);
  // Parameters of a model of `features` inputs and `classes` classes.
  static size_t param_count(int64_t features, int classes);
  std::string name() const override { return "logistic_regression"; }
  size_t num_params() const override;
  std::vector<Layer> layers(int64_t batch) const override;
  void init_weights(std::span<float> w, uint64_t seed) const override;
  void init_weights(std::span<double> w, uint64_t seed) const override;
  double loss(std::span<const float> w, std::span<float> g, std::span<const int64_t> idx,
              const ReadyFn& ready) const override;
  double loss(std::span<const double> w, std::span<double> g, std::span<const int64_t> idx,
              const ReadyFn& ready) const override;
  double accuracy(std::span<const float> w, std::span<const int64_t> idx) const override;

 private:
  template <class S>
  double loss_impl(std::span<const S> w, std::span<S> g, std::span<const int64_t> idx,
                   const ReadyFn& ready) const;
  int layers_;
};

// A multilayer perceptron: features -> hidden (x hidden_layers, tanh) -> classes, softmax
// cross-entropy. Dense layer l holds W_l (out x in, column-major) then b_l (out); each dense layer is
// one Layer, and the backward pass is real layer-by-layer backpropagation: ready(l) is called as soon
// as layer l's gradient is computed, before the error is propagated to layer l - 1.
class Mlp final : public Objective {
 public:
  Mlp(std::shared_ptr<const Dataset> dataset, int64_t hidden, int hidden_layers);
  std::string name() const override { return "mlp"; }
  size_t num_params() const override { return num_params_; }
  std::vector<Layer> layers(int64_t batch) const override;
  // LeCun normal initialization, std = 1 / sqrt(fan_in) (LeCun et al. 1998, "Efficient BackProp",
  // Sec. 4.6), biases zero; identical on every rank for the same seed.
  void init_weights(std::span<float> w, uint64_t seed) const override;
  void init_weights(std::span<double> w, uint64_t seed) const override;
  double loss(std::span<const float> w, std::span<float> g, std::span<const int64_t> idx,
              const ReadyFn& ready) const override;
  double loss(std::span<const double> w, std::span<double> g, std::span<const int64_t> idx,
              const ReadyFn& ready) const override;
  double accuracy(std::span<const float> w, std::span<const int64_t> idx) const override;
  const std::vector<int64_t>& widths() const { return widths_; }  // features, hidden..., classes

 private:
  template <class S>
  double loss_impl(std::span<const S> w, std::span<S> g, std::span<const int64_t> idx,
                   const ReadyFn& ready) const;
  template <class S>
  void init_impl(std::span<S> w, uint64_t seed) const;
  std::vector<int64_t> widths_;
  std::vector<size_t> offsets_;  // first parameter of each dense layer
  size_t num_params_ = 0;
};

// The partition of `data` among setup.world_size ranks that the workload's "partition" parameter names
// (iid, or dirichlet with "alpha"; core/models/dataset.h), for every workload over a labelled data set
// (the synthetic ones and fashion_mnist). ConfigError naming `name`.partition for an unknown kind.
Partition make_partition(const std::string& name, const Params& params, const Dataset& data,
                         const WorkloadSetup& setup);
// Declares "partition" and "alpha", the parameters make_partition reads.
ParamSchema& add_partition_params(ParamSchema& s);

// Parameter schemas and factories (registered by register_workloads).
ParamSchema linear_regression_schema();
ParamSchema logistic_regression_schema();
ParamSchema mlp_schema();
std::unique_ptr<SyntheticWorkload> make_linear_regression(const Params& params,
                                                          const WorkloadSetup& setup);
std::unique_ptr<SyntheticWorkload> make_logistic_regression(const Params& params,
                                                            const WorkloadSetup& setup);
std::unique_ptr<SyntheticWorkload> make_mlp(const Params& params, const WorkloadSetup& setup);

}  // namespace bagua
