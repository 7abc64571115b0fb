// Fashion-MNIST from Debian's dataset-fashion-mnist (scripts/setup installs it; these tests require it
// and fail, naming the file, without it): the IDX reader on the real files and on small hand-made
// ones, the standardized data set, the workload's partitions and its evaluation.
#include "core/models/fashion_mnist.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/check.h"
#include "core/models/idx.h"
#include "tests/experiments/scratch.h"

namespace bagua {
namespace {

const char* kDir = "/usr/share/datasets/fashion-mnist";  // where dataset-fashion-mnist installs it

// Loaded by the first test that needs it and held for the rest of the program, so that the tests share
// one load (load_fashion_mnist keeps it while held); not at start-up, which test discovery also runs.
const std::shared_ptr<const FashionMnistData>& data_set() {
  static const std::shared_ptr<const FashionMnistData> data = load_fashion_mnist(kDir);
  return data;
}

using testing::read_file;
using testing::write_file;

class Idx : public testing::ScratchDirTest {
 protected:
  Idx() : ScratchDirTest("bagua_idx_test") {}
  // The ConfigError message of reading `path` (expected_dims dimensions), "" if it reads.
  static std::string error_of(const std::string& path, int dims) {
    try {
      read_idx(path, dims);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  }
};

TEST_F(Idx, ReadsAHandMadeFile) {
  // Magic 0 0 8 3, dims 2 x 1 x 3 (big-endian), then 6 bytes; uncompressed (gzread reads it as is).
  const std::string bytes =
      std::string("\0\0\x08\x03", 4) + std::string("\0\0\0\x02\0\0\0\x01\0\0\0\x03", 12) + "abcdef";
  write_file(dir_ / "a.idx", bytes);
  const IdxArray a = read_idx((dir_ / "a.idx").string(), 3);
  EXPECT_EQ(a.dims, (std::vector<int64_t>{2, 1, 3}));
  EXPECT_EQ(std::string(a.data.begin(), a.data.end()), "abcdef");
}

TEST_F(Idx, BadFilesAreConfigErrorsNamingTheFile) {
  const std::string header = std::string("\0\0\x08\x01", 4) + std::string("\0\0\0\x04", 4);
  const std::string path = (dir_ / "f.idx").string();
  EXPECT_NE(error_of((dir_ / "missing.gz").string(), 1).find("missing.gz': cannot open it"),
            std::string::npos);
  write_file(path, header + "abc");  // 4 labels promised, 3 given
  EXPECT_NE(error_of(path, 1).find("f.idx': truncated: 3 data bytes of 4"), std::string::npos)
      << error_of(path, 1);
  write_file(path, header + "abcde");
  EXPECT_NE(error_of(path, 1).find("trailing bytes"), std::string::npos) << error_of(path, 1);
  write_file(path, header + "abcd");
  EXPECT_NE(error_of(path, 3).find("1 dimensions, expected 3"), std::string::npos);
  EXPECT_EQ(error_of(path, 1), "");
  write_file(path, std::string("\x1f\x8b\x08\x08", 4));  // a gzip header cut short
  EXPECT_NE(error_of(path, 1).find("f.idx': truncated"), std::string::npos) << error_of(path, 1);
  write_file(path, "PK\x03\x04 not idx");
  EXPECT_NE(error_of(path, 1).find("not an IDX file"), std::string::npos) << error_of(path, 1);
  write_file(path, std::string("\0\0\x0d\x01", 4) + std::string("\0\0\0\x01", 4) + "abcd");
  EXPECT_NE(error_of(path, 1).find("element type 13, expected 8"), std::string::npos);
}

TEST_F(Idx, ARealFileCutShortIsTruncated) {
  const std::string whole = read_file(std::string(kDir) + "/t10k-labels-idx1-ubyte.gz");
  ASSERT_GT(whole.size(), 1000u) << "install dataset-fashion-mnist (scripts/setup)";
  write_file(dir_ / "cut.gz", whole.substr(0, whole.size() / 2));
  EXPECT_NE(error_of((dir_ / "cut.gz").string(), 1).find("cut.gz': truncated"), std::string::npos)
      << error_of((dir_ / "cut.gz").string(), 1);
}

TEST(FashionMnist, TheDataSetIsTheOneOfThePaper) {
  // Xiao et al. 2017, Sec. 3: 60,000 training and 10,000 test images of 28 x 28, 10 classes of 6,000
  // and 1,000 images each.
  const auto& data = data_set();
  EXPECT_EQ(data->train.samples(), 60000);
  EXPECT_EQ(data->test.samples(), 10000);
  EXPECT_EQ(data->train.features(), 784);
  std::vector<int> train_count(10), test_count(10);
  for (int32_t c : data->train.labels)
    ++train_count[static_cast<size_t>(c)];
  for (int32_t c : data->test.labels)
    ++test_count[static_cast<size_t>(c)];
  EXPECT_EQ(train_count, std::vector<int>(10, 6000));
  EXPECT_EQ(test_count, std::vector<int>(10, 1000));
  // Standardized with the train set's statistics: every pixel of the train set has mean 0 and
  // standard deviation 1 (or 0, a pixel that is constant over the train set).
  const Eigen::MatrixXf& x = data->train.x;
  Eigen::VectorXd sum = Eigen::VectorXd::Zero(784), squares = Eigen::VectorXd::Zero(784);
  for (Eigen::Index i = 0; i < x.cols(); ++i) {
    sum += x.col(i).cast<double>();
    squares += x.col(i).cast<double>().array().square().matrix();
  }
  const Eigen::VectorXd mean = sum / 60000.0;
  EXPECT_LT(mean.cwiseAbs().maxCoeff(), 1e-4);
  const Eigen::VectorXd sd = (squares / 60000.0 - mean.array().square().matrix()).cwiseSqrt();
  for (Eigen::Index j = 0; j < sd.size(); ++j)
    EXPECT_TRUE(std::abs(sd(j) - 1) < 1e-3 || sd(j) < 1e-6) << "pixel " << j << ": sd " << sd(j);
  // Loaded once while held.
  EXPECT_EQ(load_fashion_mnist(kDir).get(), data.get());
}

std::unique_ptr<Workload> make(const std::map<std::string, ParamValue>& values, int world = 8) {
  data_set();
  WorkloadSetup setup;
  setup.world_size = world;
  setup.batch_size = 32;
  setup.seed = 3;
  return make_fashion_mnist(Params(fashion_mnist_schema(), values), setup);
}

TEST(FashionMnist, ZeroWeightsPredictTheFirstClass) {
  // Softmax regression starts from zero weights: every logit is 0, the prediction (ties: the lowest
  // class) is class 0, right for its 1,000 of the 10,000 test images: accuracy 0.1. The train loss is
  // then the cross-entropy of the uniform distribution over 10 classes, ln 10 = 2.302585.
  const auto w = make({});
  auto model = w->make_model(0);
  EXPECT_EQ(model->num_params(), 7850u);  // 784 x 10 + 10
  Buffer weights = Buffer::host(DType::kF32, model->num_params());
  model->init_weights(weights);
  EXPECT_DOUBLE_EQ(model->test_accuracy(weights), 0.1);
  EXPECT_NEAR(model->full_loss(weights), std::log(10.0), 1e-6);
}

TEST(FashionMnist, OneGradientStepImprovesTheTestAccuracy) {
  for (const char* name : {"softmax", "mlp"}) {
    const auto w = make({{"model", std::string(name)}});
    auto model = w->make_model(1);
    const size_t n = model->num_params();
    EXPECT_EQ(n, std::string(name) == "mlp" ? size_t{784 * 100 + 100 + 100 * 10 + 10} : 7850u);
    Buffer weights = Buffer::host(DType::kF32, n), grads = Buffer::host(DType::kF32, n);
    model->init_weights(weights);
    const double before = model->test_accuracy(weights);
    for (int64_t step = 0; step < 20; ++step) {
      model->forward_backward(weights, grads, step, nullptr);
      for (size_t i = 0; i < n; ++i)
        weights.as<float>()[i] -= 0.05f * grads.as<float>()[i];
    }
    // 20 steps of 32 images: far better than chance, still far from converged.
    EXPECT_GT(model->test_accuracy(weights), 0.5) << name;
    EXPECT_GT(model->test_accuracy(weights), before) << name;
    // A second model of the same workload evaluates the same weights alike.
    EXPECT_EQ(w->make_model(2)->test_accuracy(weights), model->test_accuracy(weights));
  }
}

TEST(FashionMnist, DirichletShardsPartitionTheTrainSet) {
  // The workload deals the train set by the partition of core/models/dataset.h over its labels.
  const auto w = make({{"partition", std::string("dirichlet")}, {"alpha", 0.1}});
  EXPECT_THROW(w->make_model(8), ConfigError);
  const auto& data = data_set();
  const Partition p = Partition::dirichlet(data->train.labels, 10, 8, 32, 0.1, /*seed=*/3);
  std::set<int64_t> seen;
  size_t total = 0;
  int skewed = 0;
  for (int r = 0; r < 8; ++r) {
    total += p.shard(r).size();
    seen.insert(p.shard(r).begin(), p.shard(r).end());
    std::vector<int> count(10);
    for (int64_t i : p.shard(r))
      ++count[static_cast<size_t>(data->train.labels[static_cast<size_t>(i)])];
    // alpha 0.1: most of a shard is a few classes.
    const int top = *std::max_element(count.begin(), count.end());
    skewed += top > static_cast<int>(p.shard(r).size()) / 3 ? 1 : 0;
  }
  EXPECT_EQ(total, 60000u);
  EXPECT_EQ(seen.size(), 60000u);
  EXPECT_GE(skewed, 6);
}

TEST(FashionMnist, BadParametersAreConfigErrors) {
  EXPECT_THROW(make({{"data_dir", std::string("/nonexistent")}}), ConfigError);
  try {
    make({{"data_dir", std::string("/nonexistent")}});
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/train-images-idx3-ubyte.gz"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(make({{"layers", int64_t{7851}}}), ConfigError);
}

}  // namespace
}  // namespace bagua
