// The baselines on the synthetic suite: the exact ones train the baseline's model, and DDP's own
// relaxations (its 16-bit hooks and PowerSGD) converge within bounds stated from theory.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "experiments/cli.h"
#include "tests/convergence/harness.h"
#include "tests/convergence/settings.h"

namespace bagua::convergence {
namespace {

Outcome linear(const std::string& algorithm) {
  return run(config_text(kLinear, algorithm, kLinearLr, kIterations));
}

// The linear regression of settings.h with 64 features in one layer (65 parameters with the bias): a
// layer PowerSGD compresses, as a 9 x 9 matrix (2 x 9 x 1 x min_compression_rate 2 = 36 < 65). The
// Hessian's spectrum, about [(1 - sqrt(64/4096))^2, (1 + sqrt(64/4096))^2] = [0.77, 1.27], keeps lr
// 0.05 well inside SGD's stable range.
constexpr const char* kLinearWide =
    R"({"name": "linear_regression", "batch_size": 16, "features": 64, "samples": 4096,
        "noise": 0.1, "layers": 1})";

Outcome wide(const std::string& algorithm) {
  return run(config_text(kLinearWide, algorithm, kLinearLr, kIterations));
}

TEST(Baselines, ExactBaselinesTrainTheBaselinesModel) {
  // ddp without a hook, horovod and byteps average exactly what gradient_allreduce averages, summed in
  // another order (NCCL's ring chunks, fused groups, servers adding hosts' partitions; DDP divides
  // before the sum): the same iterates to float rounding, every rank on the same weights.
  const Outcome baseline = linear(kBaseline);
  ASSERT_LT(baseline.mean_gap(), 1e-4);
  for (const std::string algorithm : {
           R"({"name": "ddp"})",
           R"({"name": "horovod"})",
           R"({"name": "horovod", "hierarchical": true})",
           R"({"name": "byteps"})",
       }) {
    SCOPED_TRACE(algorithm);
    const Outcome o = linear(algorithm);
    EXPECT_EQ(o.spread(), 0.0);
    EXPECT_LT(relative_distance(o.final_weights[0], baseline.final_weights[0]), 1e-5);
    EXPECT_NEAR(o.mean_gap(), baseline.mean_gap(), 1e-3 * baseline.mean_gap());
  }
}

TEST(Baselines, SixteenBitHooksReachTheBaseline) {
  // fp16 and bf16 (DDP's fp16_compress_hook and bf16_compress_hook; Horovod's Compression.fp16): a
  // cast's error is relative to the value cast (half an ulp: 2^-11 for fp16, 2^-8 for bf16) and the
  // sums are rounded likewise, so the error of the averaged gradient vanishes with the gradient, as
  // MinMax uint8's does (compression_test.cc): the bound is the final gap within 1.5x the baseline's.
  // A hook that sent nothing would leave the gap at its initial 0.5.
  const Outcome baseline = linear(kBaseline);
  for (const std::string algorithm : {
           R"({"name": "ddp", "comm_hook": "fp16"})",
           R"({"name": "ddp", "comm_hook": "bf16"})",
           R"({"name": "horovod", "compression": "fp16"})",
       }) {
    SCOPED_TRACE(algorithm);
    const Outcome o = linear(algorithm);
    EXPECT_EQ(o.spread(), 0.0);  // every rank decodes the same 16-bit sum
    EXPECT_LT(o.mean_gap(), 1.5 * baseline.mean_gap());
  }
}

TEST(Baselines, PowerSgdWithErrorFeedbackReachesTheBaselineAndWithoutFallsBehind) {
  // PowerSGD rank 1 (Vogels et al., NeurIPS 2019) is a biased, contractive compressor: one step of
  // power iteration keeps a part of every matrix. With error feedback what is not sent is carried to
  // the next step, so the sum of what was sent tracks the sum of the gradients up to the current
  // error, and SGD's rate is kept up to an O(lr^2) term (Karimireddy et al., "Error Feedback Fixes
  // SignSGD", ICML 2019, Thm. II; Vogels et al. Sec. 3 rely on it): the bound is the final gap within
  // 1.5x the baseline's, as for the error-feedback compressors of compression_test.cc. Without it a
  // rank-1 approximation of the 9 x 9 gradient drops most of each step for good, and the iterates lag:
  // a gap at least 20x the baseline's. Both start after 10 vanilla steps (PyTorch recommends about
  // 10% of training: PowerSGDState's documentation).
  const Outcome baseline = wide(kBaseline);
  ASSERT_LT(baseline.mean_gap(), 1e-3);
  const Outcome ef = wide(R"({"name": "ddp", "comm_hook": "powersgd", "powersgd_start_iter": 10})");
  EXPECT_EQ(ef.spread(), 0.0);  // P and Q are averaged: every rank decompresses the same M
  EXPECT_LT(ef.mean_gap(), 1.5 * baseline.mean_gap());
  const Outcome plain = wide(
      R"({"name": "ddp", "comm_hook": "powersgd", "powersgd_start_iter": 10,
          "powersgd_error_feedback": false})");
  EXPECT_GT(plain.mean_gap(), 20 * baseline.mean_gap());
  EXPECT_GT(plain.mean_gap(), 20 * ef.mean_gap());
}

TEST(Baselines, EachBaselinesConfigRunsThroughBaguaRun) {
  // configs/baselines/{ddp,horovod,byteps,byteps_cpu_servers}.json, through the `bagua run` command
  // line, shrunk to 2 hosts of 8 GPUs (byteps_cpu_servers keeps its 16 CPU hosts) and 2 iterations:
  // every point of each sweep runs and writes its row.
  namespace fs = std::filesystem;
  const char* env = std::getenv("BAGUA_SOURCE_DIR");
  const fs::path source =
      env ? fs::path(env) : fs::path(__FILE__).parent_path().parent_path().parent_path();
  const fs::path out = fs::temp_directory_path() / "bagua_baselines_configs_test";
  fs::remove_all(out);
  for (const auto& [name, points] : std::vector<std::pair<std::string, int>>{
           {"ddp", 5}, {"horovod", 4}, {"byteps", 2}, {"byteps_cpu_servers", 1}}) {
    SCOPED_TRACE(name);
    const std::string config = (source / "configs" / "baselines" / (name + ".json")).string();
    const std::string dir = (out / name).string();
    std::vector<std::string> args{"bagua", "run",
                                  config,  "--out",
                                  dir,     "--quiet",
                                  "--set", "cluster.hosts=2",
                                  "--set", "schedule.iterations=2"};
    std::vector<char*> argv;
    for (std::string& a : args)
      argv.push_back(a.data());
    ASSERT_EQ(experiments::run_cli(static_cast<int>(argv.size()), argv.data()), 0);
    std::ifstream csv(fs::path(dir) / "results.csv");
    int lines = 0;
    for (std::string line; std::getline(csv, line);)
      ++lines;
    EXPECT_EQ(lines, points + 1);  // the header and one row per point
  }
  fs::remove_all(out);
}

}  // namespace
}  // namespace bagua::convergence
