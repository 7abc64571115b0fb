// Helpers for the algorithm tests: a quadratic model whose gradients are known exactly, a meta model
// (a profile-like workload with no data), a probe that reads the final weights, and a runner that
// trains a registered algorithm on N ranks of a backend.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <vector>

#include "core/algorithms/algorithm.h"
#include "core/ops.h"
#include "core/optim/optimizers.h"
#include "core/trainer/trainer.h"
#include "tests/core/algorithms/forwarding_algorithm.h"
#include "tests/core/layers.h"
#include "tests/support/worlds.h"

namespace bagua::testing {

// loss(w) = 1/2 |w - t|^2 with rank r's target t_i = r + i / 10, so grad = w - t and the gradient
// averaged over P ranks is w - tbar with tbar_i = (P - 1) / 2 + i / 10. Weights start at 0.
class QuadraticModel final : public Model {
 public:
  QuadraticModel(int rank, std::vector<size_t> sizes)
      : rank_(rank),
        layers_(contiguous_layers(sizes, "layer", Time::us(1), Time::us(2))),
        n_(std::accumulate(sizes.begin(), sizes.end(), size_t{0})) {}
  static double target(int rank, size_t i) { return rank + static_cast<double>(i) / 10.0; }
  static double mean_target(int ranks, size_t i) {
    return (ranks - 1) / 2.0 + static_cast<double>(i) / 10.0;
  }

  const std::vector<Layer>& layers() const override { return layers_; }
  size_t num_params() const override { return n_; }
  bool materialized() const override { return true; }
  void init_weights(const BufferView& w) const override { fill(w, 0.0); }
  double forward_backward(const BufferView& w, const BufferView& g, int64_t,
                          const std::function<void(int)>& ready) override {
    auto wv = w.as<float>();
    auto gv = g.as<float>();
    double loss = 0;
    for (size_t i = 0; i < n_; ++i) {
      gv[i] = wv[i] - static_cast<float>(target(rank_, i));
      loss += 0.5 * gv[i] * gv[i];
    }
    all_layers_ready(static_cast<int>(layers_.size()), ready);
    return loss;
  }

 private:
  int rank_;
  std::vector<Layer> layers_;
  size_t n_;
};

// A model on meta buffers: layers with profiled times and no data (like a profile workload).
class MetaModel final : public Model {
 public:
  explicit MetaModel(std::vector<size_t> sizes)
      : layers_(contiguous_layers(sizes, "meta", Time::us(50), Time::us(100))),
        n_(std::accumulate(sizes.begin(), sizes.end(), size_t{0})) {}
  const std::vector<Layer>& layers() const override { return layers_; }
  size_t num_params() const override { return n_; }
  bool materialized() const override { return false; }
  void init_weights(const BufferView&) const override {}
  double forward_backward(const BufferView&, const BufferView&, int64_t,
                          const std::function<void(int)>& ready) override {
    all_layers_ready(static_cast<int>(layers_.size()), ready);
    return std::nan("");
  }

 private:
  std::vector<Layer> layers_;
  size_t n_;
};

// Runs an inner algorithm and keeps a copy of the final weights (after the inner finish has drained
// its background work).
class WeightsProbe final : public ForwardingAlgorithm {
 public:
  using ForwardingAlgorithm::ForwardingAlgorithm;
  void finish(TrainState& s) override {
    ForwardingAlgorithm::finish(s);
    s.comm.synchronize();
    if (s.weights.is_host()) {
      auto w = s.weights.as<float>();
      weights.assign(w.begin(), w.end());
    }
  }
  std::vector<float> weights;
};

struct Registries {
  // `more_compressors` registers extra compressors beside the built-in ones, before the algorithms,
  // as a component would.
  explicit Registries(const std::function<void(CompressorRegistry&)>& more_compressors = {}) {
    register_compressors(compressors);
    if (more_compressors) more_compressors(compressors);
    register_optimizers(optimizers);
    register_algorithms(algorithms, compressors);
  }
  CompressorRegistry compressors{"compressor"};
  OptimizerRegistry optimizers{"optimizer"};
  AlgorithmRegistry algorithms{"algorithm"};
  AlgorithmDeps deps() const { return {compressors, optimizers}; }
};

struct RunSpec {
  std::string algorithm;
  std::map<std::string, ParamValue> params;  // overrides of the algorithm's defaults
  int ranks = 2;
  int per_host = 1;
  bool meta = false;                            // MetaModel instead of QuadraticModel
  std::vector<size_t> layer_sizes{3, 5, 2, 6};  // 16 parameters in 4 layers
  int64_t iterations = 3;
  double lr = 0.1;         // plain SGD
  Bytes bucket_bytes{16};  // several buckets
};

struct RunResult {
  std::vector<std::vector<float>> weights;  // per rank (empty for meta)
  std::vector<TrainResult> train;           // per rank
};

inline RunResult run_algorithm(Backend backend, const Registries& reg, const RunSpec& spec) {
  const auto& entry = reg.algorithms.at(spec.algorithm);
  for (const auto& [key, value] : spec.params) {
    auto error = entry.schema.validate(key, value);
    EXPECT_FALSE(error.has_value()) << spec.algorithm << "." << key << ": " << error.value_or("");
  }
  const Params params(entry.schema, spec.params);
  RunResult out;
  out.weights.resize(static_cast<size_t>(spec.ranks));
  out.train.resize(static_cast<size_t>(spec.ranks));
  std::mutex mu;
  run_ranks(
      backend, spec.ranks,
      [&](RankContext& ctx) {
        const int rank = ctx.transport().rank();
        std::unique_ptr<Model> model;
        if (spec.meta)
          model = std::make_unique<MetaModel>(spec.layer_sizes);
        else
          model = std::make_unique<QuadraticModel>(rank, spec.layer_sizes);
        Buffer like = spec.meta ? Buffer::meta(DType::kF32, 1) : Buffer::host(DType::kF32, 1);
        Params sgd_params(sgd_schema(), {{"lr", spec.lr}});
        std::unique_ptr<Optimizer> sgd = make_sgd(sgd_params, model->num_params(), like);
        std::unique_ptr<Algorithm> algorithm =
            reg.algorithms.create(spec.algorithm, params, reg.deps());
        WeightsProbe probe(*algorithm);
        TrainOptions options;
        options.iterations = spec.iterations;
        options.bucket_bytes = spec.bucket_bytes;
        TrainResult r = train(ctx, *model, *sgd, probe, options);
        std::lock_guard<std::mutex> lock(mu);
        out.weights[static_cast<size_t>(rank)] = probe.weights;
        out.train[static_cast<size_t>(rank)] = std::move(r);
      },
      spec.per_host);
  return out;
}

}  // namespace bagua::testing
