// Local SGD and asynchronous model averaging: every rank takes local steps and the weights are averaged
// now and then. On IID data little is lost; on skewed shards the ranks drift towards their own optima
// between averages (client drift).
#include <gtest/gtest.h>

#include <string>

#include "tests/convergence/harness.h"
#include "tests/convergence/settings.h"

namespace bagua::convergence {
namespace {

std::string local_sgd(int period) {
  return R"({"name": "local_sgd", "period": )" + std::to_string(period) + "}";
}

TEST(LocalSgd, OnIidDataLongPeriodsStayNearTheBaseline) {
  // Every rank's data is a sample of the same distribution, so the local models differ only by their
  // batch noise, which the average removes; on least squares, whose gradient is linear, the average of
  // H local steps is H steps with the averaged gradient up to the batch Hessians' differences. The
  // bound: within 1.5x the baseline's gap for H = 8 and 32 (192 is a multiple of both: the final
  // weights are an average).
  const Outcome baseline = run(config_text(kLinear, kBaseline, kLinearLr, kIterations));
  for (int period : {8, 32}) {
    const Outcome o = run(config_text(kLinear, local_sgd(period), kLinearLr, kIterations));
    EXPECT_EQ(o.spread(), 0.0) << "H = " << period << ": the final weights are an average";
    EXPECT_LT(o.mean_gap(), 1.5 * baseline.mean_gap()) << "H = " << period;
  }
}

TEST(LocalSgd, OnSkewedShardsDriftGrowsWithThePeriod) {
  // On the Dirichlet shards every rank minimizes its own shard loss f_r between averages. What data-
  // parallel SGD minimizes there is F = (1/P) sum_r f_r (ranks weigh equally, whatever their shard's
  // size), so we measure the gap to F's exact optimum. Local SGD's fixed point moves away from it as H
  // grows: after an average every rank heads for its own optimum, and the next average lands off F's
  // optimum by O(lr H zeta) (zeta: how much the shard gradients disagree there; Karimireddy et al.,
  // SCAFFOLD, ICML 2020, client drift), a gap of O(lr^2 H^2 zeta^2). The bounds: H = 1 is SGD; the gap
  // grows with H, by more than 10x at H = 32; and it is second order in lr: halving lr (over twice the
  // steps, to the same convergence) divides the H = 32 gap by more than 3 (4 for the drift term, 2 for
  // SGD's own floor). On IID data (the test above) the same H = 32 costs less than 1.5x.
  auto rank_weighted_gap = [](int period, double lr, int iterations = kIterations) {
    const Outcome o = run(config_text(kLinearSkewed, local_sgd(period), lr, iterations));
    return RankWeighted(o).gap(o.average());
  };
  const double h1 = rank_weighted_gap(1, kLinearLr);
  const double h8 = rank_weighted_gap(8, kLinearLr);
  const double h32 = rank_weighted_gap(32, kLinearLr);
  EXPECT_LT(h1, 2e-5);  // SGD's floor on F
  EXPECT_GT(h8, 1.5 * h1);
  EXPECT_GT(h32, 10 * h1);
  EXPECT_GT(h32, h8);
  EXPECT_GT(h32 / rank_weighted_gap(32, kLinearLr / 2, 2 * kIterations), 3.0);
}

TEST(AsyncModelAverage, AveragingInTheBackgroundKeepsTheRanksTogether) {
  // async_model_average averages every sync_interval_ms of simulated time while the ranks keep
  // training. The device is slowed (1 GFLOPS, 10 MB/s) so that an iteration of this model computes for
  // about 0.5 ms and a 1 ms interval spans a few iterations (an averaging round of 8 ranks then takes
  // about 1.5 ms: the interval plus two allreduces). It is then local SGD with a period of a few steps:
  // the bound is the baseline's gap within 2x, and many rounds (over 20 in the run of ~95 ms). With an
  // interval longer than the run (1000 ms: only the round at the start) the ranks train alone, and the
  // mean of their gaps is over 10x the baseline's: what the test would see if averaging were lost.
  const char* slow = R"({"peak_flops": "1 GFLOPS", "memory_bandwidth": "10 MB/s"})";
  auto async = [&](int interval_ms) {
    return run(config_text(
        kLinear,
        R"({"name": "async_model_average", "sync_interval_ms": )" + std::to_string(interval_ms) + "}",
        kLinearLr, kIterations, 2, 4, "", slow));
  };
  const Outcome baseline = run(config_text(kLinear, kBaseline, kLinearLr, kIterations, 2, 4, "", slow));
  const Outcome every_ms = async(1);
  const Outcome alone = async(1000);
  EXPECT_GT(every_ms.async_rounds[0], 20);
  EXPECT_EQ(alone.async_rounds[0], 1);
  EXPECT_LT(every_ms.mean_gap(), 2 * baseline.mean_gap());
  EXPECT_GT(alone.mean_gap(), 10 * baseline.mean_gap());
}

}  // namespace
}  // namespace bagua::convergence
