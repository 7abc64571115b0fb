// Synthetic data sets and their partition among ranks.
//
// A data set is generated once per process, deterministically from the seed, and shared read-only by
// every rank the process hosts. Samples are stored as float32 columns; every data set is shuffled once
// (seeded) when it is generated, so that sample order carries no information.
//
// Partitions decide which samples each rank sees at each step:
//
//   iid        The shuffled data set is dealt to the ranks in blocks of the per-rank batch size b: at
//              step t, rank r of P gets global samples [(t P + r) b, (t P + r + 1) b), modulo the data
//              set size N (epochs wrap around; the order is NOT reshuffled per epoch, so every epoch
//              visits the samples in the same order on every rank). Consequence: P ranks with batch b
//              see at step t exactly the samples that one rank with batch P b sees at step t, so data
//              parallelism with exact gradient averaging changes nothing.
//   dirichlet  Label-skewed non-IID shards (Hsu, Qi & Brown 2019, "Measuring the effects of
//              non-identical data distribution for federated visual classification", arXiv:1909.06335):
//              for every class, proportions over the P ranks are drawn from Dirichlet(alpha) and the
//              class's samples are split among the ranks in those proportions (cut points rounded
//              down). Small alpha: each rank holds few classes; large alpha: near-uniform class mixes.
//              A rank left with no sample takes one from the currently largest shard (lowest rank on
//              ties), so that every rank can train. Each rank walks its own shard in a seeded per-rank
//              permutation: at step t it takes positions [t b, (t + 1) b) modulo its shard size. Shards
//              partition the data set: every sample belongs to exactly one rank.
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <string>
#include <vector>

namespace bagua {

struct Dataset {
  int classes = 0;              // label classes; for regression, quantile buckets of the target
  Eigen::MatrixXf x;            // features x samples: sample i is column i
  Eigen::VectorXf y;            // regression targets (empty for classification)
  std::vector<int32_t> labels;  // class of every sample, in [0, classes)

  int64_t samples() const { return x.cols(); }
  int64_t features() const { return x.rows(); }
};

// y = x . w_star + noise * N(0, 1), with x ~ N(0, I) and w_star ~ N(0, I / features) (so that the
// target has unit variance before noise). Labels: `classes` quantile buckets of y (bucket of the k-th
// smallest target = floor(k * classes / samples)), used only by the dirichlet partition. `w_star`
// receives the generating weights when not null.
Dataset make_regression_data(int64_t samples, int64_t features, double noise, int classes,
                             uint64_t seed, Eigen::VectorXd* w_star = nullptr);

// A Gaussian mixture: `classes` x `clusters_per_class` cluster centres c ~ N(0, I) * separation /
// sqrt(features) (so |c| is about `separation`), sample i belongs to class i mod classes (exactly
// balanced before the shuffle), a uniformly chosen cluster of its class, and x = centre + N(0, I).
Dataset make_gaussian_mixture(int64_t samples, int64_t features, int classes, int clusters_per_class,
                              double separation, uint64_t seed);

enum class PartitionKind : uint8_t { kIid, kDirichlet };
std::string to_string(PartitionKind kind);
// "iid" | "dirichlet"; ConfigError naming `what` otherwise.
PartitionKind parse_partition_kind(const std::string& name, const std::string& what);

class Partition {
 public:
  static Partition iid(int64_t samples, int world_size, int64_t batch_size);
  static Partition dirichlet(const std::vector<int32_t>& labels, int classes, int world_size,
                             int64_t batch_size, double alpha, uint64_t seed);

  PartitionKind kind() const { return kind_; }
  int world_size() const { return world_size_; }
  int64_t batch_size() const { return batch_size_; }
  int64_t samples() const { return samples_; }

  // The batch_size sample indices of `rank`'s batch at `step` (step >= 0), into `out`.
  void batch(int rank, int64_t step, std::vector<int64_t>& out) const;
  // dirichlet: the samples `rank` owns, in the order it visits them. iid: empty (ranks share the whole
  // set).
  const std::vector<int64_t>& shard(int rank) const;

 private:
  PartitionKind kind_ = PartitionKind::kIid;
  int world_size_ = 1;
  int64_t batch_size_ = 1;
  int64_t samples_ = 0;
  std::vector<std::vector<int64_t>> shards_;  // dirichlet only
};

}  // namespace bagua
