// Ring reduce-scatter, ring allgather, and ring allreduce (the one followed by the other); the
// allgather's choice of algorithm.
#include <string>
#include <vector>

#include "core/check.h"
#include "core/collectives/collectives.h"
#include "core/collectives/nccl.h"
#include "core/operation.h"
#include "core/ops.h"

namespace bagua::collectives {

namespace {

constexpr AllgatherAlgo kAllgatherAlgos[] = {AllgatherAlgo::kRing, AllgatherAlgo::kNccl};

}  // namespace

std::string to_string(AllgatherAlgo algo) {
  switch (algo) {
    case AllgatherAlgo::kRing:
      return "ring";
    case AllgatherAlgo::kNccl:
      return "nccl";
  }
  return "?";
}

std::vector<std::string> allgather_algo_names() {
  std::vector<std::string> names;
  for (AllgatherAlgo a : kAllgatherAlgos)
    names.push_back(to_string(a));
  return names;
}

AllgatherAlgo parse_allgather_algo(std::string_view name) {
  for (AllgatherAlgo a : kAllgatherAlgos)
    if (to_string(a) == name) return a;
  throw ConfigError("allgather algorithm '" + std::string(name) +
                    "' is unknown (expected ring or nccl)");
}

void reduce_scatter(Transport& transport, const BufferView& data, ReduceOp op, Tag tag) {
  // The `ranks` stand in a ring: each sends to its `right` neighbour, rank + 1, and receives from its
  // `left`, rank - 1 (mod ranks). The data is cut into one `chunk` per rank (chunk_range). In `step`
  // s = 0 .. ranks - 2 every rank sends chunk rank - s - 1, which holds the reduction of s + 1 ranks'
  // contributions, and receives chunk rank - s - 2 into `incoming`, reducing it into its own. Chunk r
  // thus starts at rank r + 1, travels once around the ring, and ends, complete, at rank r.
  const OperationScope scope("reduce-scatter");
  const int ranks = transport.size();
  const int rank = transport.rank();
  if (ranks == 1 || data.count() == 0) return;
  const Chunking chunks(data, ranks);
  const int right = mod(rank + 1, ranks);
  const int left = mod(rank - 1, ranks);
  const Buffer incoming = Buffer::like(data, data.dtype(), chunks.max_count());
  // Chunk indices rank - step - 1 and rank - step - 2 (mod ranks), stepped back each step.
  int outgoing = left;
  for (int step = 0; step < ranks - 1; ++step) {
    const int reduced = ring_before(outgoing, ranks);
    const BufferView outgoing_chunk = chunks.chunk(outgoing);
    const BufferView chunk = chunks.chunk(reduced);
    const BufferView received = incoming.view().slice(0, chunk.count());
    transport.sendrecv(outgoing_chunk, right, received, left, tag);
    bagua::reduce(chunk, received, op);
    outgoing = reduced;
  }
}

void allgather(Transport& transport, const BufferView& data, Tag tag, AllgatherAlgo algo) {
  if (algo == AllgatherAlgo::kNccl) {
    nccl_allgather(transport, data, tag);
    return;
  }
  // The `ranks` stand in a ring (`right` = rank + 1, `left` = rank - 1, mod ranks); the data is cut
  // into one `chunk` per rank and rank r starts with chunk r. In `step` s = 0 .. ranks - 2 every rank
  // forwards chunk rank - s, the one it completed last, to the right and receives chunk rank - s - 1
  // from the left in place.
  const OperationScope scope("allgather");
  const int ranks = transport.size();
  const int rank = transport.rank();
  if (ranks == 1 || data.count() == 0) return;
  const Chunking chunks(data, ranks);
  const int right = mod(rank + 1, ranks);
  const int left = mod(rank - 1, ranks);
  // Chunk indices rank - step and rank - step - 1 (mod ranks), stepped back each step.
  int outgoing = rank;
  for (int step = 0; step < ranks - 1; ++step) {
    const int incoming = ring_before(outgoing, ranks);
    transport.sendrecv(chunks.chunk(outgoing), right, chunks.chunk(incoming), left, tag);
    outgoing = incoming;
  }
}

void ring_allreduce(Transport& transport, const BufferView& data, ReduceOp op, Tag tag) {
  // A ring reduce-scatter leaves chunk r of rank r complete; a ring allgather then hands every complete
  // chunk to every rank: 2 (ranks - 1) steps, each moving one chunk.
  const OperationScope scope("ring allreduce");
  reduce_scatter(transport, data, op, tag);
  allgather(transport, data, tag);
}

}  // namespace bagua::collectives
