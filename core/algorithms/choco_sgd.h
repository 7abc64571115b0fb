// choco_sgd — CHOCO-SGD (Koloskova, Stich and Jaggi, ICML 2019, Algorithm 2; not in Bagua):
// decentralized SGD on a ring with compressed gossip. After the trainer's local optimizer step
// (x_{t+1/2} = x_t - lr g for SGD), one CHOCO gossip step (core/primitives/choco_gossip.h) on the whole
// weight vector:
//   q = Q(x_{t+1/2} - x̂_r);  x̂ updated for self and neighbours;
//   x_{t+1} = x_{t+1/2} + gamma sum_j W_rj (x̂_j - x̂_r).
// `hierarchical` (default false, the paper's flat ring) makes each host one node of the ring: the
// host's weights are averaged onto its leader, the leaders gossip, and the result is broadcast.
#pragma once

#include <memory>

#include "core/algorithms/algorithm.h"
#include "core/primitives/choco_gossip.h"
#include "core/primitives/communicator.h"

namespace bagua {

class ChocoSgd final : public Algorithm {
 public:
  ChocoSgd(const Params& params, const AlgorithmDeps& deps);
  static ParamSchema schema(const CompressorRegistry& compressors);

  std::string name() const override { return "choco_sgd"; }
  void init(TrainState& s) override;
  void after_update(TrainState& s) override;

 private:
  double gamma_;
  bool hierarchical_;
  collectives::IntraHostOptions intra_host_;  // `intra_host`
  CompressorFactory factory_;
  std::unique_ptr<Communicator> communicator_;
  std::unique_ptr<ChocoGossip> gossip_;
};

}  // namespace bagua
