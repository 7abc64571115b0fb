#include "core/algorithms/bytegrad.h"

#include "core/algorithms/collective_params.h"
#include "core/algorithms/compression.h"
#include "core/algorithms/tags.h"

namespace bagua {

ParamSchema Bytegrad::schema(const CompressorRegistry& compressors) {
  ParamSchema s;
  // Defaults are Bagua's: ByteGradAlgorithm(hierarchical=True, average=True) with compression
  // "MinMaxUInt8" (bagua/torch_api/algorithms/bytegrad.py).
  s.add_bool("hierarchical", true,
             "intra-host reduce, C_LP_S among host leaders, intra-host broadcast");
  add_intra_host_param(s, collectives::IntraHostAlgo::kAuto);
  add_alltoall_param(s);
  add_allgather_param(s);
  s.add_bool("average", true, "average the gradients (false: sum them)");
  add_compressor_params(s, compressors, CompressorChoice{"minmax_uint8", {}, true, false});
  return s;
}

Bytegrad::Bytegrad(const Params& params, const AlgorithmDeps& deps)
    : hierarchical_(params.get_bool("hierarchical")),
      intra_host_(intra_host_options(params)),
      alltoall_(alltoall_algo(params)),
      allgather_(allgather_algo(params)),
      average_(params.get_bool("average")),
      factory_(make_compressor_factory(deps.compressors, params, params.get_bool("error_feedback"))) {}

void Bytegrad::init(TrainState& s) {
  communicator_ = std::make_unique<Communicator>(s.ctx.transport(), hierarchical_, intra_host_);
  primitives_.clear();
  for (const Bucket& b : s.buckets)
    primitives_.push_back(std::make_unique<CentralizedLowPrecision>(
        s.ctx, *communicator_, s.grads_of(b),
        CentralizedLowPrecisionOptions{factory_, average_, alltoall_, allgather_}));
}

void Bytegrad::on_bucket_ready(TrainState& s, const Bucket& b) {
  CentralizedLowPrecision* primitive = primitives_[static_cast<size_t>(b.index)].get();
  s.comm.submit([&s, primitive, grads = s.grads_of(b), index = b.index] {
    TraceScope scope(s.ctx, "bytegrad bucket " + std::to_string(index), "comm", 1);
    primitive->allreduce(grads, tags::bucket(tags::kGradient, index));
  });
}

void Bytegrad::after_backward(TrainState& s) {
  s.comm.synchronize();
}

}  // namespace bagua
