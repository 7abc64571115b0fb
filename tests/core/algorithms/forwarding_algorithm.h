// An algorithm that hands every hook to another one: the base of the test wrappers that watch a run
// (they override the hooks they watch and call the inner algorithm's from there).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/algorithms/algorithm.h"

namespace bagua::testing {

class ForwardingAlgorithm : public Algorithm {
 public:
  explicit ForwardingAlgorithm(Algorithm& inner) : inner_(inner) {}
  std::string name() const override { return inner_.name(); }
  std::vector<Bucket> buckets(const std::vector<Layer>& layers, Bytes budget) const override {
    return inner_.buckets(layers, budget);
  }
  void init(TrainState& s) override { inner_.init(s); }
  void before_forward(TrainState& s) override { inner_.before_forward(s); }
  void on_bucket_ready(TrainState& s, const Bucket& b) override { inner_.on_bucket_ready(s, b); }
  void after_backward(TrainState& s) override { inner_.after_backward(s); }
  void apply_update(TrainState& s) override { inner_.apply_update(s); }
  Work update_cost(const TrainState& s) const override { return inner_.update_cost(s); }
  void read_weights(TrainState& s, const std::function<void()>& read) override {
    inner_.read_weights(s, read);
  }
  void after_update(TrainState& s) override { inner_.after_update(s); }
  void finish(TrainState& s) override { inner_.finish(s); }

  Algorithm& inner() { return inner_; }

 private:
  Algorithm& inner_;
};

}  // namespace bagua::testing
