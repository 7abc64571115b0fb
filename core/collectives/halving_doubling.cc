// Rabenseifner's allreduce: recursive-halving reduce-scatter, then recursive-doubling allgather.
#include <algorithm>

#include "core/collectives/collectives.h"
#include "core/collectives/fold.h"
#include "core/operation.h"
#include "core/ops.h"

namespace bagua::collectives {

void halving_doubling_allreduce(Transport& transport, const BufferView& data, ReduceOp op, Tag tag) {
  // Terms. `core` is the largest power of two not above the number of `ranks`; the `extra` = ranks -
  // core ranks are folded away first: among ranks below 2 extra, each even rank sends its whole data to
  // its `partner`, the odd rank above it, which reduces it in, and the even rank waits for the result.
  // The remaining `core` ranks are numbered by `core_rank` (odd r < 2 extra: r / 2; r >= 2 extra: r -
  // extra). The data is cut into `core` chunks. A rank's `block` is a run of chunks [block_first,
  // block_first + block_chunks), at first all of them. Halving: at `distance` d = core / 2, core / 4,
  // ..., 1 the rank pairs with the `peer` whose core_rank differs in the bit of value d; the lower of
  // the two keeps the lower half of the block and the upper keeps the upper half; each sends the half
  // it gives up and reduces the half it keeps with what it receives. After log2(core) steps the block
  // is chunk core_rank, complete. Doubling retraces the steps (d = 1, 2, ..., core / 2): peers swap
  // their blocks, each block doubling. Last, every partner sends the result back to the even rank it
  // folded in (the unfold).
  const OperationScope scope("halving-doubling allreduce");
  const int ranks = transport.size();
  const int rank = transport.rank();
  if (ranks == 1 || data.count() == 0) return;
  const PowerOfTwoFold fold(ranks, rank);
  const int core = fold.core;
  const Chunking chunks(data, core);

  if (fold.folded_away) return PowerOfTwoFold::fold_away(transport, data, rank, tag);
  const bool is_partner = fold.is_partner;
  const int core_rank = fold.core_rank;
  // The largest message received: a folded rank's data, or half of the whole block (the first half,
  // since the first chunks are the larger ones).
  const size_t incoming_count = is_partner ? data.count() : chunks.chunks(0, core / 2).count();
  const Buffer incoming = Buffer::like(data, data.dtype(), incoming_count);

  if (is_partner) {
    const int partner = rank - 1;
    const BufferView received = incoming.view().slice(0, data.count());
    transport.recv(received, partner, tag);
    bagua::reduce(data, received, op);
  }

  int block_first = 0;
  int block_chunks = core;
  for (int distance = core / 2; distance >= 1; distance /= 2) {
    const int peer = fold.rank_of_core_rank(core_rank ^ distance);
    const int half = block_chunks / 2;
    const bool keep_lower = (core_rank & distance) == 0;
    const int kept_first = keep_lower ? block_first : block_first + half;
    const int given_first = keep_lower ? block_first + half : block_first;
    const BufferView kept = chunks.chunks(kept_first, half);
    const BufferView received = incoming.view().slice(0, kept.count());
    transport.sendrecv(chunks.chunks(given_first, half), peer, received, peer, tag);
    bagua::reduce(kept, received, op);
    block_first = kept_first;
    block_chunks = half;
  }

  for (int distance = 1; distance < core; distance *= 2) {
    const int peer = fold.rank_of_core_rank(core_rank ^ distance);
    const int peer_block_first = block_first ^ distance;
    transport.sendrecv(chunks.chunks(block_first, block_chunks), peer,
                       chunks.chunks(peer_block_first, block_chunks), peer, tag);
    block_first = std::min(block_first, peer_block_first);
    block_chunks *= 2;
  }

  if (is_partner) transport.send(data, rank - 1, tag);
}

}  // namespace bagua::collectives
