#include "core/models/synthetic.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>

#include "core/check.h"
#include "core/models/random.h"
#include "core/ops.h"

namespace bagua {
namespace {

using Overrides = std::map<std::string, ParamValue>;

enum class Kind { kLinear, kLogistic, kSoftmax, kMlp };
std::string kind_name(Kind k) {
  switch (k) {
    case Kind::kLinear:
      return "linear";
    case Kind::kLogistic:
      return "logistic";
    case Kind::kSoftmax:
      return "softmax";
    case Kind::kMlp:
      return "mlp";
  }
  return "?";
}
const Kind kAllKinds[] = {Kind::kLinear, Kind::kLogistic, Kind::kSoftmax, Kind::kMlp};

// Small instances (100 samples) of every synthetic workload.
std::unique_ptr<SyntheticWorkload> make(Kind kind, WorkloadSetup setup, Overrides extra = {}) {
  Overrides o = {{"samples", int64_t{100}}};
  for (auto& [k, v] : extra)
    o[k] = v;
  switch (kind) {
    case Kind::kLinear:
      o.emplace("features", int64_t{10});
      return make_linear_regression(Params(linear_regression_schema(), o), setup);
    case Kind::kLogistic:
      o.emplace("features", int64_t{6});
      o.emplace("layers", int64_t{3});
      return make_logistic_regression(Params(logistic_regression_schema(), o), setup);
    case Kind::kSoftmax:
      o.emplace("features", int64_t{5});
      o.emplace("classes", int64_t{4});
      return make_logistic_regression(Params(logistic_regression_schema(), o), setup);
    case Kind::kMlp:
      o.emplace("features", int64_t{5});
      o.emplace("hidden", int64_t{7});
      o.emplace("classes", int64_t{3});
      return make_mlp(Params(mlp_schema(), o), setup);
  }
  return nullptr;
}

// Random weights, N(0, 0.5^2), in buffer `w`.
void random_weights(const BufferView& w, uint64_t seed) {
  Rng rng(seed);
  if (w.dtype() == DType::kF64)
    for (double& x : w.as<double>())
      x = 0.5 * rng.normal();
  else
    for (float& x : w.as<float>())
      x = static_cast<float>(0.5 * rng.normal());
}

TEST(Synthetic, GradientsMatchCentralFiniteDifferencesInDouble) {
  for (Kind kind : kAllKinds) {
    auto workload = make(kind, {2, 16, 5});
    auto model = workload->make_model(1);
    const size_t n = model->num_params();
    Buffer w = Buffer::host(DType::kF64, n), g = Buffer::host(DType::kF64, n),
           scratch = Buffer::host(DType::kF64, n);
    for (uint64_t point = 0; point < 3; ++point) {
      random_weights(w, 100 + point);
      const int64_t step = static_cast<int64_t>(point) * 3;
      model->forward_backward(w, g, step, nullptr);
      auto ws = w.as<double>();
      // First, middle and last parameter of every layer.
      for (const Layer& layer : model->layers()) {
        for (size_t i :
             {layer.offset, layer.offset + layer.count / 2, layer.offset + layer.count - 1}) {
          const double h = 1e-5, keep = ws[i];
          ws[i] = keep + h;
          const double up = model->forward_backward(w, scratch, step, nullptr);
          ws[i] = keep - h;
          const double down = model->forward_backward(w, scratch, step, nullptr);
          ws[i] = keep;
          const double fd = (up - down) / (2 * h);
          // Central differences: error O(h^2 f''') + O(eps f / h) ~ 1e-9 for these losses.
          EXPECT_NEAR(g.as<double>()[i], fd, 1e-7 * std::max(1.0, std::abs(fd)))
              << kind_name(kind) << " layer " << layer.name << " parameter " << i << " point " << point;
        }
      }
    }
  }
}

TEST(Synthetic, Float32GradientsAgreeWithDouble) {
  for (Kind kind : kAllKinds) {
    auto workload = make(kind, {1, 32, 6});
    auto model = workload->make_model(0);
    const size_t n = model->num_params();
    Buffer w64 = Buffer::host(DType::kF64, n), g64 = Buffer::host(DType::kF64, n);
    Buffer w32 = Buffer::host(DType::kF32, n), g32 = Buffer::host(DType::kF32, n);
    random_weights(w32, 9);
    for (size_t i = 0; i < n; ++i)
      w64.as<double>()[i] = w32.as<float>()[i];
    const double l64 = model->forward_backward(w64, g64, 2, nullptr);
    const double l32 = model->forward_backward(w32, g32, 2, nullptr);
    EXPECT_NEAR(l32, l64, 1e-5 * std::max(1.0, std::abs(l64))) << kind_name(kind);
    for (size_t i = 0; i < n; ++i)
      ASSERT_NEAR(g32.as<float>()[i], g64.as<double>()[i],
                  2e-5 * std::max(1.0, std::abs(g64.as<double>()[i])))
          << kind_name(kind) << " parameter " << i;
  }
}

// P ranks with batch b each, averaging gradients exactly, equal one rank with batch P b: the iid
// partition deals them the same samples. 100 samples, P b = 4 x 8 = 32 per step: step 3 wraps around
// the end of the data set (samples 96..127 mod 100), steps 7 and 26 lie in later epochs (224 and 832
// mod 100 = 24 and 32).
TEST(Synthetic, IidDataParallelismEqualsOneLargeBatch) {
  const int ranks = 4;
  const int64_t batch = 8;
  for (Kind kind : kAllKinds) {
    auto parallel = make(kind, {ranks, batch, 21});
    auto single = make(kind, {1, ranks * batch, 21});
    auto big = single->make_model(0);
    const size_t n = big->num_params();
    for (DType dtype : {DType::kF64, DType::kF32}) {
      Buffer w = Buffer::host(dtype, n), g = Buffer::host(dtype, n), sum = Buffer::host(dtype, n),
             ref = Buffer::host(dtype, n);
      random_weights(w, 5);
      for (int64_t step : {0, 1, 2, 3, 7, 26}) {
        fill(sum, 0.0);
        double loss_sum = 0;
        for (int r = 0; r < ranks; ++r) {
          auto m = parallel->make_model(r);
          loss_sum += m->forward_backward(w, g, step, nullptr);
          axpy(sum, 1.0 / ranks, g);
        }
        const double ref_loss = big->forward_backward(w, ref, step, nullptr);
        const double tol = dtype == DType::kF64 ? 1e-12 : 2e-6;
        EXPECT_NEAR(loss_sum / ranks, ref_loss, tol * std::max(1.0, std::abs(ref_loss)))
            << kind_name(kind) << " step " << step;
        for (size_t i = 0; i < n; ++i) {
          const double a = dtype == DType::kF64 ? sum.as<double>()[i] : sum.as<float>()[i];
          const double b = dtype == DType::kF64 ? ref.as<double>()[i] : ref.as<float>()[i];
          ASSERT_NEAR(a, b, tol * std::max(1.0, std::abs(b)))
              << kind_name(kind) << " " << to_string(dtype) << " step " << step << " parameter " << i;
        }
      }
    }
  }
}

TEST(Synthetic, LayersAreContiguousAndReadyComesInBackwardOrder) {
  for (Kind kind : kAllKinds) {
    auto workload = make(kind, {3, 8, 2});
    auto model = workload->make_model(2);
    const auto& layers = model->layers();
    ASSERT_FALSE(layers.empty());
    size_t next = 0;
    for (const Layer& l : layers) {
      EXPECT_EQ(l.offset, next) << kind_name(kind) << " " << l.name;
      EXPECT_GT(l.count, 0u);
      EXPECT_GT(l.forward.flops, 0);
      EXPECT_GT(l.backward.flops, 0);
      EXPECT_GT(l.forward.memory.count(), 0);
      next += l.count;
    }
    EXPECT_EQ(next, model->num_params()) << kind_name(kind);

    for (bool meta : {false, true}) {
      const size_t n = model->num_params();
      Buffer w = meta ? Buffer::meta(DType::kF32, n) : Buffer::host(DType::kF32, n);
      Buffer g = meta ? Buffer::meta(DType::kF32, n) : Buffer::host(DType::kF32, n);
      model->init_weights(w);
      std::vector<int> order;
      const double loss = model->forward_backward(w, g, 0, [&](int l) { order.push_back(l); });
      ASSERT_EQ(order.size(), layers.size()) << kind_name(kind);
      for (size_t k = 0; k < order.size(); ++k)
        EXPECT_EQ(order[k], static_cast<int>(layers.size() - 1 - k)) << kind_name(kind);
      EXPECT_EQ(std::isnan(loss), meta) << kind_name(kind);
      if (meta) {
        EXPECT_TRUE(std::isnan(model->full_loss(w)));
      }
    }
  }
}

// The MLP's backward pass is truly layer by layer: when ready(l) is called, layer l's gradient slice is
// final and the slices of the layers before it have not been written yet.
TEST(Synthetic, MlpMarksEachLayerReadyAsSoonAsItsGradientIsFinal) {
  auto workload = make(Kind::kMlp, {1, 16, 3}, {{"hidden_layers", int64_t{3}}});
  auto model = workload->make_model(0);
  const size_t n = model->num_params();
  const auto& layers = model->layers();
  ASSERT_EQ(layers.size(), 4u);
  Buffer w = Buffer::host(DType::kF64, n), g = Buffer::host(DType::kF64, n),
         final_g = Buffer::host(DType::kF64, n);
  random_weights(w, 4);
  model->forward_backward(w, final_g, 0, nullptr);
  fill(g, std::numeric_limits<double>::quiet_NaN());
  int calls = 0;
  model->forward_backward(w, g, 0, [&](int l) {
    ++calls;
    const auto gs = g.as<double>();
    for (size_t i = layers[static_cast<size_t>(l)].offset;
         i < layers[static_cast<size_t>(l)].offset + layers[static_cast<size_t>(l)].count; ++i)
      ASSERT_EQ(gs[i], final_g.as<double>()[i]) << "layer " << l << " parameter " << i;
    for (int earlier = 0; earlier < l; ++earlier)
      for (size_t i = layers[static_cast<size_t>(earlier)].offset;
           i < layers[static_cast<size_t>(earlier)].offset + layers[static_cast<size_t>(earlier)].count;
           ++i)
        ASSERT_TRUE(std::isnan(gs[i]))
            << "layer " << earlier << " written before layer " << l << " was ready";
  });
  EXPECT_EQ(calls, 4);
}

TEST(Synthetic, MlpLayerCostsFollowTheDenseLayerRule) {
  // features 5 -> hidden 7 -> 7 -> classes 3, batch 16: forward 2 b in out; backward 2x, 1x for layer
  // 0.
  auto workload = make(Kind::kMlp, {1, 16, 3});
  auto model = workload->make_model(0);
  const std::vector<std::pair<double, double>> shapes = {{5, 7}, {7, 7}, {7, 3}};
  ASSERT_EQ(model->layers().size(), shapes.size());
  for (size_t l = 0; l < shapes.size(); ++l) {
    const auto [in, out] = shapes[l];
    const Layer& layer = model->layers()[l];
    EXPECT_EQ(layer.count, static_cast<size_t>(in * out + out));
    EXPECT_DOUBLE_EQ(layer.forward.flops, 2 * 16 * in * out);
    EXPECT_DOUBLE_EQ(layer.backward.flops, 2 * 16 * in * out * (l == 0 ? 1 : 2));
    // Forward reads W, c, a_l and writes z_l (float32).
    EXPECT_EQ(layer.forward.memory.count(),
              static_cast<int64_t>(4 * (in * out + out + 16 * in + 16 * out)));
  }
}

TEST(Synthetic, SplitLayersShareTheCostByParameterCount) {
  // linear regression, 10 features, 3 layers: sizes 4, 3, 3; whole forward 2 b d = 2 x 8 x 10 FLOPs.
  auto workload = make(Kind::kLinear, {1, 8, 3}, {{"layers", int64_t{3}}});
  auto model = workload->make_model(0);
  const auto& layers = model->layers();
  ASSERT_EQ(layers.size(), 3u);
  EXPECT_EQ(layers[0].count, 4u);
  EXPECT_EQ(layers[1].count, 3u);
  EXPECT_EQ(layers[2].count, 3u);
  double forward = 0, backward = 0;
  for (const Layer& l : layers) {
    forward += l.forward.flops;
    backward += l.backward.flops;
    EXPECT_DOUBLE_EQ(l.forward.flops, 2.0 * 8 * static_cast<double>(l.count));
  }
  EXPECT_DOUBLE_EQ(forward, 2.0 * 8 * 10);
  EXPECT_DOUBLE_EQ(backward, 2.0 * 8 * 10);  // the input needs no gradient: 1 x forward
}

TEST(Synthetic, LinearRegressionOptimumIsExact) {
  // One rank whose batch is the whole data set: step 0's batch gradient is the full gradient.
  const int64_t samples = 2000, features = 16;
  const double noise = 0.1;
  auto workload =
      make_linear_regression(Params(linear_regression_schema(),
                                    {{"samples", samples}, {"features", features}, {"noise", noise}}),
                             {1, samples, 17});
  auto model = workload->make_model(0);
  const auto& objective = dynamic_cast<const LinearRegression&>(workload->objective());
  const Eigen::VectorXd& optimum = objective.optimum();
  Buffer w = Buffer::host(DType::kF64, features), g = Buffer::host(DType::kF64, features);
  for (int64_t j = 0; j < features; ++j)
    w.as<double>()[static_cast<size_t>(j)] = optimum(j);

  const double at_optimum = model->forward_backward(w, g, 0, nullptr);
  for (int64_t j = 0; j < features; ++j)
    EXPECT_NEAR(g.as<double>()[static_cast<size_t>(j)], 0.0, 1e-12) << j;
  EXPECT_NEAR(at_optimum, model->optimal_loss(), 1e-14);
  EXPECT_NEAR(model->full_loss(w), model->optimal_loss(), 1e-14);
  // The expected minimum of least squares with Gaussian noise: noise^2 (1 - features / samples) / 2
  // = 0.005 x 0.992 = 0.00496, with a relative standard deviation of about sqrt(2 / samples) = 3%.
  EXPECT_NEAR(model->optimal_loss(), noise * noise * (1.0 - 16.0 / 2000.0) / 2, 0.15 * 0.00496);

  // Every other point is worse, by exactly (w - w*)^T H (w - w*) / 2 with H = X X^T / samples.
  const Eigen::MatrixXd x = workload->dataset().x.cast<double>();
  const Eigen::MatrixXd hessian = x * x.transpose() / static_cast<double>(samples);
  Rng rng(3);
  for (int trial = 0; trial < 5; ++trial) {
    Eigen::VectorXd delta(features);
    for (int64_t j = 0; j < features; ++j)
      delta(j) = 0.1 * rng.normal();
    for (int64_t j = 0; j < features; ++j)
      w.as<double>()[static_cast<size_t>(j)] = optimum(j) + delta(j);
    const double gap = model->full_loss(w) - model->optimal_loss();
    EXPECT_GT(gap, 0.0);
    EXPECT_NEAR(gap, 0.5 * delta.dot(hessian * delta), 1e-12);
  }
}

TEST(Synthetic, FullBatchGradientDescentConvergesToTheOptimum) {
  // H = X X^T / samples has eigenvalues within (1 +- sqrt(features / samples))^2 = [0.83, 1.19]
  // (Marchenko-Pastur), so a step of 1 contracts the error by a factor of at most 0.19 per iteration
  // and the gap by 0.036: after 40 iterations only float32 rounding is left (gap ~ 1e-15).
  const int64_t samples = 4096, features = 32;
  auto workload = make_linear_regression(
      Params(linear_regression_schema(), {{"samples", samples}, {"features", features}}),
      {1, samples, 5});
  auto model = workload->make_model(0);
  Buffer w = Buffer::host(DType::kF32, features), g = Buffer::host(DType::kF32, features);
  model->init_weights(w);
  const double start_gap = model->full_loss(w) - model->optimal_loss();
  EXPECT_GT(start_gap, 0.1);
  for (int64_t step = 0; step < 40; ++step) {
    model->forward_backward(w, g, step, nullptr);
    axpy(w, -1.0, g);
  }
  const double gap = model->full_loss(w) - model->optimal_loss();
  EXPECT_GE(gap, -1e-12);
  EXPECT_LT(gap, 1e-9 * start_gap);
}

TEST(Synthetic, InitialWeightsAreSeededAndIdenticalOnEveryRank) {
  auto a = make(Kind::kMlp, {4, 8, 1});
  auto b = make(Kind::kMlp, {4, 8, 2});
  const size_t n = a->make_model(0)->num_params();
  Buffer w0 = Buffer::host(DType::kF32, n), w3 = Buffer::host(DType::kF32, n),
         other = Buffer::host(DType::kF32, n);
  a->make_model(0)->init_weights(w0);
  a->make_model(3)->init_weights(w3);
  b->make_model(0)->init_weights(other);
  for (size_t i = 0; i < n; ++i)
    ASSERT_EQ(w0.as<float>()[i], w3.as<float>()[i]) << i;
  bool differs = false;
  for (size_t i = 0; i < n; ++i)
    differs |= w0.as<float>()[i] != other.as<float>()[i];
  EXPECT_TRUE(differs);

  // LeCun normal: the first layer's weights (in = 64 features, out = 64 hidden) have variance 1 / 64.
  auto wide = make(Kind::kMlp, {1, 8, 1}, {{"features", int64_t{64}}, {"hidden", int64_t{64}}});
  auto m = wide->make_model(0);
  Buffer w = Buffer::host(DType::kF64, m->num_params());
  m->init_weights(w);
  double sum2 = 0;
  for (size_t i = 0; i < 64 * 64; ++i)
    sum2 += w.as<double>()[i] * w.as<double>()[i];
  EXPECT_NEAR(sum2 / (64 * 64), 1.0 / 64, 0.15 / 64);  // 4096 draws: relative error ~ sqrt(2/4096) = 2%
  for (size_t i = 64 * 64; i < 64 * 64 + 64; ++i)
    EXPECT_EQ(w.as<double>()[i], 0.0);  // biases
}

TEST(Synthetic, DefaultsTrainAndAreWellFormed) {
  // The defaults of every registered synthetic workload build, and a few steps of SGD lower the loss.
  WorkloadRegistry registry("workload");
  register_workloads(registry);
  for (const char* name : {"linear_regression", "logistic_regression", "mlp"}) {
    const auto& entry = registry.at(name);
    auto workload = registry.create(name, Params(entry.schema), WorkloadSetup{8, 32, 1});
    auto model = workload->make_model(7);
    const size_t n = model->num_params();
    Buffer w = Buffer::host(DType::kF32, n), g = Buffer::host(DType::kF32, n);
    model->init_weights(w);
    const double before = model->full_loss(w);
    for (int64_t step = 0; step < 30; ++step) {
      model->forward_backward(w, g, step, nullptr);
      axpy(w, -0.2, g);
    }
    EXPECT_LT(model->full_loss(w), before) << name;
    EXPECT_TRUE(model->materialized());
  }
}

TEST(Synthetic, ConfigErrorsNameTheCulprit) {
  EXPECT_THROW(make(Kind::kLinear, {0, 8, 1}), ConfigError);
  EXPECT_THROW(make(Kind::kMlp, {2, 0, 1}), ConfigError);
  EXPECT_THROW(make(Kind::kLinear, {1, 8, 1}, {{"samples", int64_t{5}}}),
               ConfigError);  // samples < features
  EXPECT_THROW(make(Kind::kLinear, {1, 8, 1}, {{"layers", int64_t{11}}}),
               ConfigError);  // more layers than params
  try {
    make(Kind::kLogistic, {1, 8, 1}, {{"partition", std::string("zipf")}});
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("zipf"), std::string::npos);
  }
  auto workload = make(Kind::kMlp, {2, 8, 1});
  EXPECT_THROW(workload->make_model(2), ConfigError);
  auto model = workload->make_model(0);
  Buffer wrong = Buffer::host(DType::kF32, 3);
  EXPECT_THROW(model->init_weights(wrong), ConfigError);
}

TEST(Synthetic, DirichletWorkloadTrainsOnItsOwnShard) {
  auto workload =
      make(Kind::kSoftmax, {4, 8, 3}, {{"partition", std::string("dirichlet")}, {"alpha", 0.1}});
  const Partition& p = workload->partition();
  EXPECT_EQ(p.kind(), PartitionKind::kDirichlet);
  auto model = workload->make_model(1);
  const size_t n = model->num_params();
  Buffer w = Buffer::host(DType::kF64, n), g = Buffer::host(DType::kF64, n);
  random_weights(w, 1);
  // The rank's batch loss equals the loss the objective computes on the rank's own shard positions.
  std::vector<int64_t> batch;
  p.batch(1, 4, batch);
  for (int64_t i : batch)
    EXPECT_NE(std::find(p.shard(1).begin(), p.shard(1).end(), i), p.shard(1).end());
  const double loss = model->forward_backward(w, g, 4, nullptr);
  const double ref = workload->objective().loss(std::span<const double>(w.as<double>()),
                                                std::span<double>(), batch, nullptr);
  EXPECT_DOUBLE_EQ(loss, ref);
}

}  // namespace
}  // namespace bagua
