// Ring reduce-scatter, ring allgather, and ring allreduce (the one followed by the other).
#include "core/collectives/collectives.h"
#include "core/operation.h"
#include "core/ops.h"

namespace bagua::collectives {

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
  for (int step = 0; step < ranks - 1; ++step) {
    const BufferView outgoing_chunk = chunks.chunk(mod(rank - step - 1, ranks));
    const BufferView chunk = chunks.chunk(mod(rank - step - 2, ranks));
    const BufferView received = incoming.view().slice(0, chunk.count());
    transport.sendrecv(outgoing_chunk, right, received, left, tag);
    bagua::reduce(chunk, received, op);
  }
}

void allgather(Transport& transport, const BufferView& data, Tag tag) {
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
  for (int step = 0; step < ranks - 1; ++step) {
    const BufferView outgoing_chunk = chunks.chunk(mod(rank - step, ranks));
    const BufferView chunk = chunks.chunk(mod(rank - step - 1, ranks));
    transport.sendrecv(outgoing_chunk, right, chunk, left, tag);
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
