#include "core/models/profile.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

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

// BERT with the uncased vocabulary and the SQuAD span head, from its dimensions (Devlin et al. 2019:
// BERT-Large L = 24, H = 1024, feed-forward 4096; BERT-Base L = 12, H = 768, feed-forward 3072;
// vocabulary 30522, 512 positions, 2 token types), computed here independently of the generator script.
constexpr size_t bert_squad_params(size_t layers, size_t h, size_t inter) {
  const size_t embeddings = (30522 + 512 + 2) * h + 2 * h;
  const size_t attention = 4 * (h * h + h) + 2 * h;
  const size_t ffn = h * inter + inter + inter * h + h + 2 * h;
  const size_t span_head = h * 2 + 2;
  return embeddings + layers * (attention + ffn) + span_head;
}
constexpr size_t kBertLargeSquadParams = bert_squad_params(24, 1024, 4096);
static_assert(kBertLargeSquadParams == 334094338);
constexpr size_t kBertBaseSquadParams = bert_squad_params(12, 768, 3072);
static_assert(kBertBaseSquadParams == 108893186);

// GPT-2 XL, every tensor of HuggingFace's gpt2-xl (Radford et al. 2019, Table 2: 48 layers, d_model
// 1600; vocabulary 50257, context 1024): wte, wpe; per block ln_1 (2d), c_attn (d x 3d + 3d), c_proj
// (d x d + d), ln_2 (2d), c_fc (d x 4d + 4d), c_proj (4d x d + d); ln_f (2d); the head tied to wte.
constexpr size_t kGpt2XlParams = [] {
  const size_t d = 1600, vocab = 50257, context = 1024, layers = 48;
  const size_t block =
      2 * d + (d * 3 * d + 3 * d) + (d * d + d) + 2 * d + (d * 4 * d + 4 * d) + (4 * d * d + d);
  return vocab * d + context * d + layers * block + 2 * d;
}();
// HuggingFace's GPT2LMHeadModel.from_pretrained("gpt2-xl").num_parameters(): 1,557,611,200.
static_assert(kGpt2XlParams == 1557611200);

// The speech Transformer of WeNet's AISHELL-2 recipe (examples/aishell2/s0/conf/
// train_unified_transformer.yaml: 12 encoder and 6 decoder blocks, d = 256, feed-forward 2048, conv2d
// input over 80 mel bins; the 5235-symbol character table test/resources/aishell2.words.txt), every
// tensor of wenet/models/transformer/, counted here independently of the generator script:
//   subsampling  conv 1 -> d 3x3 (9d + d), conv d -> d 3x3 (9 d^2 + d), linear d x 19 -> d, where
//                19 = ((80 - 1) / 2 - 1) / 2 mel bins are left after two stride-2 convolutions;
//   encoder      per block self-attention 4 (d^2 + d), feed-forward 2 (d x 2048) + 2048 + d, two
//                layer norms 2 (2d); a final layer norm 2d;
//   CTC          linear d -> V (d V + V);
//   decoder      embedding V d; per block self- and source attention 2 x 4 (d^2 + d), feed-forward,
//                three layer norms; a final layer norm 2d and the output layer d V + V.
// By hand: subsampling 2,560 + 590,080 + 1,245,440 = 1,838,080; an encoder block 263,168 + 1,050,880 +
// 1,024 = 1,315,072 (x 12 = 15,780,864); a decoder block 526,336 + 1,050,880 + 1,536 = 1,578,752 (x 6 =
// 9,472,512); CTC and output layer 1,345,395 each; embedding 1,340,160; two final norms 1,024:
// 31,123,430.
constexpr size_t kTransformerAishell2Params = [] {
  const size_t d = 256, units = 2048, vocab = 5235, mel = 80, encoder = 12, decoder = 6;
  const size_t f = ((mel - 1) / 2 - 1) / 2;
  const size_t subsampling = (9 * d + d) + (9 * d * d + d) + (d * f * d + d);
  const size_t attention = 4 * (d * d + d), ffn = d * units + units + units * d + d, norm = 2 * d;
  const size_t encoder_block = attention + ffn + 2 * norm;
  const size_t decoder_block = 2 * attention + ffn + 3 * norm;
  const size_t projection = d * vocab + vocab;
  return subsampling + encoder * encoder_block + norm + projection + vocab * d +
         decoder * decoder_block + norm + projection;
}();
static_assert(kTransformerAishell2Params == 31123430);

struct PublishedTotal {
  const char* network;   // file name prefix in configs/workloads
  size_t params;         // published total
  double tolerance;      // relative: 0 = exact
  double forward_gmacs;  // published forward multiply-accumulates per sample (0: not checked)
  size_t exact;          // the count from the dimensions above (0: the published total is exact)
};

// torchvision.models documentation (weights tables): vgg16 138,357,544 parameters and 15.47 GFLOPS
// (counted as multiply-accumulates); resnet50 25,557,032 parameters and 4.09 GFLOPS. Devlin et al.
// 2019: BERT-Large 340M, BERT-Base 110M (rounded). GPT-2 XL: HuggingFace's count (the paper's Table 2
// rounds it to 1542M).
const PublishedTotal kPublished[] = {
    {"vgg16", 138357544, 0.0, 15.47, 0},
    {"resnet50", 25557032, 0.0, 4.09, 0},
    {"bert_large_squad", 340000000, 0.02, 0.0, kBertLargeSquadParams},
    {"bert_base_squad", 110000000, 0.02, 0.0, kBertBaseSquadParams},
    {"gpt2_xl", 1557611200, 0.0, 0.0, kGpt2XlParams},
    // No published total: the file's stated total is the architecture's count, checked against it.
    {"transformer_aishell2", kTransformerAishell2Params, 0.0, 0.0, kTransformerAishell2Params},
};

// Every shipped profile file: one per (network, device, precision), the paper's (V100, mixed) under the
// network's own name (scripts/make_profiles.py).
std::vector<std::string> files_of(const std::string& network) {
  std::vector<std::string> out;
  for (const char* device : {"v100", "a100", "h100"}) {
    const bool v100 = std::string(device) == "v100";
    for (const char* precision : {v100 ? "fp32" : "tf32", "mixed"}) {
      const std::string name = network + "_" + device + "_" + precision;
      const bool paper = v100 && std::string(precision) == "mixed" &&
                         (network == "vgg16" || network == "resnet50" || network == "bert_large_squad");
      out.push_back(paper ? network : name);
    }
  }
  return out;
}

TEST(ProfileFiles, EveryNetworkOnEveryDeviceInBothPrecisions) {
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(source_root() / "configs" / "workloads"))
    files += entry.path().extension() == ".json";
  size_t expected = 0;
  for (const PublishedTotal& p : kPublished) {
    for (const std::string& file : files_of(p.network)) {
      SCOPED_TRACE(file);
      ++expected;
      const nlohmann::json j = load(file);
      // Device and precision are stated, and agree with the file's name.
      const std::string precision = j.at("precision").get<std::string>();
      EXPECT_TRUE(parse_precision(precision).has_value());
      if (file == p.network)
        EXPECT_EQ(precision, "mixed");
      else
        EXPECT_NE(file.find("_" + precision), std::string::npos) << precision;
      const std::string device = j.at("device").get<std::string>();
      const std::string expect_device = file == p.network || file.find("_v100_") != std::string::npos
                                            ? "V100"
                                        : file.find("_a100_") != std::string::npos ? "A100"
                                                                                   : "H100";
      EXPECT_NE(device.find(expect_device), std::string::npos) << device;
      EXPECT_GT(j.at("peak_flops").get<double>(), 1e12);
    }
  }
  EXPECT_EQ(files, expected);
}

TEST(ProfileFiles, TotalsMatchThePublishedTotals) {
  for (const PublishedTotal& p : kPublished) {
    for (const std::string& file : files_of(p.network)) {
      const nlohmann::json j = load(file);
      const ProfileSpec spec = to_spec(j);
      const size_t total = total_params(spec);
      EXPECT_EQ(total, j.at("total_params").get<size_t>()) << file;
      if (p.tolerance == 0) {
        EXPECT_EQ(total, p.params) << file;
      } else {
        EXPECT_NEAR(static_cast<double>(total), static_cast<double>(p.params), p.tolerance * p.params)
            << file;
      }
      if (p.exact) {
        EXPECT_EQ(total, p.exact) << file;
      }
      EXPECT_EQ(j.at("published_params").get<size_t>(), p.params) << file;
      if (p.forward_gmacs > 0) {
        double flops = 0;
        for (const auto& l : j.at("layers"))
          flops += l.at("forward_flops").get<double>();
        const double gmacs = flops / 2 / static_cast<double>(spec.batch_size) / 1e9;
        EXPECT_NEAR(gmacs, p.forward_gmacs, 0.005 * p.forward_gmacs) << file;
      }
    }
  }
}

TEST(ProfileFiles, TimesAddUpToTheMeasurementAndFollowTheFlops) {
  for (const PublishedTotal& p : kPublished) {
    for (const std::string& file : files_of(p.network)) {
      const nlohmann::json j = load(file);
      double total_us = 0, forward_us = 0;
      const double efficiency = j.at("achieved_efficiency").get<double>();
      EXPECT_GT(efficiency, 0.05) << file;
      EXPECT_LT(efficiency, 1.0) << file;  // below the device peak
      const double rate = efficiency * j.at("peak_flops").get<double>();
      bool first = true;
      for (const auto& l : j.at("layers")) {
        const double fwd = l.at("forward_us").get<double>(), bwd = l.at("backward_us").get<double>();
        const double fwd_flops = l.at("forward_flops").get<double>(),
                     bwd_flops = l.at("backward_flops").get<double>();
        total_us += fwd + bwd;
        forward_us += fwd;
        // Backward = 2 x forward FLOPs, 1 x for the first layer.
        EXPECT_DOUBLE_EQ(bwd_flops, fwd_flops * (first ? 1 : 2)) << file << " " << l.at("name");
        // time = FLOPs / (efficiency x peak), to the 1 ns rounding of the file and the 6 digits of
        // efficiency.
        EXPECT_NEAR(fwd, fwd_flops / rate * 1e6, 1e-3 + 2e-6 * fwd) << file << " " << l.at("name");
        EXPECT_FALSE(l.at("source").get<std::string>().empty()) << file;
        first = false;
      }
      const nlohmann::json& measured = j.at("measured");
      const double iteration_ms = measured.at("iteration_ms").get<double>();
      EXPECT_NEAR(total_us / 1e3, iteration_ms, 1e-4 * iteration_ms) << file;
      // A measured profile's times add up to the cited measurement itself.
      const double batch = static_cast<double>(j.at("batch_size").get<int64_t>());
      if (measured.contains("throughput_per_s")) {
        EXPECT_NEAR(batch / (total_us / 1e6), measured.at("throughput_per_s").get<double>(),
                    2e-4 * measured.at("throughput_per_s").get<double>())
            << file;
      }
      if (measured.contains("forward_ms")) {
        EXPECT_NEAR(forward_us / 1e3, measured.at("forward_ms").get<double>(), 1e-3) << file;
      }
      if (measured.contains("citation"))
        EXPECT_FALSE(measured.at("citation").get<std::string>().empty()) << file;
      else  // derived from other profiles: it names them
        EXPECT_TRUE(measured.contains("from")) << file;
      EXPECT_FALSE(j.at("sources").empty()) << file;
      EXPECT_FALSE(j.at("published_params_source").get<std::string>().empty()) << file;
    }
  }
  // The measurements behind the files: ResNet-50 1156 images/s at batch 256 -> 221.45 ms per iteration;
  // BERT-Large SQuAD 51.02 sequences/s at batch 24 -> 470.40 ms; on the A100 (mixed) ResNet-50 2470
  // images/s at 256 -> 103.64 ms.
  EXPECT_NEAR(load("resnet50").at("measured").at("iteration_ms").get<double>(), 256.0 / 1156 * 1e3,
              1e-3);
  EXPECT_NEAR(load("bert_large_squad").at("measured").at("iteration_ms").get<double>(),
              24.0 / 51.02 * 1e3, 1e-3);
  EXPECT_NEAR(load("resnet50_a100_mixed").at("measured").at("iteration_ms").get<double>(),
              256.0 / 2470 * 1e3, 1e-3);
  // GPT-2 XL on the A100, mixed precision: Megatron-LM's 137 TFLOP/s with recomputation (4 forward
  // passes' worth) is 102.75 TFLOP/s of this profile's 3 passes' worth: efficiency 102.75 / 312.
  EXPECT_NEAR(load("gpt2_xl_a100_mixed").at("achieved_efficiency").get<double>(), 102.75 / 312, 1e-6);
  // The H100 carries the A100's achieved fraction of peak (no published per-network H100 table used).
  for (const PublishedTotal& p : kPublished) {
    for (const char* precision : {"tf32", "mixed"}) {
      const std::string stem = std::string(p.network) + "_%_" + precision;
      auto efficiency = [&](const char* device) {
        std::string name = stem;
        name.replace(name.find('%'), 1, device);
        return load(name).at("achieved_efficiency").get<double>();
      };
      EXPECT_EQ(efficiency("h100"), efficiency("a100")) << stem;
    }
  }
}

TEST(ProfileFiles, LoadedProfilesRunOnMetaBuffers) {
  for (const PublishedTotal& p : kPublished) {
    const ProfileSpec spec = to_spec(load(files_of(p.network).back()));
    auto workload = make_profile_workload(spec, WorkloadSetup{128, spec.batch_size, 1});
    auto model = workload->make_model(127);
    EXPECT_FALSE(model->materialized());
    Buffer w = Buffer::meta(DType::kF32, model->num_params()),
           g = Buffer::meta(DType::kF32, model->num_params());
    int expected = static_cast<int>(model->layers().size()) - 1;
    model->forward_backward(w, g, 0, [&](int l) { EXPECT_EQ(l, expected--) << p.network; });
    EXPECT_EQ(expected, -1) << p.network;
  }
}

TEST(Profile, PrecisionNamesRoundTrip) {
  for (Precision p : {Precision::kFp32, Precision::kTf32, Precision::kMixed})
    EXPECT_EQ(parse_precision(to_string(p)), p);
  EXPECT_EQ(parse_precision("fp16"), std::nullopt);
  EXPECT_EQ(to_string(Precision::kUnstated), "unstated");
}

}  // namespace
}  // namespace bagua
