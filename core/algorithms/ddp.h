// ddp — PyTorch DistributedDataParallel (torch/nn/parallel/distributed.py,
// torch/csrc/distributed/c10d/reducer.cpp), the baseline most researchers compare against, with the
// communication hooks it ships (torch/distributed/algorithms/ddp_comm_hooks/).
//
// Terms.
//   bucket     DDP's gradient bucket: layers in backward (gradient-ready) order, the first bucket closed
//              once it holds >= first_bucket_bytes, every later one once it holds >= bucket_cap_mb MiB
//              (compute_bucket_assignment_by_size in reducer.cpp, with the limits
//              [_DEFAULT_FIRST_BUCKET_BYTES, bucket_bytes_cap]; Reducer::rebuild_buckets applies it after
//              the first iteration to the order in which the gradients became ready, which is the order
//              here from the start). The trainer's bucket budget (Bagua's) is not used.
//   hook       what runs on a bucket the moment its last gradient is ready, on the communication stream,
//              so that it overlaps the backward pass of earlier layers:
//     none      DDP's built-in reduction: every gradient scaled by 1 / world as it is copied into the
//               bucket (mark_variable_ready_dense in reducer.cpp: grad * (1 / div_factor_)), then the
//               bucket allreduced (sum) with NCCL's allreduce (`allreduce`, "nccl" by default)
//     fp16/bf16 fp16_compress_hook / bf16_compress_hook (default_hooks.py): the bucket divided by the
//               world size, cast to 16 bits (the fp16 / bf16 compressor, its cost charged), allreduced
//               (sum) in 16 bits with the same allreduce, every addition rounded to 16 bits as NCCL's
//               half / bfloat16 sums are, then cast back. PyTorch casts first and divides in 16 bits;
//               dividing in float32 first differs by at most one rounding
//     powersgd  powerSGD_hook (powerSGD_hook.py; Vogels et al., "PowerSGD", NeurIPS 2019), below
//
// PowerSGD, per bucket, from iteration start_iter on (vanilla allreduce, as `none`, before it):
//   e          the bucket's local error (error_feedback): the input is g + e, and afterwards
//              e := (g + e) - decompressed
//   M          a layer's gradient viewed as a side x side matrix, side = ceil(sqrt(count)), zero-padded
//              (the view batched_powerSGD_hook takes of a bucket, taken here per layer: the workloads'
//              layers carry parameter counts, not shapes, so powerSGD_hook's shape[0] x rest view is not
//              available)
//   rank       r' = min(side, r); a layer is compressed when 2 side r' min_compression_rate < count
//              (_should_compress), else it goes with the uncompressed layers
//   P, Q       side x r' factors, every layer's concatenated into one buffer per bucket
//   the steps  uncompressed layers: concatenated, allreduced (sum), divided by the world size;
//              Q: drawn N(0, 1) and orthogonalized on first use (or every iteration without warm_start),
//              else the previous Q orthogonalized (warm start); P := M Q; allreduce P (sum);
//              orthogonalize P; Q := M^T P; allreduce Q (sum); Q := Q / world; M := P Q^T
//   orthogonalize  Gram-Schmidt on the columns (_orthogonalize, epsilon 0 as PyTorch's default); a zero
//              column is left zero where PyTorch would divide by zero
// The Q draws use one generator seeded with `powersgd_seed`, a fresh seed drawn from it for each
// randomized bucket in bucket order, the same on every rank (PyTorch's state.rng). The arithmetic runs
// on host memory and is charged as modelled compute (flops of the three products, a pass over M each);
// on meta buffers only the cost and the bytes remain; device memory is a ConfigError.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/algorithms/algorithm.h"
#include "core/collectives/collectives.h"

namespace bagua {

enum class DdpHook : uint8_t { kNone, kFp16, kBf16, kPowerSgd };
std::string to_string(DdpHook hook);  // "none", "fp16", "bf16", "powersgd"

struct PowerSgdOptions {
  int rank = 1;
  int64_t start_iter = 1000;
  double min_compression_rate = 2;
  bool error_feedback = true;
  bool warm_start = true;
  uint64_t seed = 0;
};

// One layer's PowerSGD shape: side x side, r' = min(side, r), and whether it is compressed.
struct PowerSgdLayer {
  int layer = 0;  // forward index
  size_t side = 0;
  size_t rank = 0;
  bool compressed = false;
};
PowerSgdLayer powersgd_layer(const Layer& layer, int layer_index, const PowerSgdOptions& options);

class Ddp final : public Algorithm {
 public:
  Ddp(const Params& params, const AlgorithmDeps& deps);
  static ParamSchema schema();

  std::string name() const override { return "ddp"; }
  std::vector<Bucket> buckets(const std::vector<Layer>& layers, Bytes budget) const override;
  void init(TrainState& s) override;
  void on_bucket_ready(TrainState& s, const Bucket& b) override;
  void after_backward(TrainState& s) override;

 private:
  struct PowerSgdState {
    std::vector<PowerSgdLayer> layers;  // the bucket's layers, in bucket (backward) order
    size_t uncompressed_count = 0;
    size_t factor_count = 0;  // elements of P (and of Q): sum of side r' over compressed layers
    Buffer error;             // e, the bucket's size
    Buffer input;             // g + e, kept to compute the new e
    Buffer uncompressed;      // the uncompressed layers, concatenated
    Buffer p;
    Buffer q;
    std::vector<Buffer> matrices;  // M per compressed layer (side x side, zero-padded)
    bool has_q = false;            // Q memorized (warm start)
  };

  void allreduce_bucket(TrainState& s, const BufferView& grads, Tag tag);
  void powersgd(TrainState& s, const Bucket& b, PowerSgdState& state);

  Bytes bucket_cap_;
  Bytes first_bucket_;
  DdpHook hook_;
  collectives::AllreduceAlgo algo_;
  collectives::NcclProtocolOption protocol_;  // `protocol`
  PowerSgdOptions powersgd_;
  std::unique_ptr<Compressor> cast_;  // fp16 / bf16 hooks
  std::mt19937_64 rng_;               // PowerSGD's seeds for Q, the same sequence on every rank
  std::vector<Buffer> wires_;         // per bucket, fp16 / bf16 hooks: the 16-bit copy
  std::vector<PowerSgdState> powersgd_state_;  // per bucket
};

}  // namespace bagua
