// Helpers shared by the synthetic objectives (internal to core/models).
#pragma once

#include <Eigen/Dense>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/models/model.h"

namespace bagua::detail {

template <class S>
using Mat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;
template <class S>
using Vec = Eigen::Matrix<S, Eigen::Dynamic, 1>;

// The columns `idx` of `x`, in precision S.
template <class S>
Mat<S> gather_columns(const Eigen::MatrixXf& x, std::span<const int64_t> idx) {
  Mat<S> out(x.rows(), static_cast<Eigen::Index>(idx.size()));
  for (size_t k = 0; k < idx.size(); ++k)
    out.col(static_cast<Eigen::Index>(k)) = x.col(idx[k]).template cast<S>();
  return out;
}

// log(1 + exp(z)) without overflow.
template <class S>
S softplus(S z) {
  return std::max(z, S(0)) + std::log1p(std::exp(-std::abs(z)));
}

// Mean softmax cross-entropy of `logits` (classes x b) against `labels`; when `delta` is not null,
// writes d(mean loss)/d(logits) = (softmax - onehot) / b into it.
template <class S>
double softmax_cross_entropy(const Mat<S>& logits, std::span<const int32_t> labels, Mat<S>* delta) {
  const Eigen::Index b = logits.cols();
  double total = 0;
  if (delta) delta->resize(logits.rows(), b);
  for (Eigen::Index k = 0; k < b; ++k) {
    const S top = logits.col(k).maxCoeff();
    Vec<S> e = (logits.col(k).array() - top).exp().matrix();
    const S sum = e.sum();
    const int32_t y = labels[static_cast<size_t>(k)];
    total += static_cast<double>(std::log(sum) + top - logits(y, k));
    if (delta) {
      delta->col(k) = e / (sum * S(b));
      (*delta)(y, k) -= S(1) / S(b);
    }
  }
  return total / static_cast<double>(b);
}

// The fraction of the columns of `logits` (classes x b; binary: 1 x b margins, class 1 where > 0) whose
// largest entry (ties: the lowest class) is their label.
template <class S>
double fraction_correct(const Mat<S>& logits, std::span<const int32_t> labels) {
  const Eigen::Index b = logits.cols();
  if (b == 0) return std::numeric_limits<double>::quiet_NaN();
  int64_t correct = 0;
  for (Eigen::Index k = 0; k < b; ++k) {
    Eigen::Index predicted = 0;
    if (logits.rows() == 1)
      predicted = logits(0, k) > S(0) ? 1 : 0;
    else
      logits.col(k).maxCoeff(&predicted);
    correct += predicted == labels[static_cast<size_t>(k)] ? 1 : 0;
  }
  return static_cast<double>(correct) / static_cast<double>(b);
}

// Splits `count` parameters into `parts` contiguous layers (the first count % parts one larger), each
// charged its share of the whole model's forward/backward FLOPs and bytes.
std::vector<Layer> split_layers(const std::string& name, size_t count, int parts, const Work& forward,
                                const Work& backward);

// Throws ConfigError if a buffer cannot hold a synthetic model's parameters.
void check_host_buffer(const std::string& workload, const BufferView& v, size_t count,
                       const char* what);

}  // namespace bagua::detail
