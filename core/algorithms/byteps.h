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
//   server      a summation server. `servers` colocated: one on each worker host, the deployment of
//               the paper's colocated mode, sharing the host's NIC. `servers` cpu_hosts: one on each
//               of the cluster's CPU-only hosts (cluster.cpu_hosts), a service rank of the world
//               (core/services.h), BytePS's deployment with DMLC_NUM_SERVER server machines
//               (docs/step-by-step-tutorial.md in bytedance/byteps). Partition key -> server
//               Hash_DJB2(key) % servers (EncodeDefaultKey in global.cc, BYTEPS_KEY_HASH_FN djb2, the
//               default): djb2 over the key's decimal digits
//   local root  a host's first rank, the one that talks to the servers (BytePS's LOCAL_ROOT); in the
//               colocated mode the host's server runs beside it and answers over the same NIC
//   the steps   per tensor, in the order tensors become ready:
//               reduce     intra-host reduce of the tensor onto the local root (NCCL's pipelined reduce),
//                          one tensor after another on a reduce stream (BytePS's one NCCL reduce stream,
//                          _reduce_stream in global.cc)
//               push       the local root sends each partition to its server; colocated, a partition
//                          whose server is on its own host is handed over locally; on CPU hosts every
//                          partition leaves over the worker host's NIC for the server host's NIC
//               sum        each server adds the hosts' copies of its partitions, in host order
//               pull       every local root receives each partition's sum from its server
//               broadcast  intra-host broadcast of the tensor from the local root (NCCL's pipelined
//                          broadcast), then divided by the world size (byteps.torch averages)
//
// CPU servers' cost, ideally (Jiang et al., OSDI 2020, whose terms are n GPU machines, k CPU machines,
// model size M and NIC bandwidth B): each worker host pushes M and pulls M over its NIC, each CPU
// server receives n M / k and sends as much, so with both directions of a full-duplex NIC busy at once
// an iteration's communication takes max(M / B, n M / (k B)) (Sec. 2.3, non-colocated PS), against an
// allreduce's 2 (n - 1) M / (n B) (Sec. 2.2). BytePS's optimum, Theorem 1 of Sec. 4.1, t_opt =
// 2 n (n - 1) M / ((n^2 + k n - 2 k) B), is M / B at k = n: the paper's near-2x over allreduce. The
// simulator gives what the flows really do (partitions unequal across servers by the hash, the pulls
// waiting for the last host's push of each partition).
//
// A job on one host has no servers (global.cc: a distributed job needs more than one worker): only the
// intra-host reduce and broadcast run.
//
// What is not modelled: the copies between GPU and host memory around push and pull, the servers' CPU
// time for the sum (neither the OSDI 2020 paper nor BytePS's code gives a figure to charge: the paper's
// Summation Service runs only the sum on the CPU, with AVX, so that it keeps up with the network),
// and BytePS's optional priority scheduling (off by default, as said). The servers on CPU hosts run
// only on the sim and threads runtimes (an MPI job's processes are all workers). The hybrid placement
// of the paper's Sec. 4.1 (part of the load on GPU machines' spare CPUs beside the CPU machines) is not
// offered: BytePS's code hashes every partition to the DMLC_NUM_SERVER servers it is given.
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

enum class BytepsServers : uint8_t { kColocated, kCpuHosts };

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
  bool uses_service_ranks() const override { return servers_ == BytepsServers::kCpuHosts; }
  // A CPU host's summation server: for each iteration and each tensor with partitions here, receives
  // every local root's copy, sums them in host order and answers every root's pull.
  void serve(ServiceState& s) override;

  // Tensors whose push and pull may be in flight at once (see above).
  static constexpr size_t kPushPullStreams = 32;

 private:
  void push_pull(TrainState& s, const Bucket& b);
  void push_pull_cpu_servers(TrainState& s, const Bucket& b);

  int64_t partition_bytes_;
  BytepsServers servers_;
  const ServiceRanks* services_ = nullptr;    // servers on CPU hosts: the world's service ranks
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
