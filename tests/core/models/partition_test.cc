#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "core/check.h"
#include "core/models/dataset.h"

namespace bagua {
namespace {

std::vector<std::vector<int>> histograms(const Partition& p, const std::vector<int32_t>& labels,
                                         int classes) {
  std::vector<std::vector<int>> h(static_cast<size_t>(p.world_size()),
                                  std::vector<int>(static_cast<size_t>(classes)));
  for (int r = 0; r < p.world_size(); ++r)
    for (int64_t i : p.shard(r))
      ++h[static_cast<size_t>(r)][static_cast<size_t>(labels[static_cast<size_t>(i)])];
  return h;
}

TEST(Partition, IidDealsConsecutiveBlocks) {
  const Partition p = Partition::iid(/*samples=*/50, /*world_size=*/3, /*batch_size=*/4);
  std::vector<int64_t> batch;
  for (int64_t t : {0, 1, 4, 5, 9}) {
    for (int r = 0; r < 3; ++r) {
      p.batch(r, t, batch);
      ASSERT_EQ(batch.size(), 4u);
      for (int64_t j = 0; j < 4; ++j)
        EXPECT_EQ(batch[static_cast<size_t>(j)], ((t * 3 + r) * 4 + j) % 50)
            << "step " << t << " rank " << r;
    }
  }
  EXPECT_TRUE(p.shard(0).empty());
}

TEST(Partition, DirichletShardsPartitionTheData) {
  const Dataset d = make_gaussian_mixture(1000, 4, 10, 1, 1.0, 11);
  for (double alpha : {0.05, 1.0, 100.0}) {
    const Partition p = Partition::dirichlet(d.labels, 10, 7, 16, alpha, 11);
    std::vector<int64_t> all;
    for (int r = 0; r < 7; ++r) {
      EXPECT_FALSE(p.shard(r).empty()) << "rank " << r << " alpha " << alpha;
      all.insert(all.end(), p.shard(r).begin(), p.shard(r).end());
    }
    std::sort(all.begin(), all.end());
    ASSERT_EQ(all.size(), 1000u) << "alpha " << alpha;
    for (int64_t i = 0; i < 1000; ++i)
      ASSERT_EQ(all[static_cast<size_t>(i)], i) << "alpha " << alpha;
  }
}

TEST(Partition, DirichletBatchesCycleThroughTheOwnShard) {
  const Dataset d = make_gaussian_mixture(300, 4, 3, 1, 1.0, 5);
  const Partition p = Partition::dirichlet(d.labels, 3, 4, 8, 0.5, 5);
  std::vector<int64_t> batch;
  for (int r = 0; r < 4; ++r) {
    const std::vector<int64_t>& own = p.shard(r);
    const int64_t n = static_cast<int64_t>(own.size());
    for (int64_t t : {0, 1, 7, 100}) {
      p.batch(r, t, batch);
      for (int64_t j = 0; j < 8; ++j)
        EXPECT_EQ(batch[static_cast<size_t>(j)], own[static_cast<size_t>((t * 8 + j) % n)])
            << "rank " << r;
    }
  }
}

TEST(Partition, SmallAlphaSkewsLabelsLargeAlphaDoesNot) {
  const int classes = 10, ranks = 8;
  const Dataset d = make_gaussian_mixture(4000, 4, classes, 1, 1.0, 3);

  // The effective number of classes of a rank, 1 / sum_c p_c^2 (p_c its class fractions): 10 for a
  // balanced mix of 10 classes, 1 for a single class. alpha = 0.05: each class's proportions
  // concentrate on about one rank, so the 10 classes spread over 8 ranks leave each rank with one to
  // three of them (alpha -> 0: every class whole on one rank, 1.25 classes per rank on average).
  auto effective_classes = [&](const Partition& p) {
    double mean = 0;
    for (const std::vector<int>& h : histograms(p, d.labels, classes)) {
      const double total = std::accumulate(h.begin(), h.end(), 0);
      double simpson = 0;
      for (int n : h)
        simpson += (n / total) * (n / total);
      mean += 1.0 / simpson / ranks;
    }
    return mean;
  };
  const Partition skewed = Partition::dirichlet(d.labels, classes, ranks, 32, 0.05, 3);
  EXPECT_LT(effective_classes(skewed), 4.0);

  // alpha = 1000: proportions within ~0.004 of 1/8 per class, so every rank's histogram is near the
  // balanced 1/10 per class (400 samples per class, ~50 per rank and class).
  const Partition uniform = Partition::dirichlet(d.labels, classes, ranks, 32, 1000.0, 3);
  EXPECT_GT(effective_classes(uniform), 9.5);
  for (const std::vector<int>& h : histograms(uniform, d.labels, classes)) {
    const double total = std::accumulate(h.begin(), h.end(), 0);
    for (int c = 0; c < classes; ++c)
      EXPECT_NEAR(h[static_cast<size_t>(c)] / total, 0.1, 0.03) << "class " << c;
  }
}

TEST(Partition, EveryRankGetsASampleEvenWithManyRanks) {
  const Dataset d = make_gaussian_mixture(200, 2, 10, 1, 1.0, 9);
  const Partition p = Partition::dirichlet(d.labels, 10, 64, 4, 0.01, 9);
  size_t total = 0;
  for (int r = 0; r < 64; ++r) {
    EXPECT_FALSE(p.shard(r).empty()) << "rank " << r;
    total += p.shard(r).size();
  }
  EXPECT_EQ(total, 200u);
  EXPECT_THROW(Partition::dirichlet(d.labels, 10, 201, 4, 0.5, 9), ConfigError);
}

TEST(Partition, DirichletIsDeterministicInTheSeed) {
  const Dataset d = make_gaussian_mixture(500, 2, 5, 1, 1.0, 1);
  const Partition a = Partition::dirichlet(d.labels, 5, 4, 8, 0.3, 77);
  const Partition b = Partition::dirichlet(d.labels, 5, 4, 8, 0.3, 77);
  const Partition c = Partition::dirichlet(d.labels, 5, 4, 8, 0.3, 78);
  bool differs = false;
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(a.shard(r), b.shard(r));
    differs |= a.shard(r) != c.shard(r);
  }
  EXPECT_TRUE(differs);
}

TEST(Dataset, RegressionQuantileLabelsAreBalancedAndOrdered) {
  const Dataset d = make_regression_data(1000, 3, 0.1, 10, 4);
  std::vector<int> counts(10, 0);
  std::vector<float> lo(10, 1e30f), hi(10, -1e30f);
  for (int64_t i = 0; i < 1000; ++i) {
    const int c = d.labels[static_cast<size_t>(i)];
    ++counts[static_cast<size_t>(c)];
    lo[static_cast<size_t>(c)] = std::min(lo[static_cast<size_t>(c)], d.y(i));
    hi[static_cast<size_t>(c)] = std::max(hi[static_cast<size_t>(c)], d.y(i));
  }
  for (int c = 0; c < 10; ++c)
    EXPECT_EQ(counts[static_cast<size_t>(c)], 100) << "bucket " << c;
  for (int c = 0; c + 1 < 10; ++c)
    EXPECT_LE(hi[static_cast<size_t>(c)], lo[static_cast<size_t>(c + 1)]) << "bucket " << c;
}

TEST(Dataset, GaussianMixtureIsBalancedAndSeeded) {
  const Dataset a = make_gaussian_mixture(999, 5, 3, 2, 2.0, 8);
  const Dataset b = make_gaussian_mixture(999, 5, 3, 2, 2.0, 8);
  const Dataset c = make_gaussian_mixture(999, 5, 3, 2, 2.0, 9);
  std::vector<int> counts(3, 0);
  for (int32_t l : a.labels)
    ++counts[static_cast<size_t>(l)];
  EXPECT_EQ(counts, (std::vector<int>{333, 333, 333}));
  EXPECT_EQ(a.x, b.x);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_NE(a.x, c.x);
  // Shuffled once: labels are not in the generation order 0, 1, 2, 0, 1, 2, ...
  int in_order = 0;
  for (size_t i = 0; i < a.labels.size(); ++i)
    in_order += a.labels[i] == static_cast<int32_t>(i % 3);
  EXPECT_LT(in_order, 500);
}

}  // namespace
}  // namespace bagua
