#include "core/models/profile.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/check.h"

namespace bagua {
namespace {

ProfileSpec small_spec() {
  ProfileSpec s;
  s.name = "tiny";
  s.device = "test device";
  s.batch_size = 8;
  s.source = "made up for the test";
  s.layers = {{"a", 10, Time::us(1), Time::us(2)},
              {"b", 20, Time::us(3), Time::us(6)},
              {"c", 5, Time::us(0.5), Time::us(1)}};
  return s;
}

TEST(Profile, LayersCoverTheParametersAndCarryTheDurations) {
  auto workload = make_profile_workload(small_spec());
  EXPECT_EQ(workload->name(), "tiny");
  auto model = workload->make_model(3);
  EXPECT_FALSE(model->materialized());
  EXPECT_EQ(model->num_params(), 35u);
  const auto& layers = model->layers();
  ASSERT_EQ(layers.size(), 3u);
  EXPECT_EQ(layers[0].offset, 0u);
  EXPECT_EQ(layers[1].offset, 10u);
  EXPECT_EQ(layers[2].offset, 30u);
  EXPECT_EQ(layers[1].count, 20u);
  EXPECT_EQ(layers[1].forward.duration, Time::us(3));
  EXPECT_EQ(layers[1].backward.duration, Time::us(6));
  EXPECT_EQ(layers[1].forward.flops, 0);
}

TEST(Profile, MetaModelCallsReadyInBackwardOrderWithoutArithmetic) {
  auto model = make_profile_workload(small_spec())->make_model(0);
  Buffer w = Buffer::meta(DType::kF32, 35), g = Buffer::meta(DType::kF32, 35);
  model->init_weights(w);
  std::vector<int> order;
  const double loss = model->forward_backward(w, g, 12, [&](int l) { order.push_back(l); });
  EXPECT_TRUE(std::isnan(loss));
  EXPECT_EQ(order, (std::vector<int>{2, 1, 0}));
  EXPECT_TRUE(std::isnan(model->full_loss(w)));
  EXPECT_TRUE(std::isnan(model->optimal_loss()));
}

TEST(Profile, TimesScaleLinearlyWithThePerRankBatch) {
  // Stated at batch 8; at batch 12 every time is 1.5 x: 3 us -> 4.5 us, 0.5 us -> 0.75 us.
  auto model = make_profile_workload(small_spec(), WorkloadSetup{16, 12, 1})->make_model(0);
  EXPECT_EQ(model->layers()[1].forward.duration, Time::ns(4500));
  EXPECT_EQ(model->layers()[2].forward.duration, Time::ns(750));
  EXPECT_EQ(model->layers()[2].backward.duration, Time::ns(1500));
}

TEST(Profile, InvalidSpecsAreConfigErrors) {
  ProfileSpec s = small_spec();
  s.layers.clear();
  EXPECT_THROW(make_profile_workload(s), ConfigError);
  s = small_spec();
  s.layers[1].params = 0;
  try {
    make_profile_workload(s);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("layers[1] ('b')"), std::string::npos) << e.what();
  }
  s = small_spec();
  s.layers[2].backward = Time::ns(-1);
  EXPECT_THROW(make_profile_workload(s), ConfigError);
  s = small_spec();
  s.batch_size = 0;
  EXPECT_THROW(make_profile_workload(s), ConfigError);
}

TEST(Profile, RegistryListsProfileButBuildsItOnlyFromAFile) {
  WorkloadRegistry registry("workload");
  register_workloads(registry);
  for (const char* name : {"linear_regression", "logistic_regression", "mlp", "profile"})
    EXPECT_NE(registry.find(name), nullptr) << name;
  const auto& entry = registry.at("profile");
  EXPECT_NE(entry.schema.find("file"), nullptr);
  EXPECT_THROW(registry.create("profile", Params(entry.schema), WorkloadSetup{}), ConfigError);
}

// ----- The profile files in configs/workloads -----

std::filesystem::path source_root() {
  if (const char* env = std::getenv("BAGUA_SOURCE_DIR")) return env;
  // This file is <root>/tests/core/models/profile_test.cc.
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path().parent_path();
}

nlohmann::json load(const std::string& name) {
  const std::filesystem::path path = source_root() / "configs" / "workloads" / (name + ".json");
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  return nlohmann::json::parse(in);
}

// What the experiments layer does: the JSON fields named in core/models/profile.h into a ProfileSpec.
ProfileSpec to_spec(const nlohmann::json& j) {
  ProfileSpec s;
  s.name = j.at("name").get<std::string>();
  s.device = j.at("device").get<std::string>();
  s.batch_size = j.at("batch_size").get<int64_t>();
  s.source = j.at("source").get<std::string>();
  for (const auto& l : j.at("layers"))
    s.layers.push_back({l.at("name").get<std::string>(), l.at("params").get<size_t>(),
                        Time::us(l.at("forward_us").get<double>()),
                        Time::us(l.at("backward_us").get<double>())});
  return s;
}

// BERT-Large with the uncased vocabulary and the SQuAD span head, from its dimensions (Devlin et al.
// 2019: L = 24, H = 1024, feed-forward 4096; vocabulary 30522, 512 positions, 2 token types), computed
// here independently of the generator script.
constexpr size_t kBertLargeSquadParams = [] {
  const size_t h = 1024, inter = 4096, layers = 24;
  const size_t embeddings = (30522 + 512 + 2) * h + 2 * h;
  const size_t attention = 4 * (h * h + h) + 2 * h;
  const size_t ffn = h * inter + inter + inter * h + h + 2 * h;
  const size_t span_head = h * 2 + 2;
  return embeddings + layers * (attention + ffn) + span_head;
}();
static_assert(kBertLargeSquadParams == 334094338);

struct PublishedTotal {
  const char* file;
  size_t params;         // published total
  double tolerance;      // relative: 0 = exact
  double forward_gmacs;  // published forward multiply-accumulates per sample (0: not checked)
};

// torchvision.models documentation (weights tables): vgg16 138,357,544 parameters and 15.47 GFLOPS
// (counted as multiply-accumulates); resnet50 25,557,032 parameters and 4.09 GFLOPS. Devlin et al.
// 2019: BERT-Large 340M (rounded).
const PublishedTotal kPublished[] = {
    {"vgg16", 138357544, 0.0, 15.47},
    {"resnet50", 25557032, 0.0, 4.09},
    {"bert_large_squad", 340000000, 0.02, 0.0},
};

TEST(ProfileFiles, TotalsMatchThePublishedTotals) {
  for (const PublishedTotal& p : kPublished) {
    const nlohmann::json j = load(p.file);
    const ProfileSpec spec = to_spec(j);
    const size_t total = total_params(spec);
    EXPECT_EQ(total, j.at("total_params").get<size_t>()) << p.file;
    if (p.tolerance == 0)
      EXPECT_EQ(total, p.params) << p.file;
    else
      EXPECT_NEAR(static_cast<double>(total), static_cast<double>(p.params), p.tolerance * p.params)
          << p.file;
    EXPECT_EQ(j.at("published_params").get<size_t>(), p.params) << p.file;
    if (p.forward_gmacs > 0) {
      double flops = 0;
      for (const auto& l : j.at("layers"))
        flops += l.at("forward_flops").get<double>();
      const double gmacs = flops / 2 / static_cast<double>(spec.batch_size) / 1e9;
      EXPECT_NEAR(gmacs, p.forward_gmacs, 0.005 * p.forward_gmacs) << p.file;
    }
  }
  EXPECT_EQ(total_params(to_spec(load("bert_large_squad"))), kBertLargeSquadParams);
}

TEST(ProfileFiles, TimesAddUpToTheMeasurementAndFollowTheFlops) {
  for (const PublishedTotal& p : kPublished) {
    const nlohmann::json j = load(p.file);
    double total_us = 0;
    const double efficiency = j.at("achieved_efficiency").get<double>();
    EXPECT_GT(efficiency, 0.05) << p.file;
    EXPECT_LT(efficiency, 1.0) << p.file;     // below the device peak
    const double rate = efficiency * 125e12;  // V100 tensor-core peak
    bool first = true;
    for (const auto& l : j.at("layers")) {
      const double fwd = l.at("forward_us").get<double>(), bwd = l.at("backward_us").get<double>();
      const double fwd_flops = l.at("forward_flops").get<double>(),
                   bwd_flops = l.at("backward_flops").get<double>();
      total_us += fwd + bwd;
      // Backward = 2 x forward FLOPs, 1 x for the first layer.
      EXPECT_DOUBLE_EQ(bwd_flops, fwd_flops * (first ? 1 : 2)) << p.file << " " << l.at("name");
      // time = FLOPs / (efficiency x peak), to the 1 ns rounding of the file and the 6 digits of
      // efficiency.
      EXPECT_NEAR(fwd, fwd_flops / rate * 1e6, 1e-3 + 2e-6 * fwd) << p.file << " " << l.at("name");
      EXPECT_FALSE(l.at("source").get<std::string>().empty()) << p.file;
      first = false;
    }
    const double measured_ms = j.at("measured").at("iteration_ms").get<double>();
    EXPECT_NEAR(total_us / 1e3, measured_ms, 1e-4 * measured_ms) << p.file;
    EXPECT_FALSE(j.at("measured").at("citation").get<std::string>().empty()) << p.file;
    EXPECT_FALSE(j.at("sources").empty()) << p.file;
    EXPECT_FALSE(j.at("published_params_source").get<std::string>().empty()) << p.file;
  }
  // The measurements behind the files: ResNet-50 1156 images/s at batch 256 -> 221.45 ms per iteration;
  // BERT-Large SQuAD 51.02 sequences/s at batch 24 -> 470.40 ms.
  EXPECT_NEAR(load("resnet50").at("measured").at("iteration_ms").get<double>(), 256.0 / 1156 * 1e3,
              1e-3);
  EXPECT_NEAR(load("bert_large_squad").at("measured").at("iteration_ms").get<double>(),
              24.0 / 51.02 * 1e3, 1e-3);
}

TEST(ProfileFiles, LoadedProfilesRunOnMetaBuffers) {
  for (const PublishedTotal& p : kPublished) {
    const ProfileSpec spec = to_spec(load(p.file));
    auto workload = make_profile_workload(spec, WorkloadSetup{128, spec.batch_size, 1});
    auto model = workload->make_model(127);
    EXPECT_FALSE(model->materialized());
    Buffer w = Buffer::meta(DType::kF32, model->num_params()),
           g = Buffer::meta(DType::kF32, model->num_params());
    int expected = static_cast<int>(model->layers().size()) - 1;
    model->forward_backward(w, g, 0, [&](int l) { EXPECT_EQ(l, expected--) << p.file; });
    EXPECT_EQ(expected, -1) << p.file;
  }
}

}  // namespace
}  // namespace bagua
