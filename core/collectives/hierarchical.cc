// Two-level collectives: within each host, then among the hosts' leaders, then within each host again.
#include <algorithm>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/collectives/collectives.h"
#include "core/collectives/nccl.h"
#include "core/operation.h"
#include "core/ops.h"

namespace bagua::collectives {

namespace {

// The chunks of `host_ranks` (ascending world ranks), merged into runs of adjacent chunks: a single run
// when the host's ranks are consecutive, as they are when ranks are numbered host by host.
std::vector<BufferView> host_block(const Chunking& chunks, const std::vector<int>& host_ranks) {
  std::vector<BufferView> runs;
  size_t i = 0;
  while (i < host_ranks.size()) {
    size_t j = i + 1;
    while (j < host_ranks.size() && host_ranks[j] == host_ranks[j - 1] + 1)
      ++j;
    runs.push_back(chunks.chunks(host_ranks[i], static_cast<int>(j - i)));
    i = j;
  }
  return runs;
}

size_t count_of(const std::vector<BufferView>& runs) {
  size_t n = 0;
  for (const BufferView& run : runs)
    n += run.count();
  return n;
}

void check_options(const IntraHostOptions& options) {
  if (options.segment.count() <= 0)
    throw ConfigError("intra_host.segment must be > 0 bytes, got " +
                      std::to_string(options.segment.count()));
  if (options.channels < 0)
    throw ConfigError("intra_host.channels must be >= 0, got " + std::to_string(options.channels));
}

// The pipeline of a kNccl phase: BROADCAST_SLICESTEPS = REDUCE_SLICESTEPS = 1 step per slice, the
// step being the options' segment, NCCL_STEPS slots per peer per channel (broadcast_pipeline), each
// slice paying the ring's step latency under Simple (nccl_step_latency).
PipelineOptions intra_host_pipeline(const IntraHostOptions& options, const Transport& intra,
                                    const BufferView& data) {
  PipelineOptions pipeline = broadcast_pipeline(intra_host_channels(options, intra, data.bytes()));
  pipeline.step = options.segment;
  pipeline.step_latency =
      nccl_step_latency(nccl_topology(intra), NcclAlgo::kRing, NcclProtocol::kSimple);
  return pipeline;
}

}  // namespace

IntraHostPlan plan_intra_host(const IntraHostOptions& options, int ranks, size_t count,
                              size_t element_bytes) {
  // `segment_elements`: the segment in whole elements, at least one; `segments` = k, the number of
  // segments the buffer fills (the last may be short). kAuto takes the chain for ranks >= 3 and a
  // buffer of at least `ranks` whole segments (see IntraHostAlgo).
  check_options(options);
  BAGUA_CHECK(element_bytes >= 1, "plan_intra_host: element_bytes = " + std::to_string(element_bytes));
  const size_t segment_elements =
      std::max<size_t>(1, static_cast<size_t>(options.segment.count()) / element_bytes);
  bool chain = false;
  switch (options.algo) {
    case IntraHostAlgo::kNccl:
      return {false, segment_elements, 1, true};
    case IntraHostAlgo::kAuto:
      chain = ranks >= 3 && count >= static_cast<size_t>(ranks) * segment_elements;
      break;
    case IntraHostAlgo::kBinomial:
      chain = false;
      break;
    case IntraHostAlgo::kChain:
      chain = true;
      break;
  }
  if (!chain) return {};
  const size_t segments = count == 0 ? 1 : (count + segment_elements - 1) / segment_elements;
  return {true, segment_elements, static_cast<int64_t>(segments)};
}

int intra_host_channels(const IntraHostOptions& options, const Transport& intra, Bytes bytes) {
  check_options(options);
  if (options.channels > 0) return options.channels;
  return nccl_channels(nccl_topology(intra), NcclAlgo::kRing, bytes);
}

HierarchicalGroups::HierarchicalGroups(Transport& world, IntraHostOptions intra_host_options)
    : layout(host_layout(world)),
      world_size(world.size()),
      world_rank(world.rank()),
      intra_host(intra_host_options) {
  check_options(intra_host);
  intra = world.subgroup(layout.hosts[static_cast<size_t>(layout.my_host)]);
  if (layout.local_rank == 0) {
    std::vector<int> heads;
    for (const std::vector<int>& host : layout.hosts)
      heads.push_back(host.front());
    leaders = world.subgroup(heads);
  }
}

void intra_host_reduce(HierarchicalGroups& groups, const BufferView& data, ReduceOp op, Tag tag) {
  // The `plan` for this host's ranks and this buffer: NCCL's pipelined chain, whose root is the
  // leader (rank 0 of the host); a chain towards the leader in segments, one at a time; or a binomial
  // tree, unsegmented.
  const OperationScope scope("intra-host reduce");
  Transport& intra = *groups.intra;
  const IntraHostPlan plan =
      plan_intra_host(groups.intra_host, intra.size(), data.count(), size_of(data.dtype()));
  if (plan.nccl) {
    pipelined_reduce(intra, data, 0, op, tag, intra_host_pipeline(groups.intra_host, intra, data));
  } else if (plan.chain) {
    reduce(intra, data, 0, op, tag, plan.segment_elements, ReduceAlgo::kChain);
  } else {
    reduce(intra, data, 0, op, tag, 0, ReduceAlgo::kBinomial);
  }
}

void intra_host_broadcast(HierarchicalGroups& groups, const BufferView& data, Tag tag) {
  // As intra_host_reduce, from the leader outwards.
  const OperationScope scope("intra-host broadcast");
  Transport& intra = *groups.intra;
  const IntraHostPlan plan =
      plan_intra_host(groups.intra_host, intra.size(), data.count(), size_of(data.dtype()));
  if (plan.nccl) {
    pipelined_broadcast(intra, data, 0, tag, intra_host_pipeline(groups.intra_host, intra, data));
  } else if (plan.chain) {
    broadcast(intra, data, 0, tag, BroadcastAlgo::kChain, plan.segment_elements);
  } else {
    broadcast(intra, data, 0, tag, BroadcastAlgo::kBinomial, 0);
  }
}

void hierarchical_allreduce(HierarchicalGroups& groups, const BufferView& data, ReduceOp op, Tag tag,
                            AllreduceAlgo algo, NcclProtocolOption protocol) {
  // Each host reduces onto its leader (intra_host_reduce: NCCL's pipelined chain, a chain or a
  // binomial tree over the host's ranks), the leaders allreduce among themselves with `algo`, and each leader broadcasts the result
  // over its host (intra_host_broadcast).
  const OperationScope scope("hierarchical allreduce");
  if (data.count() == 0) return;
  intra_host_reduce(groups, data, op, tag);
  if (groups.is_leader()) allreduce(*groups.leaders, data, op, tag, algo, protocol);
  intra_host_broadcast(groups, data, tag);
}

void hierarchical_reduce_scatter(HierarchicalGroups& groups, const BufferView& data, ReduceOp op,
                                 Tag tag) {
  // The data is cut into one `chunk` per world rank (world chunking); a host's `block` is the chunks of
  // its ranks. Each host first reduces the whole buffer onto its leader (intra_host_reduce). The
  // leaders then run a ring
  // reduce-scatter over blocks: leader h sends to the `right` leader h + 1 and receives from the `left`
  // h - 1; in `step` s = 0 .. hosts - 2 it sends block h - s - 1 and receives block h - s - 2 into
  // `incoming`, reducing it in, so that it ends with its own block complete. Last, the leader hands
  // each rank of its host that rank's chunk.
  const OperationScope scope("hierarchical reduce-scatter");
  if (data.count() == 0) return;
  const Chunking chunks(data, groups.world_size);
  intra_host_reduce(groups, data, op, tag);
  if (groups.is_leader()) {
    Transport& leaders = *groups.leaders;
    const int hosts = groups.hosts();
    const int host = groups.layout.my_host;
    const int right = mod(host + 1, hosts);
    const int left = mod(host - 1, hosts);
    size_t largest_block = 0;
    for (const std::vector<int>& ranks : groups.layout.hosts)
      largest_block = std::max(largest_block, count_of(host_block(chunks, ranks)));
    const Buffer incoming = Buffer::like(data, data.dtype(), largest_block);
    for (int step = 0; step < hosts - 1; ++step) {
      const std::vector<BufferView> outgoing_block =
          host_block(chunks, groups.layout.hosts[static_cast<size_t>(mod(host - step - 1, hosts))]);
      const std::vector<BufferView> block =
          host_block(chunks, groups.layout.hosts[static_cast<size_t>(mod(host - step - 2, hosts))]);
      std::vector<BufferView> received;
      std::vector<RequestPtr> requests;
      size_t offset = 0;
      for (const BufferView& run : block) {
        received.push_back(incoming.view().slice(offset, run.count()));
        offset += run.count();
        requests.push_back(leaders.irecv(received.back(), left, tag));
      }
      for (const BufferView& run : outgoing_block)
        requests.push_back(leaders.isend(run, right, tag));
      wait_all(requests);
      for (size_t i = 0; i < block.size(); ++i)
        bagua::reduce(block[i], received[i], op);
    }
  }
  const std::vector<int>& host_ranks = groups.layout.hosts[static_cast<size_t>(groups.layout.my_host)];
  if (groups.is_leader()) {
    for (size_t local = 1; local < host_ranks.size(); ++local)
      groups.intra->send(chunks.chunk(host_ranks[local]), static_cast<int>(local), tag);
  } else {
    groups.intra->recv(chunks.chunk(groups.world_rank), 0, tag);
  }
}

void hierarchical_allgather(HierarchicalGroups& groups, const BufferView& data, Tag tag) {
  // The data is cut into one `chunk` per world rank; a host's `block` is the chunks of its ranks. Every
  // rank hands its chunk to its leader, which thus holds its host's block. The leaders run a ring
  // allgather over blocks (`right` = host + 1, `left` = host - 1; in `step` s leader h forwards block
  // h - s and receives block h - s - 1 in place), and each leader broadcasts the whole buffer over its
  // host (intra_host_broadcast).
  const OperationScope scope("hierarchical allgather");
  if (data.count() == 0) return;
  const Chunking chunks(data, groups.world_size);
  const std::vector<int>& host_ranks = groups.layout.hosts[static_cast<size_t>(groups.layout.my_host)];
  if (groups.is_leader()) {
    std::vector<RequestPtr> requests;
    for (size_t local = 1; local < host_ranks.size(); ++local)
      requests.push_back(
          groups.intra->irecv(chunks.chunk(host_ranks[local]), static_cast<int>(local), tag));
    wait_all(requests);

    Transport& leaders = *groups.leaders;
    const int hosts = groups.hosts();
    const int host = groups.layout.my_host;
    const int right = mod(host + 1, hosts);
    const int left = mod(host - 1, hosts);
    for (int step = 0; step < hosts - 1; ++step) {
      const std::vector<BufferView> outgoing_block =
          host_block(chunks, groups.layout.hosts[static_cast<size_t>(mod(host - step, hosts))]);
      const std::vector<BufferView> block =
          host_block(chunks, groups.layout.hosts[static_cast<size_t>(mod(host - step - 1, hosts))]);
      std::vector<RequestPtr> step_requests;
      for (const BufferView& run : block)
        step_requests.push_back(leaders.irecv(run, left, tag));
      for (const BufferView& run : outgoing_block)
        step_requests.push_back(leaders.isend(run, right, tag));
      wait_all(step_requests);
    }
  } else {
    groups.intra->send(chunks.chunk(groups.world_rank), 0, tag);
  }
  intra_host_broadcast(groups, data, tag);
}

void hierarchical_broadcast(HierarchicalGroups& groups, const BufferView& data, int root, Tag tag) {
  // The `root_host` is the host of world rank `root`, `root_local` its place there. If the root is not
  // its host's leader it first sends the data to that leader; the leaders broadcast from root_host's
  // leader (binomial tree); every leader then broadcasts over its host (intra_host_broadcast; the
  // root receives its own data back).
  const OperationScope scope("hierarchical broadcast");
  if (root < 0 || root >= groups.world_size)
    throw ConfigError("hierarchical_broadcast: root " + std::to_string(root) + " outside a world of " +
                      std::to_string(groups.world_size) + " ranks (rank " +
                      std::to_string(groups.world_rank) + ")");
  if (data.count() == 0) return;
  int root_host = 0;
  int root_local = 0;
  for (size_t h = 0; h < groups.layout.hosts.size(); ++h) {
    const std::vector<int>& host_ranks = groups.layout.hosts[h];
    const auto it = std::find(host_ranks.begin(), host_ranks.end(), root);
    if (it != host_ranks.end()) {
      root_host = static_cast<int>(h);
      root_local = static_cast<int>(it - host_ranks.begin());
    }
  }
  if (groups.layout.my_host == root_host && root_local != 0) {
    if (groups.layout.local_rank == root_local) groups.intra->send(data, 0, tag);
    if (groups.is_leader()) groups.intra->recv(data, root_local, tag);
  }
  if (groups.is_leader()) broadcast(*groups.leaders, data, root_host, tag);
  intra_host_broadcast(groups, data, tag);
}

}  // namespace bagua::collectives
