#include "core/models/random.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

namespace bagua {
namespace {

constexpr int kDraws = 200000;

TEST(Random, SameSeedSameSequenceAndStreamsDiffer) {
  Rng a(42), b(42), c(derive_seed(42, 1));
  for (int i = 0; i < 100; ++i) {
    const double x = a.normal();
    EXPECT_EQ(x, b.normal()) << "draw " << i;
  }
  EXPECT_NE(derive_seed(42, 1), derive_seed(42, 2));
  EXPECT_NE(derive_seed(42, 1), derive_seed(43, 1));
  EXPECT_NE(Rng(derive_seed(42, 1)).next(), Rng(derive_seed(42, 2)).next());
  (void)c;
}

TEST(Random, Mt19937_64IsTheStandardEngine) {
  // The C++ standard fixes the 10000th output of a default-seeded mt19937_64 ([rand.predef]).
  Rng r(5489u);
  uint64_t x = 0;
  for (int i = 0; i < 10000; ++i)
    x = r.next();
  EXPECT_EQ(x, 9981545732273789042ull);
}

TEST(Random, UniformMomentsAndRange) {
  Rng r(1);
  double sum = 0, sum2 = 0;
  for (int i = 0; i < kDraws; ++i) {
    const double u = r.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    sum2 += u * u;
  }
  // U(0,1): mean 1/2, variance 1/12; the standard error of the mean is 0.29 / sqrt(2e5) = 6.5e-4.
  EXPECT_NEAR(sum / kDraws, 0.5, 0.004);
  EXPECT_NEAR(sum2 / kDraws - 0.25, 1.0 / 12.0, 0.004);
}

TEST(Random, BelowIsUniform) {
  Rng r(2);
  std::vector<int> counts(7, 0);
  for (int i = 0; i < 70000; ++i)
    ++counts[r.below(7)];
  // Each count is Binomial(70000, 1/7): mean 10000, standard deviation 93.
  for (int k = 0; k < 7; ++k)
    EXPECT_NEAR(counts[static_cast<size_t>(k)], 10000, 500) << "value " << k;
}

TEST(Random, NormalMoments) {
  Rng r(3);
  double sum = 0, sum2 = 0, sum4 = 0;
  for (int i = 0; i < kDraws; ++i) {
    const double x = r.normal();
    sum += x;
    sum2 += x * x;
    sum4 += x * x * x * x;
  }
  // N(0,1): mean 0, variance 1, fourth moment 3; standard errors 2.2e-3, 3.2e-3, 2.4e-2.
  EXPECT_NEAR(sum / kDraws, 0.0, 0.015);
  EXPECT_NEAR(sum2 / kDraws, 1.0, 0.02);
  EXPECT_NEAR(sum4 / kDraws, 3.0, 0.15);
}

TEST(Random, GammaMeanAndVarianceEqualShape) {
  for (double shape : {0.1, 0.5, 1.0, 2.5, 10.0}) {
    Rng r(4);
    double sum = 0, sum2 = 0;
    for (int i = 0; i < kDraws; ++i) {
      const double x = std::exp(r.log_gamma(shape));
      sum += x;
      sum2 += x * x;
    }
    const double mean = sum / kDraws;
    const double var = sum2 / kDraws - mean * mean;
    // Gamma(a, 1): mean a, variance a. Standard error of the mean sqrt(a / 2e5).
    EXPECT_NEAR(mean, shape, 6 * std::sqrt(shape / kDraws)) << "shape " << shape;
    EXPECT_NEAR(var, shape, 0.06 * shape + 0.01) << "shape " << shape;
  }
}

TEST(Random, TinyShapeGammaDoesNotUnderflow) {
  Rng r(5);
  for (int i = 0; i < 1000; ++i) {
    const double l = r.log_gamma(0.001);
    ASSERT_TRUE(std::isfinite(l));
  }
}

TEST(Random, DirichletSumsToOneWithMeanOneOverK) {
  Rng r(6);
  const int k = 5;
  std::vector<double> mean(k, 0.0);
  const int draws = 20000;
  for (int i = 0; i < draws; ++i) {
    const std::vector<double> p = r.dirichlet(0.7, k);
    ASSERT_NEAR(std::accumulate(p.begin(), p.end(), 0.0), 1.0, 1e-12);
    for (int j = 0; j < k; ++j)
      mean[static_cast<size_t>(j)] += p[static_cast<size_t>(j)] / draws;
  }
  // Dir(alpha 1_k): E p_j = 1/k; Var p_j = (1/k)(1 - 1/k) / (k alpha + 1) = 0.0356, standard
  // error 1.3e-3.
  for (int j = 0; j < k; ++j)
    EXPECT_NEAR(mean[static_cast<size_t>(j)], 0.2, 0.008);
  // Tiny alpha: still a distribution (computed in logarithms), concentrated on one category.
  const std::vector<double> p = r.dirichlet(0.001, 8);
  EXPECT_NEAR(std::accumulate(p.begin(), p.end(), 0.0), 1.0, 1e-12);
  EXPECT_GT(*std::max_element(p.begin(), p.end()), 0.99);
}

TEST(Random, ShuffleIsAPermutation) {
  Rng r(7);
  std::vector<int> v(1000);
  std::iota(v.begin(), v.end(), 0);
  r.shuffle(v);
  std::vector<int> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 1000; ++i)
    ASSERT_EQ(sorted[static_cast<size_t>(i)], i);
  int fixed = 0;
  for (int i = 0; i < 1000; ++i)
    fixed += v[static_cast<size_t>(i)] == i;
  EXPECT_LT(fixed, 10);  // a uniform permutation has 1 fixed point on average
}

}  // namespace
}  // namespace bagua
