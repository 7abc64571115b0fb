#include "core/algorithms/choco_sgd.h"

#include "core/algorithms/collective_params.h"
#include "core/algorithms/compression.h"
#include "core/algorithms/tags.h"

namespace bagua {

ParamSchema ChocoSgd::schema(const CompressorRegistry& compressors) {
  ParamSchema s;
  // gamma 0.4 with the sign compressor on a ring: the authors' ResNet-20 / CIFAR-10 CHOCO example
  // (epfml/ChocoSGD, dl_code/exps/finetune-resnet20-cifar10/example.sh: parallel_choco, comm_op sign,
  // consensus_stepsize 0.4, graph_topology ring).
  s.add_double("gamma", 0.4, "consensus step size", 0.0, 1.0, true);
  // Off by default: the paper's CHOCO-SGD is flat (every rank a node of the ring).
  s.add_bool("hierarchical", false,
             "intra-host average, CHOCO gossip among host leaders, intra-host broadcast");
  add_intra_host_param(s, collectives::IntraHostAlgo::kAuto);
  add_compressor_params(s, compressors,
                        CompressorChoice{"sign", {}, /*error_feedback_param=*/false, false});
  return s;
}

ChocoSgd::ChocoSgd(const Params& params, const AlgorithmDeps& deps)
    : gamma_(params.get_double("gamma")),
      hierarchical_(params.get_bool("hierarchical")),
      intra_host_(intra_host_options(params)),
      factory_(make_compressor_factory(deps.compressors, params, /*error_feedback=*/false)) {}

void ChocoSgd::init(TrainState& s) {
  communicator_ = std::make_unique<Communicator>(s.ctx.transport(), hierarchical_, intra_host_);
  gossip_ = std::make_unique<ChocoGossip>(s.ctx, *communicator_, s.weights,
                                          ChocoGossipOptions{factory_, gamma_});
}

void ChocoSgd::after_update(TrainState& s) {
  s.comm.submit([this, &s] {
    TraceScope scope(s.ctx, "choco gossip", "comm", 1);
    gossip_->step(s.weights, tags::bucket(tags::kWeights, 0));
  });
  s.comm.synchronize();
}

}  // namespace bagua
