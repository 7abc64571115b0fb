#include "experiments/results.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "experiments/quantity.h"
#include "tests/experiments/fake_components.h"

namespace bagua::experiments {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

IterationRecord record(int64_t i, double begin_ms, double end_ms, double compute_ms, double loss,
                       double full_loss = kNaN, double test_accuracy = kNaN) {
  IterationRecord r;
  r.iteration = i;
  r.begin = Time::ms(begin_ms);
  r.end = Time::ms(end_ms);
  r.compute = Time::ms(compute_ms);
  r.loss = loss;
  r.full_loss = full_loss;
  r.test_accuracy = test_accuracy;
  return r;
}

// Two ranks, three iterations; rank 1 is 1 ms behind rank 0 throughout.
std::vector<TrainResult> two_ranks() {
  TrainResult a;
  a.rank = 0;
  a.iterations = {record(0, 0, 10, 6, 1.0), record(1, 10, 22, 6, 0.75),
                  record(2, 22, 34, 6, 0.5, 0.5, 0.8)};
  a.finish = Time::ms(34);
  TrainResult b;
  b.rank = 1;
  b.iterations = {record(0, 0, 11, 6, 3.0), record(1, 11, 23, 7, 2.25),
                  record(2, 23, 35, 5, 1.0, 0.75, 0.7)};
  b.finish = Time::ms(35);
  return {a, b};
}

TEST(Results, MetricsFollowTheSlowestRank) {
  const PointMetrics m = compute_metrics(two_ranks(), /*batch_size=*/8, /*optimal_loss=*/kNaN);
  EXPECT_EQ(m.world_size, 2);
  EXPECT_EQ(m.iterations, 3);
  EXPECT_EQ(m.slowest_rank, 1);  // its last iteration ends at 35 ms, rank 0's at 34 ms
  // (35 ms - 11 ms) / (3 - 1) = 12 ms per iteration; compute (7 + 5) / 2 = 6 ms; exposed 12 - 6 = 6 ms.
  EXPECT_DOUBLE_EQ(m.time_per_iteration_s, 0.012);
  EXPECT_DOUBLE_EQ(m.compute_per_iteration_s, 0.006);
  EXPECT_DOUBLE_EQ(m.exposed_comm_per_iteration_s, 0.006);
  // 2 ranks x 8 samples / 12 ms.
  EXPECT_DOUBLE_EQ(m.samples_per_s, 16 / 0.012);
  ASSERT_EQ(m.rows.size(), 3u);
  EXPECT_DOUBLE_EQ(m.rows[0].time_s, 0.011);
  EXPECT_DOUBLE_EQ(m.rows[0].iteration_s, 0.011);
  EXPECT_DOUBLE_EQ(m.rows[0].compute_s, 0.006);
  EXPECT_DOUBLE_EQ(m.rows[0].exposed_comm_s, 0.005);
  EXPECT_DOUBLE_EQ(m.rows[1].loss, (0.75 + 2.25) / 2);
  EXPECT_TRUE(std::isnan(m.rows[1].full_loss));
  EXPECT_DOUBLE_EQ(m.rows[2].full_loss, (0.5 + 0.75) / 2);
  EXPECT_DOUBLE_EQ(m.final_loss, (0.5 + 1.0) / 2);
  EXPECT_DOUBLE_EQ(m.final_full_loss, 0.625);
  // Test accuracy: the mean over ranks, and its spread (smallest and largest rank's).
  EXPECT_TRUE(std::isnan(m.rows[1].test_accuracy));
  EXPECT_DOUBLE_EQ(m.rows[2].test_accuracy, (0.8 + 0.7) / 2);
  EXPECT_DOUBLE_EQ(m.rows[2].test_accuracy_min, 0.7);
  EXPECT_DOUBLE_EQ(m.rows[2].test_accuracy_max, 0.8);
  EXPECT_DOUBLE_EQ(m.final_test_accuracy, 0.75);
  EXPECT_TRUE(std::isnan(m.optimal_loss));
}

// schedule.measured_from: the warm-up iterations before it are left out. Slowest rank 1: from 2, the
// span is 35 - 23 = 12 ms over 1 iteration, compute 5 ms; from 0, it starts at the begin of iteration
// 0: 35 ms over 3, compute (6 + 7 + 5) / 3 = 6 ms.
TEST(Results, MeasuredFromLeavesTheWarmUpOut) {
  const PointMetrics from2 = compute_metrics(two_ranks(), 8, kNaN, /*measured_from=*/2);
  EXPECT_DOUBLE_EQ(from2.time_per_iteration_s, 0.012);
  EXPECT_DOUBLE_EQ(from2.compute_per_iteration_s, 0.005);
  EXPECT_DOUBLE_EQ(from2.exposed_comm_per_iteration_s, 0.007);
  EXPECT_EQ(from2.rows.size(), 3u);  // every iteration is still listed
  const PointMetrics from0 = compute_metrics(two_ranks(), 8, kNaN, 0);
  EXPECT_DOUBLE_EQ(from0.time_per_iteration_s, 0.035 / 3);
  EXPECT_DOUBLE_EQ(from0.compute_per_iteration_s, 0.006);
  // The default is 1, as before.
  EXPECT_EQ(compute_metrics(two_ranks(), 8, kNaN, 1).time_per_iteration_s,
            compute_metrics(two_ranks(), 8, kNaN).time_per_iteration_s);
}

TEST(Results, OneIterationUsesItsDuration) {
  TrainResult a;
  a.iterations = {record(0, 2, 9, 4, kNaN)};
  const PointMetrics m = compute_metrics({a}, 1, 0.25);
  EXPECT_DOUBLE_EQ(m.time_per_iteration_s, 0.007);
  EXPECT_DOUBLE_EQ(m.compute_per_iteration_s, 0.004);
  EXPECT_TRUE(std::isnan(m.final_loss));  // a profile workload has no loss
  EXPECT_DOUBLE_EQ(m.optimal_loss, 0.25);
  EXPECT_EQ(iterations_csv(m),
            "iteration,time_s,iteration_s,compute_s,exposed_comm_s,loss,full_loss,test_accuracy,"
            "test_accuracy_min,test_accuracy_max,test_accuracy_avg_model\n"
            "0,0.009,0.007,0.004,0.003,,,,,,\n");
}

TEST(Results, IterationsCsvIsExact) {
  const PointMetrics m = compute_metrics(two_ranks(), 8, kNaN);
  EXPECT_EQ(iterations_csv(m),
            "iteration,time_s,iteration_s,compute_s,exposed_comm_s,loss,full_loss,test_accuracy,"
            "test_accuracy_min,test_accuracy_max,test_accuracy_avg_model\n"
            "0,0.011,0.011,0.006,0.005,2,,,,,\n"
            "1,0.023,0.012,0.007,0.005,1.5,,,,,\n"
            "2,0.035,0.012,0.005,0.007,0.75,0.625,0.75,0.7,0.8,\n");
  EXPECT_TRUE(std::isnan(m.final_test_accuracy_avg_model));
}

TEST(Results, TheAveragedModelsAccuracyIsItsOwnColumn) {
  // The averaged model's accuracy of each iteration (NaN: not evaluated) goes beside the replicas'
  // mean, smallest and largest, unchanged; the last one is the summary's.
  const std::vector<double> averaged = {kNaN, kNaN, 0.76};
  const PointMetrics m = compute_metrics(two_ranks(), 8, kNaN, -1, averaged);
  EXPECT_TRUE(std::isnan(m.rows[1].test_accuracy_avg_model));
  EXPECT_EQ(m.rows[2].test_accuracy_avg_model, 0.76);
  EXPECT_EQ(m.rows[2].test_accuracy, 0.75);
  EXPECT_EQ(m.final_test_accuracy_avg_model, 0.76);
  const std::string csv = iterations_csv(m);
  EXPECT_EQ(csv.substr(csv.rfind("2,0.035")),
            "2,0.035,0.012,0.005,0.007,0.75,0.625,0.75,0.7,0.8,0.76\n");
}

TEST(Results, RowComesFromTheSummaryAlone) {
  static const auto components = testing::fake_components();
  Json config = parse_json(testing::fake_config_text(), "t");
  config["sweep"] = parse_json(R"({"axes": {"cluster.nic.bandwidth": ["10 Gbps"], "seed": [3]}})", "t");
  const Experiment e = load_experiment_json(config, ".", {}, *components);
  const PointConfig& p = e.points[0];
  const PointMetrics m = compute_metrics(two_ranks(), 8, kNaN);
  const Json summary = summary_json(p, m);
  // Through text and back, as a resumed run reads it.
  const Json reread = parse_json(summary.dump(2), "summary.json");
  EXPECT_EQ(results_row(reread, e.axes), results_row(summary, e.axes));
  EXPECT_EQ(csv_line(results_header(e.axes)),
            "point,cluster.nic.bandwidth,seed,runtime,world_size,algorithm_name,time_per_iteration_s,"
            "compute_per_iteration_s,exposed_comm_per_iteration_s,final_loss,final_full_loss,samples_"
            "per_s,status,error\n");
  EXPECT_EQ(csv_line(results_row(summary, e.axes)),
            p.id + ",10 Gbps,3,sim,2,toy_allreduce,0.012,0.006,0.006,0.75,0.625," +
                shortest(16 / 0.012) + ",ok,\n");
  EXPECT_TRUE(summary["optimal_loss"].is_null());
  EXPECT_EQ(summary["final_test_accuracy"], 0.75);
  EXPECT_TRUE(summary["final_test_accuracy_avg_model"].is_null());
  EXPECT_TRUE(is_summary_of(reread, p.id));
  EXPECT_FALSE(is_summary_of(reread, "p001-00000000"));
  EXPECT_FALSE(is_summary_of(parse_json(R"({"point": ")" + p.id + R"("})", "t"), p.id));
  EXPECT_EQ(summary["config"], p.resolved);
}

TEST(Results, CsvQuotesWhatNeedsIt) {
  EXPECT_EQ(csv_line({"a", "b,c", "say \"hi\"", ""}), "a,\"b,c\",\"say \"\"hi\"\"\",\n");
}

TEST(Results, TrainResultRoundTripsThroughBytes) {
  const TrainResult r = two_ranks()[1];
  const std::vector<uint8_t> bytes = serialize(r);
  EXPECT_EQ(bytes.size(), 8 + 8 + 3 * 56 + 8u);
  const TrainResult back = deserialize(bytes);
  EXPECT_EQ(back.rank, 1);
  EXPECT_EQ(back.finish, r.finish);
  ASSERT_EQ(back.iterations.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back.iterations[i].begin, r.iterations[i].begin);
    EXPECT_EQ(back.iterations[i].end, r.iterations[i].end);
    EXPECT_EQ(back.iterations[i].compute, r.iterations[i].compute);
    EXPECT_EQ(back.iterations[i].loss, r.iterations[i].loss);
  }
  EXPECT_TRUE(std::isnan(back.iterations[0].full_loss));
  EXPECT_EQ(back.iterations[2].full_loss, 0.75);
  EXPECT_TRUE(std::isnan(back.iterations[1].test_accuracy));
  EXPECT_EQ(back.iterations[2].test_accuracy, 0.7);
}

}  // namespace
}  // namespace bagua::experiments
