// local_sgd — local SGD / periodic model averaging (not in Bagua): every rank takes local optimizer
// steps and, after every `period`-th step, the weights are averaged over all ranks with C_FP_S, bucket
// by bucket (Stich, "Local SGD Converges Fast and Communicates Little", ICLR 2019; Lin et al., "Don't
// Use Large Mini-Batches, Use Local SGD", ICLR 2020; PyTorch's PeriodicModelAverager). With period 1
// and plain SGD this is exactly large-batch SGD.
#pragma once

#include <memory>

#include "core/algorithms/algorithm.h"
#include "core/primitives/centralized.h"
#include "core/primitives/communicator.h"

namespace bagua {

class LocalSgd final : public Algorithm {
 public:
  explicit LocalSgd(const Params& params);
  static ParamSchema schema();

  std::string name() const override { return "local_sgd"; }
  void init(TrainState& s) override;
  void after_update(TrainState& s) override;

 private:
  int64_t period_;
  bool hierarchical_;
  collectives::IntraHostOptions intra_host_;  // `intra_host`
  std::unique_ptr<Communicator> communicator_;
  std::unique_ptr<CentralizedFullPrecision> primitive_;
};

}  // namespace bagua
