// byteps — BytePS's push/pull through summation servers (bytedance/byteps byteps/common/global.cc,
// operations.cc; Jiang et al., "A Unified Architecture for Accelerating Distributed DNN Training in
// Heterogeneous GPU/CPU Clusters", OSDI 2020).
//
// Terms.
//   tensor      one layer's gradient, handed over the moment backward has made it final (every layer
//               is its own bucket), declared with key k = its forward layer index (BytePS declares the
//               tensors in the order the framework lists them, a counter from 0)
//   partition   a tensor cut into pieces of at most partition_bytes (BYTEPS_PARTITION_BYTES, rounded up
//               to a multiple of 8 x local_size as global.cc aligns it), whole float32 elements;
//               partition i of tensor k has the key (k << 16) + i (InitTensor in operations.cc)
//   server      a summation server; `servers` colocated: one on each worker host, the deployment of
//               the paper's colocated mode, sharing the host's NIC. Partition key -> server
//               Hash_DJB2(key) % servers (EncodeDefaultKey in global.cc, BYTEPS_KEY_HASH_FN djb2, the
//               default): djb2 over the key's decimal digits
//   local root  a host's first rank, the one that talks to the servers (BytePS's LOCAL_ROOT); in the
//               colocated mode the host's server runs beside it and answers over the same NIC
//   the steps   per tensor, in the order tensors become ready:
//               reduce     intra-host reduce of the tensor onto the local root (NCCL's pipelined reduce),
//                          one tensor after another on a reduce stream (BytePS's one NCCL reduce stream,
//                          _reduce_stream in global.cc)
//               push       the local root sends each partition to its server; a partition whose server
//                          is on its own host is handed over locally
//               sum        each server adds the hosts' copies of its partitions, in host order
//               pull       every local root receives each partition's sum from its server
//               broadcast  intra-host broadcast of the tensor from the local root (NCCL's pipelined
//                          broadcast), then divided by the world size (byteps.torch averages)
// A job on one host has no servers (global.cc: a distributed job needs more than one worker): only the
// intra-host reduce and broadcast run.
//
// What is not modelled: the copies between GPU and host memory around push and pull, the servers' CPU
// time for the sum, and BytePS's optional priority scheduling (off by default, as said). `cpu_hosts` (servers on extra CPU-only
// machines, BytePS's other deployment) needs ranks that do not train: every rank of a World runs the
// trainer, and a topology's hosts are all worker hosts, so it is not offered.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/algorithms/algorithm.h"
#include "core/collectives/collectives.h"

namespace bagua {

// One partition of a tensor: its elements within the tensor, its key and its server.
struct BytepsPartition {
  size_t offset = 0;
  size_t count = 0;
  uint64_t key = 0;
  int server = 0;
  bool operator==(const BytepsPartition&) const = default;
};

// Hash_DJB2 (global.cc): hash = 5381, then hash = hash * 33 + c for each decimal digit c of key.
uint64_t byteps_djb2(uint64_t key);
// The partition bound: partition_bytes rounded up to a multiple of 8 x local_size (AlignTo), in
// whole float32 elements.
size_t byteps_partition_elements(int64_t partition_bytes, int local_size);
// The partitions of tensor `declared_key` of `count` elements among `servers` servers.
std::vector<BytepsPartition> byteps_partitions(int declared_key, size_t count,
                                               size_t partition_elements, int servers);

class Byteps final : public Algorithm {
 public:
  explicit Byteps(const Params& params);
  static ParamSchema schema();

  std::string name() const override { return "byteps"; }
  std::vector<Bucket> buckets(const std::vector<Layer>& layers, Bytes budget) const override;
  void init(TrainState& s) override;
  void before_forward(TrainState& s) override;
  void on_bucket_ready(TrainState& s, const Bucket& b) override;
  void after_backward(TrainState& s) override;

  // Tensors whose push and pull may be in flight at once (see above).
  static constexpr size_t kPushPullStreams = 32;

 private:
  void push_pull(TrainState& s, const Bucket& b);

  int64_t partition_bytes_;
  collectives::IntraHostOptions intra_host_;  // `intra_host`
  std::unique_ptr<collectives::HierarchicalGroups> groups_;
  std::vector<std::vector<BytepsPartition>> partitions_;  // per tensor (bucket index)
  std::unique_ptr<Stream> reduce_;
  std::unique_ptr<Stream> broadcast_;
  std::vector<std::unique_ptr<Stream>> push_pull_;
  std::vector<EventPtr> reduced_;  // this iteration, per tensor: on the local root
  std::vector<EventPtr> pulled_;   // this iteration, per tensor: the sums are back
};

}  // namespace bagua
