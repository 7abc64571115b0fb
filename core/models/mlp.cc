// A multilayer perceptron with tanh hidden layers and a softmax output.
//
// Terms: dense layer l = 0 .. L-1 maps activations a_l (in_l x b) to z_l = W_l a_l + c_l (out_l x b);
// a_0 is the batch of inputs, a_{l+1} = tanh(z_l) for hidden layers, and z_{L-1} are the logits.
// Backward pass, layer by layer from the last:
//   error     e_{L-1} = (softmax(z_{L-1}) - onehot) / b
//   gradient  W_l: e_l a_l^T,  c_l: row sums of e_l         -> ready(l)
//   error     e_{l-1} = (W_l^T e_l) .* (1 - a_l^2)          (tanh' = 1 - tanh^2; skipped for l = 0)
#include <cmath>

#include "core/models/random.h"
#include "core/models/synthetic.h"
#include "core/models/synthetic_detail.h"

namespace bagua {

using detail::Mat;
using detail::Vec;

Mlp::Mlp(std::shared_ptr<const Dataset> dataset, int64_t hidden, int hidden_layers)
    : Objective(std::move(dataset)) {
  BAGUA_CHECK(hidden > 0 && hidden_layers > 0 && dataset_->classes >= 2, "mlp shape");
  widths_.push_back(dataset_->features());
  for (int h = 0; h < hidden_layers; ++h)
    widths_.push_back(hidden);
  widths_.push_back(dataset_->classes);
  for (size_t l = 0; l + 1 < widths_.size(); ++l) {
    offsets_.push_back(num_params_);
    num_params_ += static_cast<size_t>(widths_[l + 1] * widths_[l] + widths_[l + 1]);
  }
}

std::vector<Layer> Mlp::layers(int64_t batch) const {
  std::vector<Layer> out;
  const double b = static_cast<double>(batch);
  for (size_t l = 0; l + 1 < widths_.size(); ++l) {
    const double in = static_cast<double>(widths_[l]);
    const double outs = static_cast<double>(widths_[l + 1]);
    const double params = in * outs + outs;
    const bool first = l == 0;
    // Forward: 2 b in out FLOPs; reads W, c and a_l, writes z_l.
    const Work forward{2 * b * in * outs, Bytes(static_cast<int64_t>(4 * (params + b * in + b * outs))),
                       Time::zero()};
    // Backward: weight gradient 2 b in out, and for all but the first layer the input error, another
    // 2 b in out; reads a_l, e_l (and W), writes the gradient (and e_{l-1}).
    const double flops = 2 * b * in * outs * (first ? 1 : 2);
    const double floats = b * in + b * outs + params + (first ? 0 : params + b * in);
    const Work backward{flops, Bytes(static_cast<int64_t>(4 * floats)), Time::zero()};
    out.push_back(Layer{"mlp.dense" + std::to_string(l), offsets_[l], static_cast<size_t>(params),
                        forward, backward});
  }
  return out;
}

template <class S>
void Mlp::init_impl(std::span<S> w, uint64_t seed) const {
  Rng rng(seed);
  for (size_t l = 0; l + 1 < widths_.size(); ++l) {
    const size_t weights = static_cast<size_t>(widths_[l + 1] * widths_[l]);
    const double scale = 1.0 / std::sqrt(static_cast<double>(widths_[l]));
    for (size_t k = 0; k < weights; ++k)
      w[offsets_[l] + k] = static_cast<S>(rng.normal() * scale);
    for (size_t k = 0; k < static_cast<size_t>(widths_[l + 1]); ++k)
      w[offsets_[l] + weights + k] = S(0);
  }
}

void Mlp::init_weights(std::span<float> w, uint64_t seed) const {
  init_impl<float>(w, seed);
}
void Mlp::init_weights(std::span<double> w, uint64_t seed) const {
  init_impl<double>(w, seed);
}

template <class S>
double Mlp::loss_impl(std::span<const S> w, std::span<S> g, std::span<const int64_t> idx,
                      const ReadyFn& ready) const {
  const size_t dense = widths_.size() - 1;
  std::vector<Mat<S>> a(dense);  // a[l]: input of dense layer l
  a[0] = detail::gather_columns<S>(dataset_->x, idx);
  std::vector<int32_t> labels(idx.size());
  for (size_t k = 0; k < idx.size(); ++k)
    labels[k] = dataset_->labels[static_cast<size_t>(idx[k])];

  auto weights = [&](size_t l) {
    return Eigen::Map<const Mat<S>>(w.data() + offsets_[l], widths_[l + 1], widths_[l]);
  };
  auto bias = [&](size_t l) {
    return Eigen::Map<const Vec<S>>(w.data() + offsets_[l] + widths_[l + 1] * widths_[l],
                                    widths_[l + 1]);
  };

  Mat<S> logits;
  for (size_t l = 0; l < dense; ++l) {
    Mat<S> z = (weights(l) * a[l]).colwise() + bias(l);
    if (l + 1 < dense)
      a[l + 1] = z.array().tanh().matrix();
    else
      logits = std::move(z);
  }
  Mat<S> error;
  const double loss = detail::softmax_cross_entropy<S>(logits, labels, g.empty() ? nullptr : &error);
  if (g.empty()) return loss;

  for (size_t l = dense; l-- > 0;) {
    Eigen::Map<Mat<S>> grad_w(g.data() + offsets_[l], widths_[l + 1], widths_[l]);
    Eigen::Map<Vec<S>> grad_c(g.data() + offsets_[l] + widths_[l + 1] * widths_[l], widths_[l + 1]);
    grad_w.noalias() = error * a[l].transpose();
    grad_c = error.rowwise().sum();
    if (ready) ready(static_cast<int>(l));
    if (l > 0) {
      Mat<S> back = weights(l).transpose() * error;
      error = (back.array() * (S(1) - a[l].array().square())).matrix();
    }
  }
  return loss;
}

double Mlp::accuracy(std::span<const float> w, std::span<const int64_t> idx) const {
  const size_t dense = widths_.size() - 1;
  Mat<float> a = detail::gather_columns<float>(dataset_->x, idx);
  std::vector<int32_t> labels(idx.size());
  for (size_t k = 0; k < idx.size(); ++k)
    labels[k] = dataset_->labels[static_cast<size_t>(idx[k])];
  for (size_t l = 0; l < dense; ++l) {
    const Eigen::Map<const Mat<float>> weights(w.data() + offsets_[l], widths_[l + 1], widths_[l]);
    const Eigen::Map<const Vec<float>> bias(w.data() + offsets_[l] + widths_[l + 1] * widths_[l],
                                            widths_[l + 1]);
    Mat<float> z = (weights * a).colwise() + bias;
    a = l + 1 < dense ? Mat<float>(z.array().tanh().matrix()) : std::move(z);
  }
  return detail::fraction_correct<float>(a, labels);
}

double Mlp::loss(std::span<const float> w, std::span<float> g, std::span<const int64_t> idx,
                 const ReadyFn& ready) const {
  return loss_impl<float>(w, g, idx, ready);
}
double Mlp::loss(std::span<const double> w, std::span<double> g, std::span<const int64_t> idx,
                 const ReadyFn& ready) const {
  return loss_impl<double>(w, g, idx, ready);
}

}  // namespace bagua
