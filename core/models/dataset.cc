#include "core/models/dataset.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/check.h"
#include "core/models/random.h"

namespace bagua {

namespace {

// Independent random streams derived from the workload seed.
constexpr uint64_t kStreamData = 1;
constexpr uint64_t kStreamShuffle = 2;
constexpr uint64_t kStreamPartition = 3;
constexpr uint64_t kStreamShardOrder = 1000;  // + rank

std::vector<int64_t> permutation(int64_t n, uint64_t seed) {
  std::vector<int64_t> p(static_cast<size_t>(n));
  std::iota(p.begin(), p.end(), int64_t{0});
  Rng rng(seed);
  rng.shuffle(p);
  return p;
}

}  // namespace

Dataset make_regression_data(int64_t samples, int64_t features, double noise, int classes,
                             uint64_t seed, Eigen::VectorXd* w_star) {
  BAGUA_CHECK(samples > 0 && features > 0 && classes > 0, "regression data of an empty shape");
  Rng rng(derive_seed(seed, kStreamData));
  Eigen::VectorXd w(features);
  const double w_scale = 1.0 / std::sqrt(static_cast<double>(features));
  for (int64_t j = 0; j < features; ++j)
    w(j) = rng.normal() * w_scale;

  const std::vector<int64_t> slot = permutation(samples, derive_seed(seed, kStreamShuffle));
  Dataset d;
  d.classes = classes;
  d.x.resize(features, samples);
  d.y.resize(samples);
  Eigen::VectorXd xi(features);
  for (int64_t i = 0; i < samples; ++i) {
    for (int64_t j = 0; j < features; ++j)
      xi(j) = rng.normal();
    const double yi = xi.dot(w) + noise * rng.normal();
    const int64_t col = slot[static_cast<size_t>(i)];
    d.x.col(col) = xi.cast<float>();
    d.y(col) = static_cast<float>(yi);
  }

  // Quantile buckets of the stored (float) targets; ties broken by index, so the buckets are exact.
  std::vector<int64_t> order(static_cast<size_t>(samples));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::sort(order.begin(), order.end(),
            [&](int64_t a, int64_t b) { return d.y(a) < d.y(b) || (d.y(a) == d.y(b) && a < b); });
  d.labels.assign(static_cast<size_t>(samples), 0);
  for (int64_t k = 0; k < samples; ++k)
    d.labels[static_cast<size_t>(order[static_cast<size_t>(k)])] =
        static_cast<int32_t>(k * classes / samples);
  if (w_star) *w_star = w;
  return d;
}

Dataset make_gaussian_mixture(int64_t samples, int64_t features, int classes, int clusters_per_class,
                              double separation, uint64_t seed) {
  BAGUA_CHECK(samples > 0 && features > 0 && classes > 0 && clusters_per_class > 0,
              "gaussian mixture of an empty shape");
  Rng rng(derive_seed(seed, kStreamData));
  const int64_t clusters = int64_t{classes} * clusters_per_class;
  Eigen::MatrixXd centres(features, clusters);
  const double scale = separation / std::sqrt(static_cast<double>(features));
  for (int64_t c = 0; c < clusters; ++c)
    for (int64_t j = 0; j < features; ++j)
      centres(j, c) = rng.normal() * scale;

  const std::vector<int64_t> slot = permutation(samples, derive_seed(seed, kStreamShuffle));
  Dataset d;
  d.classes = classes;
  d.x.resize(features, samples);
  d.labels.assign(static_cast<size_t>(samples), 0);
  for (int64_t i = 0; i < samples; ++i) {
    const int label = static_cast<int>(i % classes);
    const int64_t cluster = int64_t{label} * clusters_per_class +
                            static_cast<int64_t>(rng.below(static_cast<uint64_t>(clusters_per_class)));
    const int64_t col = slot[static_cast<size_t>(i)];
    for (int64_t j = 0; j < features; ++j)
      d.x(j, col) = static_cast<float>(centres(j, cluster) + rng.normal());
    d.labels[static_cast<size_t>(col)] = label;
  }
  return d;
}

std::string to_string(PartitionKind kind) {
  switch (kind) {
    case PartitionKind::kIid:
      return "iid";
    case PartitionKind::kDirichlet:
      return "dirichlet";
  }
  return "?";
}

PartitionKind parse_partition_kind(const std::string& name, const std::string& what) {
  if (name == "iid") return PartitionKind::kIid;
  if (name == "dirichlet") return PartitionKind::kDirichlet;
  throw ConfigError(what + ": unknown partition '" + name + "' (expected \"iid\" or \"dirichlet\")");
}

Partition Partition::iid(int64_t samples, int world_size, int64_t batch_size) {
  BAGUA_CHECK(samples > 0 && world_size > 0 && batch_size > 0, "iid partition of an empty shape");
  Partition p;
  p.kind_ = PartitionKind::kIid;
  p.world_size_ = world_size;
  p.batch_size_ = batch_size;
  p.samples_ = samples;
  return p;
}

Partition Partition::dirichlet(const std::vector<int32_t>& labels, int classes, int world_size,
                               int64_t batch_size, double alpha, uint64_t seed) {
  const int64_t samples = static_cast<int64_t>(labels.size());
  BAGUA_CHECK(world_size > 0 && batch_size > 0 && classes > 0 && alpha > 0,
              "dirichlet partition arguments");
  if (samples < world_size)
    throw ConfigError("dirichlet partition: samples (" + std::to_string(samples) +
                      ") must be at least the world size (" + std::to_string(world_size) + ")");
  Partition p;
  p.kind_ = PartitionKind::kDirichlet;
  p.world_size_ = world_size;
  p.batch_size_ = batch_size;
  p.samples_ = samples;
  p.shards_.assign(static_cast<size_t>(world_size), {});

  // Members of each class, in data set order (already shuffled).
  std::vector<std::vector<int64_t>> members(static_cast<size_t>(classes));
  for (int64_t i = 0; i < samples; ++i) {
    const int32_t c = labels[static_cast<size_t>(i)];
    BAGUA_CHECK(c >= 0 && c < classes, "label out of range");
    members[static_cast<size_t>(c)].push_back(i);
  }

  Rng rng(derive_seed(seed, kStreamPartition));
  for (const std::vector<int64_t>& m : members) {
    const std::vector<double> share = rng.dirichlet(alpha, world_size);
    const int64_t n = static_cast<int64_t>(m.size());
    double cumulative = 0;
    int64_t begin = 0;
    for (int r = 0; r < world_size; ++r) {
      cumulative += share[static_cast<size_t>(r)];
      const int64_t end =
          r + 1 == world_size
              ? n
              : std::min(n, static_cast<int64_t>(std::floor(cumulative * static_cast<double>(n))));
      for (int64_t k = begin; k < end; ++k)
        p.shards_[static_cast<size_t>(r)].push_back(m[static_cast<size_t>(k)]);
      begin = std::max(begin, end);
    }
  }

  // Every rank needs at least one sample: move one from the largest shard (lowest rank on ties).
  for (auto& shard : p.shards_) {
    if (!shard.empty()) continue;
    auto largest = std::max_element(p.shards_.begin(), p.shards_.end(),
                                    [](const auto& a, const auto& b) { return a.size() < b.size(); });
    shard.push_back(largest->back());
    largest->pop_back();
  }

  // Each rank's visiting order: its own seeded permutation.
  for (int r = 0; r < world_size; ++r) {
    Rng order(derive_seed(seed, kStreamShardOrder + static_cast<uint64_t>(r)));
    order.shuffle(p.shards_[static_cast<size_t>(r)]);
  }
  return p;
}

void Partition::batch(int rank, int64_t step, std::vector<int64_t>& out) const {
  BAGUA_CHECK(rank >= 0 && rank < world_size_,
              "batch of rank " + std::to_string(rank) + " of " + std::to_string(world_size_));
  BAGUA_CHECK(step >= 0, "batch at a negative step");
  out.resize(static_cast<size_t>(batch_size_));
  if (kind_ == PartitionKind::kIid) {
    const int64_t first = ((step * world_size_ + rank) * batch_size_) % samples_;
    for (int64_t j = 0; j < batch_size_; ++j)
      out[static_cast<size_t>(j)] = (first + j) % samples_;
    return;
  }
  const std::vector<int64_t>& own = shards_[static_cast<size_t>(rank)];
  const int64_t n = static_cast<int64_t>(own.size());
  const int64_t first = (step % n) * (batch_size_ % n) % n;  // (step * b) mod n without overflow
  for (int64_t j = 0; j < batch_size_; ++j)
    out[static_cast<size_t>(j)] = own[static_cast<size_t>((first + j) % n)];
}

const std::vector<int64_t>& Partition::shard(int rank) const {
  static const std::vector<int64_t> kNone;
  if (kind_ == PartitionKind::kIid) return kNone;
  BAGUA_CHECK(rank >= 0 && rank < world_size_, "shard of rank " + std::to_string(rank));
  return shards_[static_cast<size_t>(rank)];
}

}  // namespace bagua
