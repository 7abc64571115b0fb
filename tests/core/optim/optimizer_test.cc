#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <vector>

#include "core/check.h"
#include "core/ops.h"
#include "core/optim/optimizers.h"

namespace bagua {
namespace {

using Overrides = std::map<std::string, ParamValue>;

const std::vector<double> kW0 = {1.0, -2.0, 0.5, 3.0};
const std::vector<double> kG1 = {0.5, -1.0, 2.0, -0.25};
const std::vector<double> kG2 = {-0.3, 0.7, 1.5, 4.0};

Buffer make_buffer(DType dtype, const std::vector<double>& values) {
  Buffer b = Buffer::host(dtype, values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::kF64)
      b.as<double>()[i] = values[i];
    else
      b.as<float>()[i] = static_cast<float>(values[i]);
  }
  return b;
}

double at(const Buffer& b, size_t i) {
  return b.dtype() == DType::kF64 ? b.as<double>()[i] : b.as<float>()[i];
}

std::unique_ptr<Optimizer> create(const std::string& name, Overrides o, const BufferView& like,
                                  size_t n = 4) {
  OptimizerRegistry registry("optimizer");
  register_optimizers(registry);
  return registry.create(name, Params(registry.at(name).schema, o), n, like);
}

// Runs `steps` steps with gradients kG1, kG2 on float64 and float32 buffers and compares with
// `expected`.
void expect_steps(const std::string& name, const Overrides& o, int steps,
                  const std::vector<double>& expected) {
  for (DType dtype : {DType::kF64, DType::kF32}) {
    Buffer w = make_buffer(dtype, kW0);
    auto opt = create(name, o, w);
    for (int s = 0; s < steps; ++s)
      opt->step(w, make_buffer(dtype, s == 0 ? kG1 : kG2));
    const double tol = dtype == DType::kF64 ? 1e-14 : 1e-6;
    for (size_t i = 0; i < expected.size(); ++i)
      EXPECT_NEAR(at(w, i), expected[i], tol * std::max(1.0, std::abs(expected[i])))
          << name << " " << to_string(dtype) << " element " << i;
  }
}

TEST(Optimizers, SgdStep) {
  // w - lr g with lr 0.1: [1 - 0.05, -2 + 0.1, 0.5 - 0.2, 3 + 0.025]
  expect_steps("sgd", {{"lr", 0.1}}, 1, {0.95, -1.9, 0.3, 3.025});
  // With weight decay 0.5: w - lr (g + 0.5 w) = 0.95 w - 0.1 g.
  std::vector<double> expected;
  for (size_t i = 0; i < 4; ++i)
    expected.push_back(0.95 * kW0[i] - 0.1 * kG1[i]);
  expect_steps("sgd", {{"lr", 0.1}, {"weight_decay", 0.5}}, 1, expected);
}

TEST(Optimizers, MomentumTwoSteps) {
  const double lr = 0.1, mu = 0.9;
  // Heavy ball: buf1 = g1, w1 = w0 - lr g1; buf2 = mu g1 + g2, w2 = w1 - lr buf2.
  std::vector<double> plain, nesterov, decayed;
  for (size_t i = 0; i < 4; ++i) {
    const double w1 = kW0[i] - lr * kG1[i];
    plain.push_back(w1 - lr * (mu * kG1[i] + kG2[i]));
    // Nesterov: w1 = w0 - lr (g1 + mu g1); w2 = w1 - lr (g2 + mu (mu g1 + g2)).
    const double n1 = kW0[i] - lr * (kG1[i] + mu * kG1[i]);
    nesterov.push_back(n1 - lr * (kG2[i] + mu * (mu * kG1[i] + kG2[i])));
    // Weight decay 0.2: d = g + 0.2 w with the weights before each step.
    const double d1 = kG1[i] + 0.2 * kW0[i];
    const double v1 = kW0[i] - lr * d1;
    const double d2 = kG2[i] + 0.2 * v1;
    decayed.push_back(v1 - lr * (mu * d1 + d2));
  }
  expect_steps("momentum", {{"lr", lr}}, 2, plain);
  expect_steps("momentum", {{"lr", lr}, {"nesterov", true}}, 2, nesterov);
  expect_steps("momentum", {{"lr", lr}, {"weight_decay", 0.2}}, 2, decayed);
}

TEST(Optimizers, AdamFirstStepsWithBiasCorrection) {
  const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8;
  std::vector<double> one, two;
  for (size_t i = 0; i < 4; ++i) {
    // Step 1: m = 0.1 g1, v = 0.001 g1^2; bias-corrected m/(1-0.9) = g1, v/(1-0.999) = g1^2, so the
    // step is lr g1 / (|g1| + eps): lr times the sign of g1, to 1e-8.
    const double m1 = (1 - b1) * kG1[i], v1 = (1 - b2) * kG1[i] * kG1[i];
    const double w1 = kW0[i] - lr * (m1 / (1 - b1)) / (std::sqrt(v1 / (1 - b2)) + eps);
    one.push_back(w1);
    EXPECT_NEAR(w1, kW0[i] - lr * (kG1[i] > 0 ? 1 : -1), 1e-9);
    // Step 2: corrections 1 - 0.9^2 = 0.19 and 1 - 0.999^2 = 0.001999.
    const double m2 = b1 * m1 + (1 - b1) * kG2[i], v2 = b2 * v1 + (1 - b2) * kG2[i] * kG2[i];
    two.push_back(w1 - lr * (m2 / 0.19) / (std::sqrt(v2 / 0.001999) + eps));
  }
  expect_steps("adam", {{"lr", lr}}, 1, one);
  expect_steps("adam", {{"lr", lr}}, 2, two);
}

TEST(Optimizers, AdamwDecaysTheWeightsApartFromTheMoments) {
  // AdamW (torch.optim.AdamW): w := (1 - lr wd) w, then Adam's step on the gradient alone. With lr 0.01
  // and wd 0.5 the first step is w0 (1 - 0.005) - 0.01 sign(g1) (to 1e-8, as Adam's first step): for
  // w0 = 1, g1 = 0.5: 0.995 - 0.01 = 0.985. The moments never see the weights, unlike adam's L2 term.
  const double lr = 0.01, wd = 0.5, b1 = 0.9, b2 = 0.999, eps = 1e-8;
  std::vector<double> two;
  for (size_t i = 0; i < 4; ++i) {
    const double m1 = (1 - b1) * kG1[i], v1 = (1 - b2) * kG1[i] * kG1[i];
    const double w1 = kW0[i] * (1 - lr * wd) - lr * (m1 / (1 - b1)) / (std::sqrt(v1 / (1 - b2)) + eps);
    if (i == 0) {
      EXPECT_NEAR(w1, 0.985, 1e-9);
    }
    const double m2 = b1 * m1 + (1 - b1) * kG2[i], v2 = b2 * v1 + (1 - b2) * kG2[i] * kG2[i];
    two.push_back(w1 * (1 - lr * wd) - lr * (m2 / 0.19) / (std::sqrt(v2 / 0.001999) + eps));
  }
  expect_steps("adamw", {{"lr", lr}, {"weight_decay", wd}}, 2, two);
  // Without decay it is Adam.
  Buffer a = make_buffer(DType::kF64, kW0), b = make_buffer(DType::kF64, kW0);
  auto adam = create("adam", {{"lr", lr}}, a);
  auto adamw = create("adamw", {{"lr", lr}, {"weight_decay", 0.0}}, b);
  adam->step(a, make_buffer(DType::kF64, kG1));
  adamw->step(b, make_buffer(DType::kF64, kG1));
  for (size_t i = 0; i < 4; ++i)
    EXPECT_EQ(at(a, i), at(b, i)) << i;
  EXPECT_EQ(create("adamw", {}, a)->name(), "adamw");
}

TEST(Optimizers, MetaBuffersAreNoOpsAndStateStaysMeta) {
  for (const char* name : {"sgd", "momentum", "adam", "adamw"}) {
    Buffer w = Buffer::meta(DType::kF32, 1000), g = Buffer::meta(DType::kF32, 1000);
    auto opt = create(name, {}, w, 1000);
    opt->step(w, g);
    opt->step(w, g);
    EXPECT_FALSE(opt->cost(1000).empty()) << name;
  }
}

TEST(Optimizers, CostIsMemoryBound) {
  Buffer like = Buffer::meta(DType::kF32, 1);
  // float32 bytes per parameter: sgd reads w, g and writes w (12); momentum adds the buffer read and
  // written (20); adam reads w, g, m, v and writes m, v, w (28).
  EXPECT_EQ(create("sgd", {}, like, 1)->cost(1000).memory, Bytes(12000));
  EXPECT_EQ(create("momentum", {}, like, 1)->cost(1000).memory, Bytes(20000));
  EXPECT_EQ(create("adam", {}, like, 1)->cost(1000).memory, Bytes(28000));
  EXPECT_DOUBLE_EQ(create("sgd", {}, like, 1)->cost(1000).flops, 2000);
  EXPECT_EQ(create("adam", {}, like, 1)->cost(1000).duration, Time::zero());
}

TEST(Optimizers, DefaultsArePyTorchs) {
  Buffer like = Buffer::meta(DType::kF32, 1);
  EXPECT_DOUBLE_EQ(create("sgd", {}, like, 1)->learning_rate(), 1e-3);
  EXPECT_DOUBLE_EQ(create("adam", {}, like, 1)->learning_rate(), 1e-3);
  OptimizerRegistry registry("optimizer");
  register_optimizers(registry);
  const ParamSchema& adam = registry.at("adam").schema;
  EXPECT_EQ(std::get<double>(adam.find("beta1")->default_value), 0.9);
  EXPECT_EQ(std::get<double>(adam.find("beta2")->default_value), 0.999);
  EXPECT_EQ(std::get<double>(adam.find("eps")->default_value), 1e-8);
  EXPECT_EQ(std::get<double>(registry.at("momentum").schema.find("momentum")->default_value), 0.9);
}

// A stand-in device space: host memory that calls itself device memory.
class FakeDeviceSpace final : public Space {
 public:
  Memory memory() const override { return Memory::kDevice; }
  std::string name() const override { return "fake-device"; }
  void* allocate(size_t bytes) const override { return std::malloc(bytes + 1); }
  void deallocate(void* p) const override { std::free(p); }
  void copy(const BufferView&, const BufferView&) const override {}
  void reduce(const BufferView&, const BufferView&, ReduceOp) const override {}
  void scale(const BufferView&, double) const override {}
  void axpy(const BufferView&, double, const BufferView&) const override {}
  void fill(const BufferView&, double) const override {}
};

TEST(Optimizers, AdamOnADeviceIsAConfigError) {
  const FakeDeviceSpace device;
  Buffer w(device, DType::kF32, 4);
  EXPECT_THROW(create("adam", {}, w), ConfigError);
  EXPECT_NO_THROW(create("momentum", {}, w));
}

}  // namespace
}  // namespace bagua
