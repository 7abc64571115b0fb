#include "core/models/profile.h"

#include <limits>

#include "core/check.h"

namespace bagua {

namespace {

// One rank's view of a profile: the shared layer table, no data.
class ProfileModel final : public Model {
 public:
  ProfileModel(std::shared_ptr<const std::vector<Layer>> layers, size_t num_params)
      : layers_(std::move(layers)), num_params_(num_params) {}

  const std::vector<Layer>& layers() const override { return *layers_; }
  size_t num_params() const override { return num_params_; }
  bool materialized() const override { return false; }
  void init_weights(const BufferView& w) const override {
    BAGUA_CHECK_EQ(w.count(), num_params_, "profile init_weights: weight count");
  }
  double forward_backward(const BufferView& w, const BufferView& g, int64_t,
                          const std::function<void(int layer)>& ready) override {
    BAGUA_CHECK_EQ(w.count(), num_params_, "profile forward_backward: weight count");
    BAGUA_CHECK_EQ(g.count(), num_params_, "profile forward_backward: gradient count");
    all_layers_ready(static_cast<int>(layers_->size()), ready);
    return std::numeric_limits<double>::quiet_NaN();
  }

 private:
  std::shared_ptr<const std::vector<Layer>> layers_;
  size_t num_params_;
};

class ProfileWorkload final : public Workload {
 public:
  ProfileWorkload(std::string name, std::shared_ptr<const std::vector<Layer>> layers, size_t num_params)
      : name_(std::move(name)), layers_(std::move(layers)), num_params_(num_params) {}
  std::string name() const override { return name_; }
  std::unique_ptr<Model> make_model(int rank) const override {
    if (rank < 0) throw ConfigError("profile '" + name_ + "': negative rank " + std::to_string(rank));
    return std::make_unique<ProfileModel>(layers_, num_params_);
  }

 private:
  std::string name_;
  std::shared_ptr<const std::vector<Layer>> layers_;
  size_t num_params_;
};

void validate(const ProfileSpec& spec) {
  const std::string who = "profile '" + spec.name + "'";
  if (spec.name.empty()) throw ConfigError("profile: empty name");
  if (spec.batch_size < 1)
    throw ConfigError(who + ": batch_size must be at least 1, got " + std::to_string(spec.batch_size));
  if (spec.layers.empty()) throw ConfigError(who + ": no layers");
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    const ProfileLayer& l = spec.layers[i];
    const std::string at = who + ": layers[" + std::to_string(i) + "] ('" + l.name + "')";
    if (l.params == 0) throw ConfigError(at + ": params must be positive");
    if (l.forward < Time::zero())
      throw ConfigError(at + ": negative forward time " + to_string(l.forward));
    if (l.backward < Time::zero())
      throw ConfigError(at + ": negative backward time " + to_string(l.backward));
  }
}

std::unique_ptr<Workload> make(ProfileSpec spec, double scale) {
  validate(spec);
  auto layers = std::make_shared<std::vector<Layer>>();
  size_t offset = 0;
  for (const ProfileLayer& l : spec.layers) {
    Work forward, backward;
    forward.duration = l.forward.scaled(scale);
    backward.duration = l.backward.scaled(scale);
    layers->push_back(Layer{l.name, offset, l.params, forward, backward});
    offset += l.params;
  }
  return std::make_unique<ProfileWorkload>(spec.name, std::move(layers), offset);
}

}  // namespace

std::string to_string(Precision p) {
  switch (p) {
    case Precision::kUnstated:
      return "unstated";
    case Precision::kFp32:
      return "fp32";
    case Precision::kTf32:
      return "tf32";
    case Precision::kMixed:
      return "mixed";
  }
  return "unknown";
}

std::optional<Precision> parse_precision(const std::string& text) {
  for (Precision p : {Precision::kFp32, Precision::kTf32, Precision::kMixed})
    if (text == to_string(p)) return p;
  return std::nullopt;
}

size_t total_params(const ProfileSpec& spec) {
  size_t n = 0;
  for (const ProfileLayer& l : spec.layers)
    n += l.params;
  return n;
}

std::unique_ptr<Workload> make_profile_workload(ProfileSpec spec) {
  return make(std::move(spec), 1.0);
}

std::unique_ptr<Workload> make_profile_workload(ProfileSpec spec, const WorkloadSetup& setup) {
  if (setup.batch_size < 1)
    throw ConfigError("profile '" + spec.name + "': batch_size must be at least 1, got " +
                      std::to_string(setup.batch_size));
  if (spec.batch_size < 1)
    throw ConfigError("profile '" + spec.name + "': batch_size must be at least 1, got " +
                      std::to_string(spec.batch_size));
  const double scale = static_cast<double>(setup.batch_size) / static_cast<double>(spec.batch_size);
  return make(std::move(spec), scale);
}

}  // namespace bagua
