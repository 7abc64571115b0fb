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
//               sum        each server's engine copies the first host's copy of a partition into its
//                          store and adds each other host's into it, each as it is in (taken in host
//                          order), on the server host's CPU (see "the servers' CPU time" below)
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
// The servers' CPU time. BytePS's server (byteps/server/server.cc) hands each pushed copy of a partition
// to an engine thread as it arrives: the first of a round is copied into the key's store (COPY_FIRST,
// CpuReducer::copy: a read and a write per byte), each later one summed into it (SUM_RECV,
// CpuReducer::_sum, dst[i] = dst[i] + src[i] under `omp parallel for simd`: two reads and a write per
// byte); only once all of a round's copies are in (ALL_RECV, queued behind the sums) are the pulls
// answered, from the store. So h copies of a partition of B bytes cost (3 h - 1) B of memory traffic
// on the server's CPU, charged here by Clock::compute (Work::processor kHostCpu) at that CPU's memory
// bandwidth (cluster.cpu_hosts.memory_bandwidth on CPU hosts; colocated, the server sums on the GPU
// machine's CPU, cluster.cpu.memory_bandwidth), whose default is the maintainers' figure of 100 Gbps
// of summation (experiments/config.cc, default_cpu). The server runs BYTEPS_SERVER_ENGINE_THREAD = 4
// engine threads (server.cc) of BYTEPS_OMP_THREAD_PER_GPU = 4 OpenMP threads each (cpu_reducer.cc),
// each key bound to one of them (GetThreadID, server.h), all sharing the host's memory: modelled as one
// engine that runs the server's copies and sums one after another at the whole bandwidth (the figure
// is the server's, all threads together), in the order the copies are taken in. On a real runtime the
// sums are real arithmetic and the charge is nothing.
//
// A job on one host has no servers (global.cc: a distributed job needs more than one worker): only the
// intra-host reduce and broadcast run.
//
// What is not modelled: the copies between GPU and host memory around push and pull; the server's
// engine threads apart (one engine at the server's whole rate stands for the four: exact while all
// four are busy, too fast for a partition summed alone, whose one thread's rate no source gives);
// the CPU time of the network stack (ps-lite's receive and send); and BytePS's optional priority
// scheduling (off by default, as said). The servers on CPU hosts run
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

// The server's work on one pushed copy of a partition of `bytes`, on its host's CPU: the first copy of
// a round copied into the store (`first`), any other summed into it (see above).
Work byteps_server_work(Bytes bytes, bool first);

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
  std::unique_ptr<Stream> engine_;  // colocated: this host's server's engine (see above)
  std::unique_ptr<Stream> reduce_;
  std::unique_ptr<Stream> broadcast_;
  std::vector<std::unique_ptr<Stream>> push_pull_;
  std::vector<EventPtr> reduced_;  // this iteration, per tensor: on the local root
  std::vector<EventPtr> pulled_;   // this iteration, per tensor: the sums are back
};

}  // namespace bagua
