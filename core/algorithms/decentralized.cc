#include "core/algorithms/decentralized.h"

#include "core/algorithms/collective_params.h"
#include "core/algorithms/compression.h"
#include "core/algorithms/tags.h"
#include "core/ops.h"

namespace bagua {

// ---- decentralized
// -------------------------------------------------------------------------------------

ParamSchema Decentralized::schema() {
  ParamSchema s;
  // Defaults are Bagua's: DecentralizedAlgorithm(hierarchical=True, peer_selection_mode="all",
  // communication_interval=1) (bagua/torch_api/algorithms/decentralized.py).
  s.add_bool("hierarchical", true,
             "intra-host average, peer averaging among host leaders, intra-host broadcast");
  add_intra_host_param(s, collectives::IntraHostAlgo::kAuto);
  s.add_string(
      "peer_selection_mode", "all",
      "all: average with every rank; shift_one: with one rank of the other half, rotating (even "
      "rank counts); ring: with both ring neighbours",
      peer_mode_names());
  s.add_int("communication_interval", 1, "iterations between two communication steps", 1);
  return s;
}

Decentralized::Decentralized(const Params& params)
    : hierarchical_(params.get_bool("hierarchical")),
      intra_host_(intra_host_options(params)),
      mode_(parse_peer_mode(params.get_string("peer_selection_mode"))),
      interval_(params.get_int("communication_interval")) {}

void Decentralized::init(TrainState& s) {
  communicator_ = std::make_unique<Communicator>(s.ctx.transport(), hierarchical_, intra_host_);
  primitive_ = std::make_unique<DecentralizedFullPrecision>(
      s.ctx, *communicator_, s.weights, DecentralizedFullPrecisionOptions{mode_, "decentralized"});
  peer_weights_ = Buffer::like(s.weights, s.weights.dtype(), s.weights.count());
}

void Decentralized::before_forward(TrainState& s) {
  communicating_ = s.step % interval_ == 0;
  if (!communicating_) return;
  s.comm.submit([this, &s] {
    TraceScope scope(s.ctx, "decentralized " + to_string(mode_), "comm", 1);
    primitive_->average(s.weights, peer_weights_, tags::bucket(tags::kWeights, 0));
  });
}

void Decentralized::after_backward(TrainState& s) {
  if (!communicating_) return;
  s.comm.synchronize();
  copy(s.weights, peer_weights_);
}

// ---- low_precision_decentralized
// -----------------------------------------------------------------------

ParamSchema LowPrecisionDecentralized::schema(const CompressorRegistry& compressors) {
  ParamSchema s;
  // Defaults are Bagua's: LowPrecisionDecentralizedAlgorithm(hierarchical=True,
  // communication_interval=1) with compression "MinMaxUInt8"
  // (bagua/torch_api/algorithms/decentralized.py).
  s.add_bool("hierarchical", true,
             "intra-host average, D_LP_S among host leaders, intra-host broadcast");
  add_intra_host_param(s, collectives::IntraHostAlgo::kAuto);
  s.add_int("communication_interval", 1, "iterations between two communication steps", 1);
  add_compressor_params(s, compressors, CompressorChoice{"minmax_uint8", {}, true, false});
  return s;
}

LowPrecisionDecentralized::LowPrecisionDecentralized(const Params& params, const AlgorithmDeps& deps)
    : hierarchical_(params.get_bool("hierarchical")),
      intra_host_(intra_host_options(params)),
      interval_(params.get_int("communication_interval")),
      factory_(make_compressor_factory(deps.compressors, params, params.get_bool("error_feedback"))) {}

void LowPrecisionDecentralized::init(TrainState& s) {
  communicator_ = std::make_unique<Communicator>(s.ctx.transport(), hierarchical_, intra_host_);
  primitives_.clear();
  for (const Bucket& b : s.buckets)
    primitives_.push_back(std::make_unique<DecentralizedLowPrecision>(
        s.ctx, *communicator_, s.weights_of(b), DecentralizedLowPrecisionOptions{factory_}));
}

void LowPrecisionDecentralized::after_update(TrainState& s) {
  if (s.step % interval_ != 0) return;
  for (const Bucket& b : s.buckets) {
    DecentralizedLowPrecision* primitive = primitives_[static_cast<size_t>(b.index)].get();
    s.comm.submit([&s, primitive, weights = s.weights_of(b), index = b.index] {
      TraceScope scope(s.ctx, "low precision decentralized bucket " + std::to_string(index), "comm", 1);
      primitive->step(weights, tags::bucket(tags::kWeights, index));
    });
  }
  s.comm.synchronize();
}

}  // namespace bagua
