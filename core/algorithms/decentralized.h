// decentralized — Bagua's DecentralizedAlgorithm (bagua/torch_api/algorithms/decentralized.py): every
// rank trains its own replica and averages weights with peers (D_FP_S), the communication overlapping
// the forward and backward pass.
//
// Order (Bagua's hooks), on communication steps (step % communication_interval == 0, Bagua's
// _should_communicate):
//   before_forward   snapshot the weights into the peer weights and start averaging them with the peers
//                    on the communication stream (forward pre-hook: mark the tensors ready)
//   after_backward   wait for the averaging; the weights become the peer weights (post-backward hook:
//                    wait_pending_comm_ops, copy_back_peer_weight)
//   apply_update     the trainer's optimizer, with the *local* gradient (computed at the pre-averaging
//                    weights)
// All weights form one bucket, as Bagua's tensors_to_buckets flattens them into one.
//
// low_precision_decentralized — Bagua's LowPrecisionDecentralizedAlgorithm (same file): after the
// local optimizer step, each bucket runs one D_LP_S ring step (post-optimizer-step hook:
// mark ready, wait_pending_comm_ops), on communication steps only.
#pragma once

#include <memory>
#include <vector>

#include "core/algorithms/algorithm.h"
#include "core/primitives/communicator.h"
#include "core/primitives/decentralized.h"
#include "core/primitives/decentralized_low_precision.h"

namespace bagua {

class Decentralized final : public Algorithm {
 public:
  explicit Decentralized(const Params& params);
  static ParamSchema schema();

  std::string name() const override { return "decentralized"; }
  void init(TrainState& s) override;
  void before_forward(TrainState& s) override;
  void after_backward(TrainState& s) override;

 private:
  bool hierarchical_;
  collectives::IntraHostOptions intra_host_;  // `intra_host`
  PeerMode mode_;
  int64_t interval_;
  bool communicating_ = false;
  std::unique_ptr<Communicator> communicator_;
  std::unique_ptr<DecentralizedFullPrecision> primitive_;
  Buffer peer_weights_;
};

class LowPrecisionDecentralized final : public Algorithm {
 public:
  LowPrecisionDecentralized(const Params& params, const AlgorithmDeps& deps);
  static ParamSchema schema(const CompressorRegistry& compressors);

  std::string name() const override { return "low_precision_decentralized"; }
  void init(TrainState& s) override;
  void after_update(TrainState& s) override;

 private:
  bool hierarchical_;
  collectives::IntraHostOptions intra_host_;  // `intra_host`
  int64_t interval_;
  CompressorFactory factory_;
  std::unique_ptr<Communicator> communicator_;
  std::vector<std::unique_ptr<DecentralizedLowPrecision>> primitives_;  // per bucket
};

}  // namespace bagua
