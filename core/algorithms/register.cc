#include "core/algorithms/async_model_average.h"
#include "core/algorithms/bytegrad.h"
#include "core/algorithms/byteps.h"
#include "core/algorithms/choco_sgd.h"
#include "core/algorithms/ddp.h"
#include "core/algorithms/decentralized.h"
#include "core/algorithms/diloco.h"
#include "core/algorithms/gradient_allreduce.h"
#include "core/algorithms/horovod.h"
#include "core/algorithms/local_sgd.h"
#include "core/algorithms/qadam.h"

namespace bagua {

void register_algorithms(AlgorithmRegistry& registry, const CompressorRegistry& compressors) {
  // The compressors' parameter schemas are declared inside the compressing algorithms' schemas
  // (core/algorithms/compression.h); the factories use the registry handed over in AlgorithmDeps,
  // which must be this one.

  registry.add(
      "gradient_allreduce",
      "C_FP_S: average each bucket of gradients over all ranks, overlapped with backward (Bagua)",
      GradientAllreduce::schema(),
      [](const Params& p, const AlgorithmDeps&) { return std::make_unique<GradientAllreduce>(p); });
  registry.add(
      "bytegrad",
      "C_LP_S: compressed scatter-reduce-gather of each gradient bucket, MinMax uint8 (Bagua ByteGrad)",
      Bytegrad::schema(compressors),
      [](const Params& p, const AlgorithmDeps& d) { return std::make_unique<Bytegrad>(p, d); });
  registry.add(
      "decentralized",
      "D_FP_S: local steps, weights averaged with peers (all, shift_one, ring) overlapped with "
      "forward and backward (Bagua)",
      Decentralized::schema(),
      [](const Params& p, const AlgorithmDeps&) { return std::make_unique<Decentralized>(p); });
  registry.add(
      "low_precision_decentralized",
      "D_LP_S: local steps, then ring averaging by compressed differences of public weights (Bagua)",
      LowPrecisionDecentralized::schema(compressors), [](const Params& p, const AlgorithmDeps& d) {
        return std::make_unique<LowPrecisionDecentralized>(p, d);
      });
  registry.add(
      "qadam",
      "Adam; after a full-precision warm-up, the momentum is averaged compressed with C_LP_S and the "
      "variance frozen (Bagua QAdam; 8-bit or 1-bit)",
      QAdam::schema(compressors),
      [](const Params& p, const AlgorithmDeps& d) { return std::make_unique<QAdam>(p, d); });
  registry.add(
      "async_model_average",
      "local steps while a background loop averages the weights every sync_interval_ms (Bagua)",
      AsyncModelAverage::schema(),
      [](const Params& p, const AlgorithmDeps&) { return std::make_unique<AsyncModelAverage>(p); });
  registry.add("local_sgd", "local steps, weights averaged over all ranks every `period` steps",
               LocalSgd::schema(),
               [](const Params& p, const AlgorithmDeps&) { return std::make_unique<LocalSgd>(p); });
  registry.add("diloco",
               "DiLoCo: H inner steps, then Nesterov outer steps on the averaged parameter change "
               "(Douillard et al. 2023)",
               Diloco::schema(),
               [](const Params& p, const AlgorithmDeps& d) { return std::make_unique<Diloco>(p, d); });
  registry.add("choco_sgd",
               "CHOCO-SGD: local steps, compressed gossip of weight differences on a ring (Koloskova "
               "et al. 2019)",
               ChocoSgd::schema(compressors), [](const Params& p, const AlgorithmDeps& d) {
                 return std::make_unique<ChocoSgd>(p, d);
               });

  // The systems users compare against (baselines).
  registry.add("ddp",
               "PyTorch DDP: 25 MiB buckets in backward order (the first 1 MiB), NCCL allreduce "
               "overlapped with backward; comm hooks fp16, bf16, PowerSGD",
               Ddp::schema(),
               [](const Params& p, const AlgorithmDeps& d) { return std::make_unique<Ddp>(p, d); });
  registry.add("horovod",
               "Horovod: tensors ready within a cycle fused up to the threshold, NCCL allreduce; "
               "optional hierarchical allreduce and fp16 compression",
               Horovod::schema(),
               [](const Params& p, const AlgorithmDeps& d) { return std::make_unique<Horovod>(p, d); });
  registry.add("byteps",
               "BytePS: partitions pushed to summation servers (one per host), summed, pulled; "
               "intra-host reduce and broadcast",
               Byteps::schema(),
               [](const Params& p, const AlgorithmDeps&) { return std::make_unique<Byteps>(p); });
}

}  // namespace bagua
