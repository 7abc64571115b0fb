#include "core/trainer/averaged_model.h"

#include <cstdint>
#include <limits>
#include <span>

#include "core/check.h"

namespace bagua {

namespace {

// sum := sum + w, element by element, in double precision.
void accumulate(std::span<double> sum, std::span<const float> w) {
  BAGUA_CHECK_EQ(sum.size(), w.size(), "replica sizes");
  for (size_t i = 0; i < w.size(); ++i)
    sum[i] += static_cast<double>(w[i]);
}

// w_avg := sum / P, rounded once to float32.
std::vector<float> divide(std::span<const double> sum, int ranks) {
  std::vector<float> avg(sum.size());
  for (size_t i = 0; i < sum.size(); ++i)
    avg[i] = static_cast<float>(sum[i] / static_cast<double>(ranks));
  return avg;
}

}  // namespace

std::vector<float> average_replicas(const std::vector<std::vector<float>>& replicas) {
  BAGUA_CHECK(!replicas.empty(), "the average of no replica");
  std::vector<double> sum(replicas.front().begin(), replicas.front().end());
  for (size_t r = 1; r < replicas.size(); ++r)
    accumulate(sum, replicas[r]);
  return divide(sum, static_cast<int>(replicas.size()));
}

std::vector<double> averaged_model_accuracy(Transport& group, const Model& model,
                                            const TrainResult& mine) {
  const std::vector<EvaluatedWeights>& replicas = mine.evaluated_weights;
  const size_t n = model.num_params();
  for (const EvaluatedWeights& e : replicas)
    BAGUA_CHECK_EQ(e.weights.size(), n,
                   "evaluated weights of iteration " + std::to_string(e.iteration) + " on rank " +
                       std::to_string(group.rank()));
  // Every evaluation's replica, one after another: what a rank sends and what rank 0 sums.
  const size_t count = replicas.size() * n;
  if (group.rank() != 0) {
    std::vector<float> all;
    all.reserve(count);
    for (const EvaluatedWeights& e : replicas)
      all.insert(all.end(), e.weights.begin(), e.weights.end());
    int64_t go = 0;
    group.recv(BufferView::of(std::span<int64_t>(&go, 1)), 0, kAveragedGoTag);
    int64_t sent = static_cast<int64_t>(count);
    group.send(BufferView::of(std::span<int64_t>(&sent, 1)), 0, kAveragedCountTag);
    group.send(BufferView::of(std::span<float>(all)), 0, kAveragedWeightsTag);
    return {};
  }

  // sum[k n + i]: the sum over ranks so far of parameter i of evaluation k, starting from rank 0's
  // value itself (not 0 + it: -0 stays -0).
  std::vector<double> sum;
  sum.reserve(count);
  for (const EvaluatedWeights& e : replicas)
    sum.insert(sum.end(), e.weights.begin(), e.weights.end());
  std::vector<float> received(count);
  for (int r = 1; r < group.size(); ++r) {
    int64_t go = r;
    group.send(BufferView::of(std::span<int64_t>(&go, 1)), r, kAveragedGoTag);
    int64_t got = 0;
    group.recv(BufferView::of(std::span<int64_t>(&got, 1)), r, kAveragedCountTag);
    BAGUA_CHECK_EQ(got, static_cast<int64_t>(count),
                   "evaluated weights of rank " + std::to_string(r) + " (evaluations x parameters)");
    group.recv(BufferView::of(std::span<float>(received)), r, kAveragedWeightsTag);
    accumulate(sum, received);
  }

  std::vector<double> accuracy(mine.iterations.size(), std::numeric_limits<double>::quiet_NaN());
  for (size_t k = 0; k < replicas.size(); ++k) {
    std::vector<float> avg = divide(std::span<const double>(sum).subspan(k * n, n), group.size());
    const int64_t iteration = replicas[k].iteration;
    BAGUA_CHECK(iteration >= 0 && static_cast<size_t>(iteration) < accuracy.size(),
                "evaluated iteration " + std::to_string(iteration));
    accuracy[static_cast<size_t>(iteration)] =
        model.test_accuracy(BufferView::of(std::span<float>(avg)));
  }
  return accuracy;
}

}  // namespace bagua
