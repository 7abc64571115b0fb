#include "core/algorithms/byteps.h"

#include <algorithm>
#include <map>
#include <string>

#include "core/algorithms/collective_params.h"
#include "core/algorithms/tags.h"
#include "core/ops.h"

namespace bagua {

uint64_t byteps_djb2(uint64_t key) {
  uint64_t hash = 5381;
  for (char c : std::to_string(key))
    hash = (hash << 5) + hash + static_cast<uint64_t>(c);
  return hash;
}

size_t byteps_partition_elements(int64_t partition_bytes, int local_size) {
  const int64_t alignment = 8 * int64_t{local_size};
  const int64_t aligned = (partition_bytes + alignment - 1) / alignment * alignment;
  return std::max<size_t>(1, static_cast<size_t>(aligned) / sizeof(float));
}

std::vector<BytepsPartition> byteps_partitions(int declared_key, size_t count,
                                               size_t partition_elements, int servers) {
  std::vector<BytepsPartition> parts;
  const uint64_t start = static_cast<uint64_t>(declared_key) << 16;
  for (size_t offset = 0; offset < count; offset += partition_elements) {
    BytepsPartition p;
    p.offset = offset;
    p.count = std::min(partition_elements, count - offset);
    p.key = start + parts.size();
    p.server = static_cast<int>(byteps_djb2(p.key) % static_cast<uint64_t>(servers));
    parts.push_back(p);
  }
  return parts;
}

Work byteps_server_work(Bytes bytes, bool first) {
  // COPY_FIRST (CpuReducer::copy, out[i] = in[i]): one read and one write per byte. SUM_RECV
  // (CpuReducer::_sum, dst[i] = dst[i] + src[i]): two reads and one write per byte.
  Work w;
  w.memory = first ? bytes * 2 : bytes * 3;
  w.label = first ? "byteps server copy" : "byteps server sum";
  w.processor = Processor::kHostCpu;
  return w;
}

ParamSchema Byteps::schema() {
  ParamSchema s;
  // BytePSGlobal::_partition_bytes = 4096000 (byteps/common/global.cc), BYTEPS_PARTITION_BYTES.
  s.add_int("partition_bytes", 4096000, "BYTEPS_PARTITION_BYTES: largest partition, in bytes", 4);
  // The colocated deployment: a server process on every worker machine (the BytePS README's
  // distributed-training setup runs DMLC_NUM_SERVER servers; the paper, Sec. 4, colocates them).
  // "cpu_hosts": BytePS's deployment on extra CPU-only machines (DMLC_NUM_SERVER servers,
  // docs/step-by-step-tutorial.md), one server on each of cluster.cpu_hosts.
  s.add_string("servers", "colocated",
               "summation servers: colocated (one on each worker host) or cpu_hosts (one on each of "
               "cluster.cpu_hosts)",
               {"colocated", "cpu_hosts"});
  // BytePS's intra-host phases are NCCL calls (byteps/common/core_loops.cc, PostNcclCalls: ncclReduce
  // or ncclReduceScatter into the root's output on the way in, ncclBroadcast or ncclAllGather on the
  // way out), modelled as NCCL's pipelined reduce onto and broadcast from the local root: "nccl".
  add_intra_host_param(s, collectives::IntraHostAlgo::kNccl);
  return s;
}

Byteps::Byteps(const Params& params)
    : partition_bytes_(params.get_int("partition_bytes")),
      servers_(params.get_string("servers") == "cpu_hosts" ? BytepsServers::kCpuHosts
                                                           : BytepsServers::kColocated),
      intra_host_(intra_host_options(params)) {}

std::vector<Bucket> Byteps::buckets(const std::vector<Layer>& layers, Bytes /*budget*/) const {
  return make_buckets(layers, Bytes(0));  // one tensor per layer
}

void Byteps::init(TrainState& s) {
  groups_ = std::make_unique<collectives::HierarchicalGroups>(s.ctx.transport(), intra_host_);
  int local_size = 1;
  for (const std::vector<int>& host : groups_->layout.hosts)
    local_size = std::max(local_size, static_cast<int>(host.size()));
  const size_t bound = byteps_partition_elements(partition_bytes_, local_size);
  int servers = groups_->hosts();
  if (servers_ == BytepsServers::kCpuHosts) {
    services_ = s.ctx.services();
    if (!services_ || services_->count < 1)
      throw ConfigError(
          "algorithm.servers: \"cpu_hosts\" needs CPU hosts to run the servers on (cluster.cpu_hosts)");
    servers = services_->count;
  }
  partitions_.clear();
  for (const Bucket& b : s.buckets) {
    BAGUA_CHECK_EQ(b.layers.size(), size_t{1}, "byteps: one tensor per bucket");
    partitions_.push_back(byteps_partitions(b.layers.front(), b.count, bound, servers));
  }
  reduce_ = s.ctx.make_stream("byteps reduce");
  broadcast_ = s.ctx.make_stream("byteps broadcast");
  // Only a local root pushes, pulls and (colocated) serves: the other ranks of a host have no such
  // streams. On the simulator each stream is a fiber with a stack of its own, two memory mappings
  // (the stack and its guard page): at 1024 ranks the other 896 ranks' 33 idle streams each came to
  // 59,136 mappings, and with the rest the run passed Linux's default vm.max_map_count (65,530).
  engine_.reset();
  push_pull_.clear();
  if (groups_->is_leader()) {
    engine_ = s.ctx.make_stream("byteps server engine");
    const size_t streams = std::min(s.buckets.size(), kPushPullStreams);
    for (size_t i = 0; i < streams; ++i)
      push_pull_.push_back(s.ctx.make_stream("byteps push/pull " + std::to_string(i)));
  }
}

void Byteps::before_forward(TrainState& s) {
  // Every stream is idle here (after_backward waited for them).
  reduced_.clear();
  pulled_.clear();
  for (size_t i = 0; i < s.buckets.size(); ++i) {
    reduced_.push_back(s.ctx.make_event());
    pulled_.push_back(s.ctx.make_event());
  }
}

void Byteps::on_bucket_ready(TrainState& s, const Bucket& b) {
  const auto t = static_cast<size_t>(b.index);
  const Tag tag = tags::bucket(tags::kGradient, b.index);
  const bool root = groups_->is_leader();
  reduce_->submit([this, &s, &b, t, tag] {
    TraceScope scope(s.ctx, "byteps reduce " + std::to_string(b.index), "comm", 1);
    collectives::intra_host_reduce(*groups_, s.grads_of(b), ReduceOp::kSum, tag);
    reduced_[t]->set();
  });
  if (root)
    push_pull_[t % push_pull_.size()]->submit([this, &s, &b, t] {
      reduced_[t]->wait();
      TraceScope scope(s.ctx, "byteps push/pull " + std::to_string(b.index), "comm", 2);
      push_pull(s, b);
      pulled_[t]->set();
    });
  broadcast_->submit([this, &s, &b, t, tag, root] {
    (root ? pulled_[t] : reduced_[t])->wait();
    TraceScope scope(s.ctx, "byteps broadcast " + std::to_string(b.index), "comm", 1);
    const BufferView grads = s.grads_of(b);
    collectives::intra_host_broadcast(*groups_, grads, tag);
    scale(grads, 1.0 / s.ctx.transport().size());
  });
}

void Byteps::push_pull(TrainState& s, const Bucket& b) {
  Transport& leaders = *groups_->leaders;
  const int host = leaders.rank();
  const int hosts = leaders.size();
  if (hosts == 1) return;  // not a distributed job: no servers
  if (servers_ == BytepsServers::kCpuHosts) {
    push_pull_cpu_servers(s, b);
    return;
  }
  const BufferView grads = s.grads_of(b);
  const Tag push_tag = tags::bucket(tags::kGradient, b.index);
  const Tag pull_tag = tags::bucket(tags::kPull, b.index);
  const std::vector<BytepsPartition>& parts = partitions_[static_cast<size_t>(b.index)];

  // Server side: receive every other host's copy of the partitions this host serves; this host's own
  // copy is handed over at once, and the server's engine copies it into its store.
  struct Served {
    BufferView sum;
    std::vector<Buffer> copies;      // by host; empty for this host
    std::vector<RequestPtr> pushed;  // by host; null for this host
    EventPtr summed;                 // the engine's last task for this partition
  };
  std::vector<Served> served;
  for (const BytepsPartition& p : parts) {
    if (p.server != host) continue;
    Served sv{grads.slice(p.offset, p.count), std::vector<Buffer>(static_cast<size_t>(hosts)),
              std::vector<RequestPtr>(static_cast<size_t>(hosts)), nullptr};
    for (int g = 0; g < hosts; ++g) {
      if (g == host) continue;
      sv.copies[static_cast<size_t>(g)] = Buffer::like(grads, DType::kF32, p.count);
      sv.pushed[static_cast<size_t>(g)] = leaders.irecv(sv.copies[static_cast<size_t>(g)], g, push_tag);
    }
    sv.summed = engine_->submit(
        [&s, bytes = sv.sum.bytes()] { s.ctx.clock().compute(byteps_server_work(bytes, true)); });
    served.push_back(std::move(sv));
  }

  // push: each partition to its server (a partition served here stays in place).
  std::vector<RequestPtr> pushes;
  for (const BytepsPartition& p : parts)
    if (p.server != host)
      pushes.push_back(leaders.isend(grads.slice(p.offset, p.count), p.server, push_tag));
  wait_all(pushes);

  // pull: each partition's sum from its server, into the tensor (posted once the push has left it).
  std::vector<RequestPtr> pulls;
  for (const BytepsPartition& p : parts)
    if (p.server != host)
      pulls.push_back(leaders.irecv(grads.slice(p.offset, p.count), p.server, pull_tag));

  // sum: each other host's copy into this host's, on the server's engine as it is in (taken in host
  // order); then answer every other host's pull.
  std::vector<RequestPtr> answers;
  for (Served& sv : served) {
    for (int g = 0; g < hosts; ++g) {
      if (g == host) continue;
      sv.pushed[static_cast<size_t>(g)]->wait();
      sv.summed =
          engine_->submit([&s, sum = sv.sum, copy = BufferView(sv.copies[static_cast<size_t>(g)])] {
            s.ctx.clock().compute(byteps_server_work(sum.bytes(), false));
            reduce(sum, copy, ReduceOp::kSum);
          });
    }
    sv.summed->wait();
    for (int g = 0; g < hosts; ++g)
      if (g != host) answers.push_back(leaders.isend(sv.sum, g, pull_tag));
  }
  wait_all(pulls);
  wait_all(answers);
}

void Byteps::push_pull_cpu_servers(TrainState& s, const Bucket& b) {
  Transport& job = *services_->job;
  const BufferView grads = s.grads_of(b);
  const Tag push_tag = tags::bucket(tags::kGradient, b.index);
  const Tag pull_tag = tags::bucket(tags::kPull, b.index);
  const std::vector<BytepsPartition>& parts = partitions_[static_cast<size_t>(b.index)];
  // push: every partition to its server's host; pull: its sum back into the tensor, posted at once
  // (the server answers only once every host's copy is in). A server receives one tensor's partitions
  // from one root in the order they are sent here.
  std::vector<RequestPtr> pushes;
  std::vector<RequestPtr> pulls;
  for (const BytepsPartition& p : parts)
    pushes.push_back(job.isend(grads.slice(p.offset, p.count), services_->rank_of(p.server), push_tag));
  for (const BytepsPartition& p : parts)
    pulls.push_back(job.irecv(grads.slice(p.offset, p.count), services_->rank_of(p.server), pull_tag));
  wait_all(pushes);
  wait_all(pulls);
}

void Byteps::serve(ServiceState& s) {
  Transport& job = s.ctx.transport();
  // The workers' local roots (each worker host's first rank), in host order, and the largest host:
  // what HierarchicalGroups gives the workers.
  std::map<int, std::vector<int>> by_host;
  for (int r = 0; r < s.ranks.workers; ++r)
    by_host[job.host_of(r)].push_back(r);
  std::vector<int> roots;
  int local_size = 1;
  for (const auto& [host, ranks] : by_host) {
    roots.push_back(ranks.front());
    local_size = std::max(local_size, static_cast<int>(ranks.size()));
  }
  if (roots.size() == 1) return;  // not a distributed job: the workers push nothing
  const size_t bound = byteps_partition_elements(partition_bytes_, local_size);
  // Per tensor, the partitions this server holds.
  std::vector<std::vector<BytepsPartition>> mine;
  for (const Bucket& b : s.buckets) {
    BAGUA_CHECK_EQ(b.layers.size(), size_t{1}, "byteps: one tensor per bucket");
    std::vector<BytepsPartition> here;
    for (const BytepsPartition& p : byteps_partitions(b.layers.front(), b.count, bound, s.ranks.count))
      if (p.server == s.index) here.push_back(p);
    mine.push_back(std::move(here));
  }
  // Tensor t on stream t mod streams, as the workers push them: one tensor's copies from one root
  // arrive in partition order, and its receives are posted in that order by one task. The copies and
  // sums run on the server's engine, one after another (see byteps.h).
  std::unique_ptr<Stream> engine = s.ctx.make_stream("byteps server engine");
  std::vector<std::unique_ptr<Stream>> streams;
  const size_t count = std::min(s.buckets.size(), kPushPullStreams);
  for (size_t i = 0; i < count; ++i)
    streams.push_back(s.ctx.make_stream("byteps server " + std::to_string(i)));
  const size_t hosts = roots.size();
  for (int64_t step = 0; step < s.iterations; ++step) {
    for (size_t t = 0; t < mine.size(); ++t) {
      if (mine[t].empty()) continue;
      streams[t % streams.size()]->submit([&, t] {
        TraceScope scope(s.ctx, "byteps server " + std::to_string(t), "comm", 1);
        const Tag push_tag = tags::bucket(tags::kGradient, static_cast<int>(t));
        const Tag pull_tag = tags::bucket(tags::kPull, static_cast<int>(t));
        // copies[i][g]: host g's copy of partition i.
        std::vector<std::vector<Buffer>> copies(mine[t].size());
        std::vector<std::vector<RequestPtr>> pushed(mine[t].size());
        for (size_t i = 0; i < mine[t].size(); ++i) {
          copies[i].reserve(hosts);
          for (size_t g = 0; g < hosts; ++g) {
            copies[i].push_back(Buffer::like(s.like, DType::kF32, mine[t][i].count));
            pushed[i].push_back(job.irecv(copies[i][g], roots[g], push_tag));
          }
        }
        // sum: each host's copy on the engine as it is in (taken in host order): the first copied
        // into the store (received in place here), the others summed into it; then answer the pulls.
        std::vector<RequestPtr> answers;
        for (size_t i = 0; i < mine[t].size(); ++i) {
          const BufferView sum = copies[i][0];
          EventPtr summed;
          for (size_t g = 0; g < hosts; ++g) {
            pushed[i][g]->wait();
            summed = engine->submit([&s, sum, copy = BufferView(copies[i][g]), g] {
              s.ctx.clock().compute(byteps_server_work(sum.bytes(), g == 0));
              if (g > 0) reduce(sum, copy, ReduceOp::kSum);
            });
          }
          summed->wait();
          for (size_t g = 0; g < hosts; ++g)
            answers.push_back(job.isend(sum, roots[g], pull_tag));
        }
        wait_all(answers);
      });
    }
    // The workers' next iteration pushes only after they pulled this one's sums.
    for (const std::unique_ptr<Stream>& stream : streams)
      stream->synchronize();
    engine->synchronize();
  }
}

void Byteps::after_backward(TrainState& s) {
  reduce_->synchronize();
  for (const std::unique_ptr<Stream>& stream : push_pull_)
    stream->synchronize();
  if (engine_) engine_->synchronize();
  broadcast_->synchronize();
}

}  // namespace bagua
