// gradient_allreduce — Bagua's GradientAllReduceAlgorithm
// (bagua/torch_api/algorithms/gradient_allreduce.py): each bucket of gradients is averaged over all
// ranks with C_FP_S the moment the bucket is ready, on the communication stream, so it overlaps the
// backward pass of earlier layers; the optimizer then steps with the averaged gradients. With exact
// arithmetic this is plain large-batch SGD.
#pragma once

#include <memory>

#include "core/algorithms/algorithm.h"
#include "core/primitives/centralized.h"
#include "core/primitives/communicator.h"

namespace bagua {

class GradientAllreduce final : public Algorithm {
 public:
  explicit GradientAllreduce(const Params& params);
  static ParamSchema schema();

  std::string name() const override { return "gradient_allreduce"; }
  void init(TrainState& s) override;
  void on_bucket_ready(TrainState& s, const Bucket& b) override;
  void after_backward(TrainState& s) override;

 private:
  bool hierarchical_;
  collectives::IntraHostOptions intra_host_;  // `intra_host`
  bool average_;
  collectives::AllreduceAlgo algo_;
  collectives::NcclProtocolOption protocol_;  // `protocol`
  std::unique_ptr<Communicator> communicator_;
  std::unique_ptr<CentralizedFullPrecision> primitive_;
};

}  // namespace bagua
