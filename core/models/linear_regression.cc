// Linear regression.
//
// Terms: X (features x samples) the inputs, y the targets, w the weights (no bias: the generated
// targets have zero mean). For a batch B of b samples:
//   residual  r = X_B^T w - y_B
//   loss      |r|^2 / (2 b)
//   gradient  X_B r / b
// The optimum of the full-data loss solves the normal equations (X X^T) w = X y, solved once in double
// precision by a Cholesky factorization (X X^T is positive definite when samples >= features and the
// inputs are in general position, which Gaussian inputs are with probability one).
#include <cmath>

#include "core/models/synthetic.h"
#include "core/models/synthetic_detail.h"

namespace bagua {

using detail::Mat;
using detail::Vec;

LinearRegression::LinearRegression(std::shared_ptr<const Dataset> dataset, int layers)
    : Objective(std::move(dataset)), layers_(layers) {
  const Eigen::MatrixXd x = dataset_->x.cast<double>();
  const Eigen::VectorXd y = dataset_->y.cast<double>();
  const Eigen::MatrixXd gram = x * x.transpose();
  Eigen::LLT<Eigen::MatrixXd> llt(gram);
  BAGUA_CHECK(llt.info() == Eigen::Success, "linear regression: X X^T is not positive definite");
  optimum_ = llt.solve(x * y);
  const Eigen::VectorXd residual = x.transpose() * optimum_ - y;
  optimal_loss_ = residual.squaredNorm() / (2.0 * static_cast<double>(x.cols()));
}

std::vector<Layer> LinearRegression::layers(int64_t batch) const {
  const double b = static_cast<double>(batch);
  const double d = static_cast<double>(num_params());
  // Forward: X_B^T w, 2 b d FLOPs; reads w and the batch (d + b d floats), writes b predictions.
  // Backward: X_B r, 2 b d FLOPs (the input needs no gradient: 1 x forward); reads the batch and the
  // residual, writes the gradient (b d + b + d floats).
  const Work forward{2 * b * d, Bytes(static_cast<int64_t>(4 * (d + b * d + b))), Time::zero()};
  const Work backward{2 * b * d, Bytes(static_cast<int64_t>(4 * (b * d + b + d))), Time::zero()};
  return detail::split_layers(name(), num_params(), layers_, forward, backward);
}

void LinearRegression::init_weights(std::span<float> w, uint64_t) const {
  std::fill(w.begin(), w.end(), 0.0f);
}
void LinearRegression::init_weights(std::span<double> w, uint64_t) const {
  std::fill(w.begin(), w.end(), 0.0);
}

template <class S>
double LinearRegression::loss_impl(std::span<const S> w, std::span<S> g, std::span<const int64_t> idx,
                                   const ReadyFn& ready) const {
  const Eigen::Index d = static_cast<Eigen::Index>(num_params());
  const Eigen::Map<const Vec<S>> weights(w.data(), d);
  const Mat<S> xb = detail::gather_columns<S>(dataset_->x, idx);
  Vec<S> yb(static_cast<Eigen::Index>(idx.size()));
  for (size_t k = 0; k < idx.size(); ++k)
    yb(static_cast<Eigen::Index>(k)) = static_cast<S>(dataset_->y(idx[k]));
  const S b = static_cast<S>(idx.size());
  const Vec<S> residual = xb.transpose() * weights - yb;
  const double loss =
      static_cast<double>(residual.squaredNorm()) / (2.0 * static_cast<double>(idx.size()));
  if (!g.empty()) {
    Eigen::Map<Vec<S>> grad(g.data(), d);
    grad.noalias() = xb * residual / b;
    all_layers_ready(layers_, ready);
  }
  return loss;
}

double LinearRegression::loss(std::span<const float> w, std::span<float> g,
                              std::span<const int64_t> idx, const ReadyFn& ready) const {
  return loss_impl<float>(w, g, idx, ready);
}
double LinearRegression::loss(std::span<const double> w, std::span<double> g,
                              std::span<const int64_t> idx, const ReadyFn& ready) const {
  return loss_impl<double>(w, g, idx, ready);
}

}  // namespace bagua
