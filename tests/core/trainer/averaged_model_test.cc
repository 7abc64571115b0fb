// The averaged model (core/trainer/averaged_model.h): the mean of the ranks' evaluated weights, summed
// in rank order and divided once, and the test accuracy of that mean at each evaluated iteration, on
// rank 0 of every backend.
#include "core/trainer/averaged_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "tests/support/worlds.h"

namespace bagua {
namespace {

// A model whose "test accuracy" is its first weight, so that the averaged model's accuracy is the
// mean of the ranks' first weights.
class FirstWeightModel final : public Model {
 public:
  explicit FirstWeightModel(size_t n) : n_(n) {}
  const std::vector<Layer>& layers() const override { return layers_; }
  size_t num_params() const override { return n_; }
  bool materialized() const override { return true; }
  void init_weights(const BufferView&) const override {}
  double forward_backward(const BufferView&, const BufferView&, int64_t,
                          const std::function<void(int)>&) override {
    return 0;
  }
  double test_accuracy(const BufferView& w) const override { return w.as<float>()[0]; }
  bool has_test_set() const override { return true; }

 private:
  size_t n_;
  std::vector<Layer> layers_;
};

TEST(AveragedModel, RankZeroGetsTheAccuracyOfTheMeanAtEachEvaluation) {
  // 3 ranks, 4 iterations, evaluated after iterations 1 and 3. Rank r's weights there: {r + k, 7}
  // for the k-th evaluation. Means: (0 + 1 + 2) / 3 + k = 1 and 2; iterations 0 and 2: NaN.
  for (testing::Backend backend : testing::all_backends()) {
    std::vector<double> on_rank_zero;
    std::vector<size_t> elsewhere(3, 99);
    testing::run_ranks(backend, 3, [&](RankContext& ctx) {
      const int r = ctx.transport().rank();
      TrainResult mine;
      mine.rank = r;
      mine.iterations.resize(4);
      for (int64_t i = 0; i < 4; ++i)
        mine.iterations[static_cast<size_t>(i)].iteration = i;
      mine.evaluated_weights = {{1, {static_cast<float>(r), 7.0f}},
                                {3, {static_cast<float>(r + 1), 7.0f}}};
      const FirstWeightModel model(2);
      std::vector<double> accuracy = averaged_model_accuracy(ctx.transport(), model, mine);
      if (r == 0)
        on_rank_zero = std::move(accuracy);
      else
        elsewhere[static_cast<size_t>(r)] = accuracy.size();
    });
    SCOPED_TRACE(testing::to_string(backend));
    ASSERT_EQ(on_rank_zero.size(), 4u);
    EXPECT_TRUE(std::isnan(on_rank_zero[0]));
    EXPECT_EQ(on_rank_zero[1], 1.0);
    EXPECT_TRUE(std::isnan(on_rank_zero[2]));
    EXPECT_EQ(on_rank_zero[3], 2.0);
    EXPECT_EQ(elsewhere[1], 0u);
    EXPECT_EQ(elsewhere[2], 0u);
  }
}

TEST(AveragedModel, AgreeingReplicasAverageToThemselvesBitForBit) {
  // P w is exact in double for a float w (24-bit significand, P < 2^29), and (P w) / P = w: the
  // average of equal replicas is the replica, whatever its values (tiny, huge, negative, 0.1).
  const std::vector<float> w = {0.1f, -3.3f, 1e-30f, 3.0e38f, -0.0f, 1.0f / 3.0f};
  for (size_t ranks : {1u, 2u, 3u, 7u, 32u}) {
    const std::vector<float> avg = average_replicas(std::vector<std::vector<float>>(ranks, w));
    ASSERT_EQ(avg.size(), w.size());
    EXPECT_EQ(std::memcmp(avg.data(), w.data(), w.size() * sizeof(float)), 0) << ranks << " ranks";
  }
  // Unequal replicas: 0.1f, 0.2f, 0.3f are 0.10000000149, 0.20000000298, 0.30000001192; their double
  // sum 0.60000001639, divided by 3: 0.20000000546, nearest float 0.2f (0.20000000298; the next one up
  // is 0.20000001788).
  EXPECT_EQ(average_replicas({{0.1f}, {0.2f}, {0.3f}})[0], 0.2f);
}

}  // namespace
}  // namespace bagua
