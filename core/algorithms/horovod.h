// horovod — Horovod's allreduce with Tensor Fusion (horovod/common/operations.cc, controller.cc,
// docs/tensor-fusion.rst; Sergeev & Del Balso, "Horovod", arXiv:1802.05799).
//
// Terms.
//   tensor     one layer's gradient, handed to Horovod the moment backward has made it final (every
//              layer is its own bucket: buckets() ignores the trainer's budget)
//   cycle      one turn of Horovod's background loop (RunLoopOnce): it sleeps until cycle_time_ms
//              after the previous cycle began, then the ranks agree on which tensors every rank has
//              ready, then the ready tensors are fused and allreduced. The loop runs all the time, so
//              the cycles keep their phase across iterations: a cycle starts at the first
//              last + k cycle_time at or after the moment the first tensor of an iteration arrives. A
//              cycle that finds nothing new, when this rank has no new tensor either, waits for the
//              next one to arrive (a cycle time of 0 makes Horovod spin: its next cycle is then)
//   negotiate  the agreement: each rank's count of ready tensors (they become ready in backward order,
//              so the ready set is a prefix), reduced by min over the ranks, as the coordinator's
//              "ready on every rank" rule (ComputeResponseList; with the response cache, Horovod's
//              steady state, a bit-vector allreduce: CoordinateCacheAndState / CrossRankBitwiseAnd):
//              one small allreduce per cycle, on the wire like any other message: under the MPI
//              controller (`controller` "mpi", the default) MPI_Allreduce as Open MPI 4.1 runs it for
//              8 bytes (collectives' mpi_tuned: recursive doubling, log2 P steps, below 128 ranks;
//              from 128, where Open MPI runs a reduce and a broadcast, the cheaper of the tree and
//              halving-doubling, about 2 log2 P steps), under Gloo's ("gloo") Gloo's ring, 2 (P - 1)
//              steps of latency each
//   fuse       the agreed tensors, in order, packed into groups while a group's bytes stay <=
//              fusion_threshold_bytes (FuseResponses: tensor_size + new_tensor_size <= threshold; a
//              tensor larger than the threshold travels alone). A group of more than one tensor is
//              copied into the fusion buffer and back (MemcpyInFusionBuffer / MemcpyOutFusionBuffer),
//              charged as device memory traffic; the group's tensors are consecutive layers, so the
//              group is one contiguous range of the flat gradient and the copy moves nothing else
//   allreduce  each group with NCCL's allreduce (NCCLAllreduce; `allreduce` "nccl"), summed, then
//              divided by the world size (Average: postscale_factor 1 / size); or, hierarchical
//              (NCCLHierarchicalAllreduce in horovod/common/ops/nccl_operations.cc): intra-host
//              reduce-scatter (ncclReduceScatter), allreduce of each rank's chunk among the ranks of
//              the same local rank on every host (Horovod: MPI_Allreduce on a host copy, or
//              ncclAllReduce in its torus variant; here the `allreduce` algorithm), intra-host allgather
//              (ncclAllGather). The intra-host steps are NCCL's pipelined ring on one channel; chunks
//              follow chunk_range, where Horovod handles the remainder elements with an extra
//              ncclReduce / ncclBcast. Hosts must hold the same number of ranks (Horovod's
//              is_homogeneous)
//   fp16       horovod.torch.Compression.fp16: each group cast to fp16 (the fp16 compressor, its cost
//              charged), allreduced in fp16 as above (each addition rounded to fp16, as NCCL's half
//              sum), cast back; the average's division is done after the cast back, in float32.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/algorithms/algorithm.h"
#include "core/collectives/collectives.h"

namespace bagua {

// Tensors [first, end) of one fused allreduce.
struct FusedGroup {
  int first = 0;
  int end = 0;
  bool operator==(const FusedGroup&) const = default;
};
// FuseResponses for the tensors [first, end) of `buckets` (one tensor each), in order.
std::vector<FusedGroup> fuse_tensors(const std::vector<Bucket>& buckets, int first, int end,
                                     Bytes threshold);

class Horovod final : public Algorithm {
 public:
  Horovod(const Params& params, const AlgorithmDeps& deps);
  static ParamSchema schema();

  std::string name() const override { return "horovod"; }
  std::vector<Bucket> buckets(const std::vector<Layer>& layers, Bytes budget) const override;
  void init(TrainState& s) override;
  void before_forward(TrainState& s) override;
  void on_bucket_ready(TrainState& s, const Bucket& b) override;
  void after_backward(TrainState& s) override;

 private:
  void run_cycles(TrainState& s);
  void allreduce_group(TrainState& s, const BufferView& fused, Tag tag);

  Bytes threshold_;
  Time cycle_;
  bool hierarchical_;
  bool fp16_;
  collectives::AllreduceAlgo algo_;
  collectives::NcclProtocolOption protocol_;  // `protocol`
  std::unique_ptr<Compressor> cast_;          // fp16
  std::unique_ptr<Transport> intra_;          // hierarchical: this host's ranks
  std::unique_ptr<Transport> cross_;          // hierarchical: this local rank on every host
  collectives::AllreduceAlgo negotiation_;    // `controller`: mpi_tuned (MPI) or ring (Gloo)
  Buffer ready_flag_;                         // negotiation: this rank's ready count, then the min
  std::vector<EventPtr> arrived_;             // this iteration: tensor i handed over
  std::mutex mu_;
  int ready_ = 0;                   // tensors handed over this iteration (guarded by mu_)
  std::optional<Time> last_cycle_;  // when the previous cycle began (comm stream only)
};

}  // namespace bagua
