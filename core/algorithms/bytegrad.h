// bytegrad — Bagua's ByteGradAlgorithm (bagua/torch_api/algorithms/bytegrad.py): each bucket of
// gradients is averaged with C_LP_S (compressed scatter-reduce-gather, MinMax uint8 in Bagua) the
// moment it is ready, on the communication stream; the optimizer then steps with the averaged
// gradients.
//
// Parameters beyond Bagua: `compressor` (any registered compressor, with its parameters prefixed by its
// name, e.g. topk_ratio) and `error_feedback` (off by default: Bagua's behaviour).
#pragma once

#include <memory>
#include <vector>

#include "core/algorithms/algorithm.h"
#include "core/primitives/centralized_low_precision.h"
#include "core/primitives/communicator.h"

namespace bagua {

class Bytegrad final : public Algorithm {
 public:
  Bytegrad(const Params& params, const AlgorithmDeps& deps);
  static ParamSchema schema(const CompressorRegistry& compressors);

  std::string name() const override { return "bytegrad"; }
  void init(TrainState& s) override;
  void on_bucket_ready(TrainState& s, const Bucket& b) override;
  void after_backward(TrainState& s) override;

 private:
  bool hierarchical_;
  collectives::IntraHostOptions intra_host_;  // `intra_host`
  collectives::AlltoallAlgo alltoall_;        // `alltoall`
  collectives::AllgatherAlgo allgather_;      // `allgather`
  bool average_;
  CompressorFactory factory_;
  std::unique_ptr<Communicator> communicator_;
  std::vector<std::unique_ptr<CentralizedLowPrecision>> primitives_;  // per bucket
};

}  // namespace bagua
