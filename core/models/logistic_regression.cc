// Logistic regression.
//
// Terms: X_B (features x b) a batch of inputs, labels in [0, classes).
//   binary (classes == 2): parameters [w (features), c (bias)];
//     margin     z = X_B^T w + c
//     loss       mean of softplus(z) - label z     (binary cross-entropy with label in {0, 1})
//     gradient   w: X_B (sigmoid(z) - label) / b,  c: mean(sigmoid(z) - label)
//   multinomial (classes > 2): parameters [W (classes x features, column-major), c (classes)];
//     logits     Z = W X_B + c
//     loss       mean softmax cross-entropy
//     gradient   D = (softmax(Z) - onehot) / b;  W: D X_B^T,  c: row sums of D
#include <cmath>

#include "core/models/synthetic.h"
#include "core/models/synthetic_detail.h"

namespace bagua {

using detail::Mat;
using detail::Vec;

LogisticRegression::LogisticRegression(std::shared_ptr<const Dataset> dataset, int layers)
    : Objective(std::move(dataset)), layers_(layers) {
  BAGUA_CHECK(dataset_->classes >= 2, "logistic regression needs at least 2 classes");
}

size_t LogisticRegression::param_count(int64_t features, int classes) {
  const size_t d = static_cast<size_t>(features);
  const size_t c = static_cast<size_t>(classes);
  return c == 2 ? d + 1 : c * (d + 1);
}

size_t LogisticRegression::num_params() const {
  return param_count(dataset_->features(), dataset_->classes);
}

std::vector<Layer> LogisticRegression::layers(int64_t batch) const {
  const double b = static_cast<double>(batch);
  const double d = static_cast<double>(dataset_->features());
  const double outputs = dataset_->classes == 2 ? 1.0 : static_cast<double>(dataset_->classes);
  const double p = static_cast<double>(num_params());
  // Forward: 2 b d outputs FLOPs; reads the parameters and the batch, writes the margins/logits.
  // Backward: the weight gradient only (the input needs none: 1 x forward); reads the batch and the
  // output errors, writes the gradient.
  const Work forward{2 * b * d * outputs, Bytes(static_cast<int64_t>(4 * (p + b * d + b * outputs))),
                     Time::zero()};
  const Work backward{2 * b * d * outputs, Bytes(static_cast<int64_t>(4 * (b * d + b * outputs + p))),
                      Time::zero()};
  return detail::split_layers(name(), num_params(), layers_, forward, backward);
}

void LogisticRegression::init_weights(std::span<float> w, uint64_t) const {
  std::fill(w.begin(), w.end(), 0.0f);
}
void LogisticRegression::init_weights(std::span<double> w, uint64_t) const {
  std::fill(w.begin(), w.end(), 0.0);
}

template <class S>
double LogisticRegression::loss_impl(std::span<const S> w, std::span<S> g, std::span<const int64_t> idx,
                                     const ReadyFn& ready) const {
  const Eigen::Index d = dataset_->features();
  const Eigen::Index classes = dataset_->classes;
  const Eigen::Index b = static_cast<Eigen::Index>(idx.size());
  const Mat<S> xb = detail::gather_columns<S>(dataset_->x, idx);
  std::vector<int32_t> labels(idx.size());
  for (size_t k = 0; k < idx.size(); ++k)
    labels[k] = dataset_->labels[static_cast<size_t>(idx[k])];

  double loss = 0;
  if (classes == 2) {
    const Eigen::Map<const Vec<S>> weights(w.data(), d);
    const S bias = w[static_cast<size_t>(d)];
    const Vec<S> z = (xb.transpose() * weights).array() + bias;
    Vec<S> error(b);  // sigmoid(z) - label
    for (Eigen::Index k = 0; k < b; ++k) {
      const S label = static_cast<S>(labels[static_cast<size_t>(k)]);
      loss += static_cast<double>(detail::softplus(z(k)) - label * z(k));
      error(k) = S(1) / (S(1) + std::exp(-z(k))) - label;
    }
    loss /= static_cast<double>(b);
    if (!g.empty()) {
      Eigen::Map<Vec<S>> grad(g.data(), d);
      grad.noalias() = xb * error / S(b);
      g[static_cast<size_t>(d)] = error.sum() / S(b);
    }
  } else {
    const Eigen::Map<const Mat<S>> weights(w.data(), classes, d);
    const Eigen::Map<const Vec<S>> bias(w.data() + classes * d, classes);
    const Mat<S> logits = (weights * xb).colwise() + bias;
    Mat<S> delta;
    loss = detail::softmax_cross_entropy<S>(logits, labels, g.empty() ? nullptr : &delta);
    if (!g.empty()) {
      Eigen::Map<Mat<S>> grad_w(g.data(), classes, d);
      Eigen::Map<Vec<S>> grad_c(g.data() + classes * d, classes);
      grad_w.noalias() = delta * xb.transpose();
      grad_c = delta.rowwise().sum();
    }
  }
  if (!g.empty()) all_layers_ready(layers_, ready);
  return loss;
}

double LogisticRegression::accuracy(std::span<const float> w, std::span<const int64_t> idx) const {
  const Eigen::Index d = dataset_->features();
  const Eigen::Index classes = dataset_->classes;
  const Mat<float> xb = detail::gather_columns<float>(dataset_->x, idx);
  std::vector<int32_t> labels(idx.size());
  for (size_t k = 0; k < idx.size(); ++k)
    labels[k] = dataset_->labels[static_cast<size_t>(idx[k])];
  if (classes == 2) {
    const Eigen::Map<const Vec<float>> weights(w.data(), d);
    const Mat<float> margins =
        ((weights.transpose() * xb).array() + w[static_cast<size_t>(d)]).matrix();
    return detail::fraction_correct<float>(margins, labels);
  }
  const Eigen::Map<const Mat<float>> weights(w.data(), classes, d);
  const Eigen::Map<const Vec<float>> bias(w.data() + classes * d, classes);
  const Mat<float> logits = (weights * xb).colwise() + bias;
  return detail::fraction_correct<float>(logits, labels);
}

double LogisticRegression::loss(std::span<const float> w, std::span<float> g,
                                std::span<const int64_t> idx, const ReadyFn& ready) const {
  return loss_impl<float>(w, g, idx, ready);
}
double LogisticRegression::loss(std::span<const double> w, std::span<double> g,
                                std::span<const int64_t> idx, const ReadyFn& ready) const {
  return loss_impl<double>(w, g, idx, ready);
}

}  // namespace bagua
