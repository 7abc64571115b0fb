// Every registered algorithm on 1-4 ranks of both backends and on a meta model in the simulator;
// exactness of the algorithms that are plain large-batch SGD (or Adam) in disguise.
#include <gtest/gtest.h>

#include <map>

#include <atomic>
#include <cmath>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/algorithms/async_model_average.h"
#include "core/algorithms/decentralized.h"
#include "core/compress/identity.h"
#include "tests/core/algorithms/harness.h"

namespace bagua {
namespace {

using testing::Backend;
using testing::QuadraticModel;
using testing::Registries;
using testing::RunResult;
using testing::RunSpec;

std::string describe(Backend backend, const RunSpec& spec) {
  std::string s = spec.algorithm + " on " + std::to_string(spec.ranks) + " ranks (" +
                  std::to_string(spec.per_host) + " per host), " + testing::to_string(backend) +
                  (spec.meta ? ", meta model" : "");
  for (const auto& [k, v] : spec.params)
    s += ", " + k + "=" + to_string(v);
  return s;
}

// Parameters that only shorten a run on the real-time threads backend: the asynchronous loop's
// 500 ms default would make the tests wait for real.
std::map<std::string, ParamValue> fast(Backend backend, const std::string& algorithm,
                                       std::map<std::string, ParamValue> params = {}) {
  if (backend == Backend::kThreads && algorithm == "async_model_average" &&
      !params.count("sync_interval_ms"))
    params["sync_interval_ms"] = int64_t{1};
  return params;
}

// Runs `spec`; returns the ConfigError message if the algorithm rejected the world, else checks that
// the run produced finite losses and weights (materialized) or completed its iterations (meta).
std::string run_and_check(Backend backend, const Registries& reg, RunSpec spec) {
  spec.params = fast(backend, spec.algorithm, spec.params);
  RunResult r;
  try {
    r = run_algorithm(backend, reg, spec);
  } catch (const ConfigError& e) {
    return e.what();
  }
  for (int rank = 0; rank < spec.ranks; ++rank) {
    const TrainResult& t = r.train[static_cast<size_t>(rank)];
    EXPECT_EQ(t.iterations.size(), static_cast<size_t>(spec.iterations)) << describe(backend, spec);
    if (spec.meta) {
      if (backend == Backend::kSim) {
        EXPECT_GT(t.finish, Time::zero()) << describe(backend, spec);
      }
      continue;
    }
    for (const auto& it : t.iterations)
      EXPECT_TRUE(std::isfinite(it.loss)) << describe(backend, spec);
    const auto& w = r.weights[static_cast<size_t>(rank)];
    EXPECT_EQ(w.size(), 16u) << describe(backend, spec);
    for (float v : w)
      EXPECT_TRUE(std::isfinite(v)) << describe(backend, spec) << ", rank " << rank;
  }
  return "";
}

TEST(Registry, EveryAlgorithmHasADescriptionAndValidDocumentedDefaults) {
  Registries reg;
  const std::set<std::string> expected{"gradient_allreduce",
                                       "bytegrad",
                                       "decentralized",
                                       "low_precision_decentralized",
                                       "qadam",
                                       "async_model_average",
                                       "local_sgd",
                                       "choco_sgd",
                                       "diloco"};
  std::set<std::string> names;
  for (const auto* e : reg.algorithms.entries()) {
    names.insert(e->name);
    EXPECT_FALSE(e->description.empty()) << e->name;
    for (const ParamSpec& p : e->schema.specs()) {
      EXPECT_FALSE(p.description.empty()) << e->name << "." << p.name;
      EXPECT_FALSE(e->schema.validate(p.name, p.default_value).has_value()) << e->name << "." << p.name;
    }
  }
  for (const std::string& n : expected)
    EXPECT_TRUE(names.count(n)) << n << " is not registered";
}

TEST(Registry, CompressorParametersArePrefixedAndReachTheCompressor) {
  Registries reg;
  const auto& bytegrad = reg.algorithms.at("bytegrad").schema;
  ASSERT_NE(bytegrad.find("topk_ratio"), nullptr);
  ASSERT_NE(bytegrad.find("qsgd_chunk_size"), nullptr);
  ASSERT_NE(bytegrad.find("minmax_uint8_chunk_size"), nullptr);
  // Each compressor keeps its own default where two share a parameter name.
  EXPECT_EQ(std::get<int64_t>(bytegrad.find("qsgd_chunk_size")->default_value), 512);
  EXPECT_EQ(std::get<int64_t>(bytegrad.find("minmax_uint8_chunk_size")->default_value), 0);
  // An invalid compressor parameter is a ConfigError naming the compressor and the parameter.
  Params p(bytegrad, {{"compressor", std::string("topk")}, {"topk_ratio", 0.5}});
  EXPECT_NO_THROW(reg.algorithms.create("bytegrad", p, reg.deps()));
  p.set("topk_ratio", 2.0);
  try {
    reg.algorithms.create("bytegrad", p, reg.deps());
    ADD_FAILURE() << "ratio 2 accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'topk'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ratio"), std::string::npos) << e.what();
  }
  // qadam offers its two variants only.
  EXPECT_EQ(reg.algorithms.at("qadam").schema.find("compressor")->choices,
            (std::vector<std::string>{"minmax_uint8", "sign"}));
}

// A compressor that only a test registers: identity's encoding, counting its encodes in `encodes`.
class CountingCompressor final : public Compressor {
 public:
  explicit CountingCompressor(std::atomic<int64_t>& encodes) : encodes_(encodes) {}
  std::string name() const override { return "counting"; }
  Bytes encoded_bytes(size_t n) const override { return inner_.encoded_bytes(n); }
  void encode(const BufferView& in, const BufferView& out) override {
    ++encodes_;
    inner_.encode(in, out);
  }
  void decode(const BufferView& in, const BufferView& out) override { inner_.decode(in, out); }

 private:
  std::atomic<int64_t>& encodes_;
  IdentityCompressor inner_;
};

TEST(Registry, ACompressorRegisteredBesideTheBuiltInOnesReachesTheAlgorithms) {
  // The algorithms' `compressor` parameters are declared from the components' one compressor
  // registry: a compressor added there is a valid choice, its parameters are declared prefixed, and
  // the algorithm really compresses with it.
  std::atomic<int64_t> encodes{0};
  Registries reg([&](CompressorRegistry& c) {
    c.add("counting", "identity, counting its encodes",
          ParamSchema{}.add_int("unused", 3, "a parameter, to see it prefixed", 0),
          [&](const Params&) { return std::make_unique<CountingCompressor>(encodes); });
  });
  for (const char* algorithm : {"bytegrad", "low_precision_decentralized", "choco_sgd"}) {
    const ParamSchema& schema = reg.algorithms.at(algorithm).schema;
    EXPECT_FALSE(schema.validate("compressor", std::string("counting")).has_value()) << algorithm;
    ASSERT_NE(schema.find("counting_unused"), nullptr) << algorithm;
    EXPECT_EQ(std::get<int64_t>(schema.find("counting_unused")->default_value), 3) << algorithm;
    encodes = 0;
    RunSpec spec;
    spec.algorithm = algorithm;
    spec.params = {{"compressor", std::string("counting")}};
    spec.ranks = 2;
    EXPECT_EQ(run_and_check(Backend::kSim, reg, spec), "") << algorithm;
    EXPECT_GT(encodes.load(), 0) << algorithm << " did not compress with the registered compressor";
  }
}

TEST(Algorithms, EveryRegisteredAlgorithmRunsWithItsDefaults) {
  Registries reg;
  for (const auto* e : reg.algorithms.entries()) {
    for (Backend backend : testing::all_backends())
      for (int ranks : {1, 2, 3, 4}) {
        RunSpec spec;
        spec.algorithm = e->name;
        spec.ranks = ranks;
        EXPECT_EQ(run_and_check(backend, reg, spec), "") << describe(backend, spec);
      }
    // Profile-scale shapes on meta buffers in the simulator: flat, and two hosts of two ranks (the
    // hierarchical defaults then have real host groups).
    for (int per_host : {1, 2}) {
      RunSpec spec;
      spec.algorithm = e->name;
      spec.ranks = 4;
      spec.per_host = per_host;
      spec.meta = true;
      spec.layer_sizes = {1 << 16, 1 << 18, 1 << 14};
      spec.bucket_bytes = Bytes(1 << 20);
      EXPECT_EQ(run_and_check(Backend::kSim, reg, spec), "") << describe(Backend::kSim, spec);
    }
  }
}

TEST(Algorithms, NonDefaultVariantsRunOrRejectTheWorldClearly) {
  Registries reg;
  struct Variant {
    std::string algorithm;
    std::map<std::string, ParamValue> params;
  };
  const std::vector<Variant> variants{
      {"decentralized", {{"peer_selection_mode", std::string("ring")}}},
      {"decentralized", {{"peer_selection_mode", std::string("ring")}, {"hierarchical", false}}},
      {"decentralized",
       {{"peer_selection_mode", std::string("all")}, {"communication_interval", int64_t{2}}}},
      {"bytegrad", {{"compressor", std::string("identity")}, {"hierarchical", false}}},
      {"bytegrad",
       {{"compressor", std::string("topk")}, {"topk_ratio", 0.25}, {"error_feedback", true}}},
      {"bytegrad", {{"compressor", std::string("sign")}, {"error_feedback", true}}},
      {"bytegrad", {{"compressor", std::string("qsgd")}, {"qsgd_chunk_size", int64_t{4}}}},
      {"bytegrad", {{"compressor", std::string("randomk")}, {"randomk_ratio", 0.5}}},
      {"bytegrad", {{"compressor", std::string("fp16")}, {"average", false}}},
      {"low_precision_decentralized", {{"compressor", std::string("sign")}, {"error_feedback", true}}},
      {"low_precision_decentralized",
       {{"hierarchical", false}, {"communication_interval", int64_t{2}}}},
      {"qadam", {{"warmup_steps", int64_t{1}}}},
      {"qadam",
       {{"warmup_steps", int64_t{1}}, {"compressor", std::string("sign")}, {"hierarchical", false}}},
      {"async_model_average", {{"warmup_steps", int64_t{1}}, {"sync_interval_ms", int64_t{1}}}},
      {"local_sgd", {{"period", int64_t{2}}, {"hierarchical", true}}},
      {"choco_sgd", {{"compressor", std::string("topk")}, {"topk_ratio", 0.5}, {"gamma", 0.2}}},
      {"choco_sgd", {{"hierarchical", true}}},
      {"diloco", {{"inner_steps", int64_t{2}}, {"hierarchical", true}}},
  };
  for (const Variant& v : variants)
    for (Backend backend : testing::all_backends())
      for (int ranks : {1, 2, 3, 4}) {
        RunSpec spec;
        spec.algorithm = v.algorithm;
        spec.params = v.params;
        spec.ranks = ranks;
        spec.iterations = 4;
        EXPECT_EQ(run_and_check(backend, reg, spec), "") << describe(backend, spec);
      }
}

TEST(Algorithms, ShiftOneRejectsOddRankCountsByName) {
  Registries reg;
  for (Backend backend : testing::all_backends())
    for (int ranks : {1, 2, 3, 4}) {
      RunSpec spec;
      spec.algorithm = "decentralized";
      spec.params = {{"peer_selection_mode", std::string("shift_one")}, {"hierarchical", false}};
      spec.ranks = ranks;
      const std::string error = run_and_check(backend, reg, spec);
      if (ranks % 2 == 0) {
        EXPECT_EQ(error, "") << describe(backend, spec);
      } else {
        EXPECT_EQ(error,
                  "decentralized: peer_selection_mode shift_one needs an even number of ranks, got " +
                      std::to_string(ranks))
            << describe(backend, spec);
      }
    }
}

// ---- Exactness
// -----------------------------------------------------------------------------------------

// Large-batch SGD on the quadratic model from w = 0 with the gradient averaged over P ranks:
//   w_{k+1} = w_k - lr (w_k - tbar)   =>   w_K = (1 - (1 - lr)^K) tbar.
double large_batch_sgd(int ranks, size_t i, double lr, int64_t iterations) {
  return (1.0 - std::pow(1.0 - lr, static_cast<double>(iterations))) *
         QuadraticModel::mean_target(ranks, i);
}

TEST(Exactness, GradientAllreduceAndLocalSgdWithPeriodOneAreLargeBatchSgd) {
  Registries reg;
  for (const auto& [name, params] :
       std::vector<std::pair<std::string, std::map<std::string, ParamValue>>>{
           {"gradient_allreduce", {}},
           {"gradient_allreduce", {{"hierarchical", true}}},
           // NCCL's allreduce under each of its protocols, flat and hierarchical.
           {"gradient_allreduce",
            {{"allreduce", std::string("nccl")}, {"protocol", std::string("ll")}}},
           {"gradient_allreduce",
            {{"allreduce", std::string("nccl")}, {"protocol", std::string("ll128")}}},
           {"gradient_allreduce",
            {{"allreduce", std::string("nccl")},
             {"protocol", std::string("auto")},
             {"hierarchical", true}}},
           {"local_sgd", {{"period", int64_t{1}}}}}) {
    for (Backend backend : testing::all_backends())
      for (int ranks : {1, 2, 3, 4}) {
        RunSpec spec;
        spec.algorithm = name;
        spec.params = params;
        spec.ranks = ranks;
        spec.per_host = ranks % 2 == 0 ? 2 : 1;
        spec.iterations = 5;
        RunResult r = run_algorithm(backend, reg, spec);
        for (int rank = 0; rank < ranks; ++rank)
          for (size_t i = 0; i < 16; ++i)
            ASSERT_NEAR(r.weights[static_cast<size_t>(rank)][i], large_batch_sgd(ranks, i, spec.lr, 5),
                        1e-5)
                << describe(backend, spec) << ", rank " << rank << ", element " << i;
      }
  }
}

TEST(Algorithms, ProtocolIsNcclsOnlyAndOptional) {
  // `protocol` (NCCL_PROTO) for the algorithms that name an allreduce: optional, so that configs
  // without it resolve as before and run collectives::kDefaultNcclProtocol; beside an allreduce other
  // than "nccl" a ConfigError naming algorithm.protocol.
  Registries reg;
  for (const char* name : {"gradient_allreduce", "ddp", "horovod"}) {
    const ParamSchema& schema = reg.algorithms.at(name).schema;
    ASSERT_NE(schema.find("protocol"), nullptr) << name;
    EXPECT_EQ(schema.find("protocol")->presence, ParamPresence::kOptional) << name;
    EXPECT_FALSE(Params(schema, {}).has("protocol")) << name;
    EXPECT_EQ(schema.validate("protocol", std::string("LL")).value_or(""),
              "must be one of auto|simple|ll|ll128, got \"LL\"")
        << name;
    const Params nccl(schema, {{"allreduce", std::string("nccl")}, {"protocol", std::string("ll")}});
    EXPECT_NO_THROW(reg.algorithms.create(name, nccl, reg.deps())) << name;
    const Params ring(schema, {{"allreduce", std::string("ring")}, {"protocol", std::string("ll")}});
    try {
      reg.algorithms.create(name, ring, reg.deps());
      ADD_FAILURE() << name << ": protocol beside allreduce ring accepted";
    } catch (const ConfigError& e) {
      EXPECT_STREQ(e.what(),
                   "algorithm.protocol: only for \"allreduce\": \"nccl\", got \"allreduce\": "
                   "\"ring\"");
    }
  }
}

TEST(Exactness, DecentralizedAllAveragesToLargeBatchSgd) {
  // Rank r's step: w_r := avg_j(w_j) - lr (w_r - t_r) (the gradient is taken at the pre-averaging
  // weights). The gradient is linear, so the average over ranks follows large-batch SGD exactly:
  //   avg_r w_r := avg(w) - lr (avg(w) - tbar).
  Registries reg;
  for (Backend backend : testing::all_backends())
    for (int ranks : {1, 2, 3, 4})
      for (bool hierarchical : {false, true}) {
        RunSpec spec;
        spec.algorithm = "decentralized";
        spec.params = {{"hierarchical", hierarchical}};
        spec.ranks = ranks;
        spec.per_host = ranks % 2 == 0 ? 2 : 1;
        spec.iterations = 5;
        RunResult r = run_algorithm(backend, reg, spec);
        for (size_t i = 0; i < 16; ++i) {
          double mean = 0;
          for (int rank = 0; rank < ranks; ++rank)
            mean += r.weights[static_cast<size_t>(rank)][i] / ranks;
          ASSERT_NEAR(mean, large_batch_sgd(ranks, i, spec.lr, 5), 1e-5)
              << describe(backend, spec) << ", element " << i;
        }
        // And each rank's offset from the average, d = w_r - avg(w), obeys
        //   d_{k+1} = -lr d_k + lr (t_r - tbar),  d_0 = 0
        //     =>   d_K = (t_r - tbar) lr (1 - (-lr)^K) / (1 + lr)
        // (the average is taken before the step, the gradient at the rank's own weights).
        const double lr = spec.lr;
        const double offset = lr * (1.0 - std::pow(-lr, 5.0)) / (1.0 + lr);
        for (int rank = 0; rank < ranks; ++rank)
          for (size_t i = 0; i < 16; ++i) {
            const double expected =
                large_batch_sgd(ranks, i, lr, 5) +
                offset * (QuadraticModel::target(rank, i) - QuadraticModel::mean_target(ranks, i));
            ASSERT_NEAR(r.weights[static_cast<size_t>(rank)][i], expected, 1e-5)
                << describe(backend, spec) << ", rank " << rank << ", element " << i;
          }
      }
}

TEST(Exactness, QAdamWarmupIsAdamOnTheAveragedGradient) {
  // Reference: PyTorch's Adam (the registered adam optimizer) on one model with gradient w - tbar.
  Registries reg;
  const double lr = 0.05;
  const int64_t iterations = 6;
  // warmup_steps = iterations: the last warm-up step is a full Adam step too (see qadam.h on
  // q_adam.py).
  for (Backend backend : testing::all_backends())
    for (int ranks : {1, 3, 4})
      for (int64_t warmup : {int64_t{100}, iterations}) {
        RunSpec spec;
        spec.algorithm = "qadam";
        spec.params = {{"lr", lr}, {"warmup_steps", warmup}};
        spec.ranks = ranks;
        spec.iterations = iterations;
        RunResult r = run_algorithm(backend, reg, spec);

        Buffer w = Buffer::host(DType::kF32, 16), g = Buffer::host(DType::kF32, 16);
        fill(w, 0.0);
        auto adam = make_adam(Params(adam_schema(), {{"lr", lr}}), 16, w);
        for (int64_t k = 0; k < iterations; ++k) {
          for (size_t i = 0; i < 16; ++i)
            g.as<float>()[i] =
                w.as<float>()[i] - static_cast<float>(QuadraticModel::mean_target(ranks, i));
          adam->step(w, g);
        }
        for (int rank = 0; rank < ranks; ++rank)
          for (size_t i = 0; i < 16; ++i)
            ASSERT_NEAR(r.weights[static_cast<size_t>(rank)][i], w.as<float>()[i], 1e-5)
                << describe(backend, spec) << ", rank " << rank << ", element " << i;
      }
}

// A warm-up that runs the allreduce it is given: `algorithm` with `params` and gradient_allreduce, each
// with "allreduce": "ring" and then "nccl", 3 iterations on 4 simulated hosts. Keyed by the allreduce.
struct WarmupRuns {
  RunResult algorithm;
  RunResult gradient_allreduce;
};
std::map<std::string, WarmupRuns> warmup_beside_gradient_allreduce(const std::string& algorithm,
                                                                  std::map<std::string, ParamValue> params) {
  Registries reg;
  std::map<std::string, WarmupRuns> out;
  for (const std::string allreduce : {"ring", "nccl"}) {
    RunSpec spec;
    spec.algorithm = algorithm;
    spec.params = params;
    spec.params["allreduce"] = allreduce;
    spec.ranks = 4;
    spec.iterations = 3;
    RunSpec g = spec;
    g.algorithm = "gradient_allreduce";
    g.params = {{"allreduce", allreduce}};
    out[allreduce] = {run_algorithm(Backend::kSim, reg, spec), run_algorithm(Backend::kSim, reg, g)};
  }
  return out;
}

TEST(Exactness, QAdamWarmsUpWithTheAllreduceItIsGiven) {
  // Bagua's QAdam averages the gradients with NCCL's allreduce while warming up (qadam.cc cites it):
  // "allreduce": "nccl" runs exactly the collective gradient_allreduce runs under "nccl", flat, on the
  // same buckets, and "ring" (the default) its ring. On the simulator the two algorithms' runs then
  // differ by their optimizers' compute alone (QAdam's Adam step against SGD's, the same whichever
  // collective runs): the gap between their finishing times is the same under both collectives, while
  // the collectives themselves take different times on 4 hosts (NCCL pipelines, the ring waits for
  // every step). The weights stay Adam's on the average gradient (QAdamWarmupIsAdamOnTheAveraged-
  // Gradient) under either.
  const auto runs =
      warmup_beside_gradient_allreduce("qadam", {{"lr", 0.05}, {"warmup_steps", int64_t{3}}});
  std::map<std::string, std::vector<Time>> finish, gap;
  for (const auto& [allreduce, run] : runs)
    for (size_t r = 0; r < 4; ++r) {
      finish[allreduce].push_back(run.algorithm.train[r].finish);
      gap[allreduce].push_back(run.algorithm.train[r].finish - run.gradient_allreduce.train[r].finish);
    }
  EXPECT_EQ(gap["ring"], gap["nccl"]);
  EXPECT_NE(finish["ring"], finish["nccl"]);
}

TEST(Exactness, AsyncModelAverageWarmsUpWithTheAllreduceItIsGiven) {
  // While warming up, async_model_average is gradient_allreduce (flat, averaged, the trainer's
  // optimizer) on the allreduce `allreduce` names, and its loop never starts: with every step a warm-up
  // step the two algorithms give the same weights and, on the simulator, finish at the same instants,
  // under "ring" and under "nccl" alike, and those instants differ between the two collectives.
  const auto runs = warmup_beside_gradient_allreduce("async_model_average", {{"warmup_steps", int64_t{3}}});
  std::map<std::string, std::vector<Time>> finish;
  for (const auto& [allreduce, run] : runs)
    for (size_t r = 0; r < 4; ++r) {
      EXPECT_EQ(run.algorithm.train[r].finish, run.gradient_allreduce.train[r].finish) << allreduce;
      EXPECT_EQ(run.algorithm.weights[r], run.gradient_allreduce.weights[r]) << allreduce;
      finish[allreduce].push_back(run.algorithm.train[r].finish);
    }
  EXPECT_NE(finish["ring"], finish["nccl"]);
}

TEST(Exactness, QAdamCompressedPhaseKeepsEveryRankOnTheSameWeights) {
  // After the warm-up every rank applies the same averaged momentum (C_LP_S ends with the same
  // decoded bytes on every rank) and the same frozen variance, so the weights stay bit-identical; and
  // they keep moving towards tbar.
  Registries reg;
  for (const char* compressor : {"minmax_uint8", "sign"}) {
    RunSpec spec;
    spec.algorithm = "qadam";
    spec.params = {{"lr", 0.05}, {"warmup_steps", int64_t{3}}, {"compressor", std::string(compressor)}};
    spec.ranks = 4;
    spec.per_host = 2;
    spec.iterations = 10;
    RunResult r = run_algorithm(Backend::kSim, reg, spec);
    RunSpec warm = spec;
    warm.iterations = 3;
    RunResult w3 = run_algorithm(Backend::kSim, reg, warm);
    double before = 0, after = 0;
    for (size_t i = 0; i < 16; ++i) {
      const double t = QuadraticModel::mean_target(4, i);
      before += std::abs(w3.weights[0][i] - t);
      after += std::abs(r.weights[0][i] - t);
    }
    EXPECT_LT(after, before) << compressor;
    for (int rank = 1; rank < 4; ++rank)
      EXPECT_EQ(std::memcmp(r.weights[0].data(), r.weights[static_cast<size_t>(rank)].data(),
                            16 * sizeof(float)),
                0)
          << compressor << ": rank " << rank << " differs from rank 0";
  }
}

// `after` (a collective choice that moves the same bytes differently) trains every rank to exactly
// `before`'s 16 weights, which moved from zero, and on the simulator finishes no later than `before`
// (strictly earlier when `strictly_earlier`; no claim on the time when it is empty).
void expect_same_weights_no_later(Backend backend, const RunSpec& spec, const RunResult& before,
                                  const RunResult& after, std::optional<bool> strictly_earlier) {
  for (int rank = 0; rank < spec.ranks; ++rank) {
    const auto r = static_cast<size_t>(rank);
    ASSERT_EQ(after.weights[r].size(), 16u) << describe(backend, spec);
    EXPECT_EQ(std::memcmp(before.weights[r].data(), after.weights[r].data(), 16 * sizeof(float)), 0)
        << describe(backend, spec) << ": rank " << rank;
    EXPECT_NE(before.weights[r], std::vector<float>(16, 0.0f)) << "the weights moved";
    if (backend != Backend::kSim || !strictly_earlier) continue;
    if (*strictly_earlier) {
      EXPECT_LT(after.train[r].finish, before.train[r].finish)
          << describe(backend, spec) << ": rank " << rank;
    } else {
      EXPECT_LE(after.train[r].finish, before.train[r].finish)
          << describe(backend, spec) << ": rank " << rank;
    }
  }
}

TEST(Exactness, BytegradAndQAdamTrainBitIdenticallyWithNcclsAlltoall) {
  // The grouped alltoall moves the same slots as the pairwise exchange, into the same places, and C_LP_S
  // reduces them in rank order after all have arrived: the same weights, bit for bit. Only the time
  // moves: on the simulator, 4 flat ranks on 4 hosts, pairwise pays 3 latencies per scatter, grouped 1,
  // so every rank finishes earlier.
  Registries reg;
  for (Backend backend : testing::all_backends())
    for (const char* algorithm : {"bytegrad", "qadam"})
      for (bool hierarchical : {false, true}) {
        RunSpec spec;
        spec.algorithm = algorithm;
        spec.params = {{"hierarchical", hierarchical}};
        if (std::string(algorithm) == "qadam")
          spec.params.insert({{"lr", 0.05}, {"warmup_steps", int64_t{1}}});
        spec.ranks = hierarchical ? 8 : 4;
        spec.per_host = hierarchical ? 2 : 1;  // 4 hosts either way
        spec.iterations = 4;
        RunResult pairwise = run_algorithm(backend, reg, spec);
        spec.params["alltoall"] = std::string("nccl");
        RunResult grouped = run_algorithm(backend, reg, spec);
        expect_same_weights_no_later(backend, spec, pairwise, grouped, /*strictly_earlier=*/true);
      }
}

TEST(Exactness, BytegradAndQAdamTrainBitIdenticallyWithNcclsAllgather) {
  // ncclAllGather's pipelined ring ("allgather": "nccl") lands every slot where the bulk ring does,
  // and C_LP_S decodes them after the gather: the same weights, bit for bit, on every backend. Only
  // the time moves, and no claim is made on it: the pipeline crosses hosts only where a slot's path
  // does, where the bulk ring waits for a crossing on each of its 7 steps, but NCCL's ring also pays
  // NCCL's step latency on every message (Simple: 11.3 us across hosts, 2.4 inside,
  // nccl_step_latency), which the bulk ring, a plain exchange over the transport, does not
  // (nccl_sim_time_test.cc works both on 4 ranks by hand).
  Registries reg;
  for (Backend backend : testing::all_backends())
    for (const char* algorithm : {"bytegrad", "qadam"})
      for (bool hierarchical : {false, true}) {
        RunSpec spec;
        spec.algorithm = algorithm;
        spec.params = {{"hierarchical", hierarchical}, {"alltoall", std::string("nccl")}};
        if (std::string(algorithm) == "qadam")
          spec.params.insert({{"lr", 0.05}, {"warmup_steps", int64_t{1}}});
        spec.ranks = 8;
        spec.per_host = 2;  // 4 hosts
        spec.iterations = 4;
        RunResult ring = run_algorithm(backend, reg, spec);
        spec.params["allgather"] = std::string("nccl");
        RunResult nccl = run_algorithm(backend, reg, spec);
        expect_same_weights_no_later(backend, spec, ring, nccl, /*strictly_earlier=*/std::nullopt);
      }
}

TEST(Algorithms, IntraHostAndAlltoallAreParametersOfTheAlgorithmsThatHaveThem) {
  // `intra_host` wherever a hierarchical mode runs intra-host phases, with today's default ("auto"; for
  // byteps "nccl", as before); `alltoall` for C_LP_S's users, default "pairwise". A value outside the
  // choices is rejected by the schema (the config layer prefixes the JSON path: experiments tests).
  Registries reg;
  for (const char* name : {"bytegrad", "qadam", "decentralized", "low_precision_decentralized",
                           "gradient_allreduce", "choco_sgd", "local_sgd", "diloco", "byteps"}) {
    const ParamSchema& schema = reg.algorithms.at(name).schema;
    const Params defaults(schema, {});
    EXPECT_EQ(defaults.get_string("intra_host"), std::string(name) == "byteps" ? "nccl" : "auto")
        << name;
    EXPECT_FALSE(schema.validate("intra_host", std::string("nccl")).has_value()) << name;
    EXPECT_EQ(schema.validate("intra_host", std::string("ring")).value_or(""),
              "must be one of auto|binomial|chain|nccl, got \"ring\"")
        << name;
  }
  for (const char* name : {"bytegrad", "qadam"}) {
    const ParamSchema& schema = reg.algorithms.at(name).schema;
    EXPECT_EQ(Params(schema, {}).get_string("alltoall"), "pairwise") << name;
    EXPECT_EQ(schema.validate("alltoall", std::string("ring")).value_or(""),
              "must be one of pairwise|nccl, got \"ring\"")
        << name;
    // `allgather`, C_LP_S's gather: default the bulk-synchronous ring.
    EXPECT_EQ(Params(schema, {}).get_string("allgather"), "ring") << name;
    EXPECT_FALSE(schema.validate("allgather", std::string("nccl")).has_value()) << name;
    EXPECT_EQ(schema.validate("allgather", std::string("pairwise")).value_or(""),
              "must be one of ring|nccl, got \"pairwise\"")
        << name;
  }
  // Every choice runs, on hosts of 3 ranks (chains, trees and NCCL's pipelined chain all differ there),
  // and every rank of a centralized algorithm ends on the same weights.
  for (Backend backend : testing::all_backends())
    for (const char* intra : {"auto", "binomial", "chain", "nccl"})
      for (const char* name : {"bytegrad", "gradient_allreduce", "decentralized", "byteps"}) {
        RunSpec spec;
        spec.algorithm = name;
        spec.params = {{"intra_host", std::string(intra)}};
        if (std::string(name) == "gradient_allreduce") spec.params["hierarchical"] = true;
        if (std::string(name) == "bytegrad") spec.params["alltoall"] = std::string("nccl");
        spec.ranks = 6;
        spec.per_host = 3;
        spec.iterations = 3;
        EXPECT_EQ(run_and_check(backend, reg, spec), "") << describe(backend, spec);
      }
}

TEST(Exactness, HierarchicalChocoOnThreeHostsIsLargeBatchSgd) {
  // Identity compression, gamma 1: a CHOCO step sets x := sum_j W_rj x_j over the leaders' ring
  // (core/primitives/choco_gossip.h). 3 hosts of 2 ranks: each leader starts from its host's average,
  // and W on a ring of 3 is 1/3 everywhere, so every rank leaves with the average over all 6 ranks of
  // the stepped weights; the ranks start equal and the gradient is linear, so the weights follow
  // large-batch SGD over 6 ranks exactly. Flat, the ring of 6 is not complete: the ranks disagree.
  Registries reg;
  for (Backend backend : testing::all_backends())
    for (bool hierarchical : {true, false}) {
      RunSpec spec;
      spec.algorithm = "choco_sgd";
      spec.params = {
          {"compressor", std::string("identity")}, {"gamma", 1.0}, {"hierarchical", hierarchical}};
      spec.ranks = 6;
      spec.per_host = 2;
      spec.iterations = 5;
      RunResult r = run_algorithm(backend, reg, spec);
      double largest_error = 0;
      for (int rank = 0; rank < 6; ++rank)
        for (size_t i = 0; i < 16; ++i)
          largest_error = std::max(largest_error, std::abs(r.weights[static_cast<size_t>(rank)][i] -
                                                           large_batch_sgd(6, i, spec.lr, 5)));
      if (hierarchical) {
        EXPECT_LT(largest_error, 1e-5) << describe(backend, spec);
      } else {
        EXPECT_GT(largest_error, 1e-3) << describe(backend, spec);
      }
    }
}

TEST(Exactness, LocalSgdAgreesAfterEveryPeriod) {
  // period 2, 4 iterations: the last step is an averaging step, so every rank holds the same weights,
  // and (the gradient being linear) they are the average of the local trajectories, which is
  // large-batch SGD again.
  Registries reg;
  RunSpec spec;
  spec.algorithm = "local_sgd";
  spec.params = {{"period", int64_t{2}}};
  spec.ranks = 3;
  spec.iterations = 4;
  RunResult r = run_algorithm(Backend::kSim, reg, spec);
  for (int rank = 0; rank < 3; ++rank)
    for (size_t i = 0; i < 16; ++i)
      EXPECT_NEAR(r.weights[static_cast<size_t>(rank)][i], large_batch_sgd(3, i, spec.lr, 4), 1e-5)
          << "rank " << rank;
}

TEST(Algorithms, AsyncModelAverageAveragesInTheBackgroundInVirtualTime) {
  // Simulator: iterations of 4 x 3 us of compute, 1 ms between rounds, 300 iterations (about 4 ms):
  // several rounds complete, and the ranks' final weights are far closer to each other than local
  // SGD without any averaging would leave them (targets differ by 1 per rank).
  Registries reg;
  RunSpec spec;
  spec.algorithm = "async_model_average";
  spec.params = {{"sync_interval_ms", int64_t{1}}};
  spec.ranks = 4;
  spec.iterations = 300;
  spec.lr = 0.001;
  RunResult r = run_algorithm(Backend::kSim, reg, spec);
  RunSpec alone = spec;
  alone.algorithm = "local_sgd";
  alone.params = {{"period", int64_t{1000}}};  // never averages within 300 iterations
  RunResult l = run_algorithm(Backend::kSim, reg, alone);
  auto spread = [](const RunResult& x) {
    double s = 0;
    for (size_t i = 0; i < 16; ++i)
      s = std::max(s, std::abs(double(x.weights[3][i]) - x.weights[0][i]));
    return s;
  };
  EXPECT_LT(spread(r), 0.5 * spread(l));
}

}  // namespace
}  // namespace bagua
