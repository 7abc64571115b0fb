// Recursive-doubling allreduce: log2 P rounds, each a swap of the whole buffer with one peer.
//
// After Open MPI's ompi_coll_base_allreduce_intra_recursivedoubling (ompi/mca/coll/base/
// coll_base_allreduce.c, v4.1), which Open MPI 4.1's tuned component runs for small buffers
// (ompi_coll_tuned_allreduce_intra_dec_fixed in ompi/mca/coll/tuned/coll_tuned_decision_fixed.c; see
// mpi_tuned_choice in allreduce.cc). One message per rank and round where halving-doubling sends two
// (a halving and a doubling step), at the price of sending the whole buffer every round: the choice
// for buffers whose time is latency.
#include <utility>

#include "core/collectives/collectives.h"
#include "core/collectives/fold.h"
#include "core/operation.h"
#include "core/ops.h"

namespace bagua::collectives {

void recursive_doubling_allreduce(Transport& transport, const BufferView& data, ReduceOp op, Tag tag) {
  // Terms. `core` is the largest power of two not above the number of `ranks`; the `extra` = ranks -
  // core ranks are folded in first (PowerOfTwoFold, fold.h): among ranks below
  // 2 extra, each even rank sends its whole data to its `partner`, the odd rank above it, which
  // reduces it in, and the even rank waits for the result. The remaining `core` ranks are numbered by
  // `core_rank` (odd r < 2 extra: r / 2; r >= 2 extra: r - extra). A rank's `accumulated` data is the
  // reduction over the ranks it has heard from so far. Rounds: at `distance` d = 1, 2, ..., core / 2
  // the rank swaps its accumulated data with the `peer` whose core_rank differs in the bit of value d,
  // receiving the peer's into `incoming`, and reduces the two; after the round it holds the reduction
  // over the 2d core ranks whose core_ranks agree with its own above that bit, and after log2(core)
  // rounds over every rank. The lower rank's operand is always the left one (lower op higher), so
  // every rank evaluates the same expression and all end with the same bits (min and max over NaNs
  // agree too). `accumulated` and `incoming` trade places when the result lands in `incoming`, so no
  // round copies; the result is copied into the caller's data once at the end if it sits in the
  // scratch buffer. Last, every partner sends the result back to the even rank it folded in (the
  // unfold).
  const OperationScope scope("recursive-doubling allreduce");
  const int ranks = transport.size();
  const int rank = transport.rank();
  if (ranks == 1 || data.count() == 0) return;
  const PowerOfTwoFold fold(ranks, rank);
  const int core = fold.core;

  if (fold.folded_away) return PowerOfTwoFold::fold_away(transport, data, rank, tag);
  const bool is_partner = fold.is_partner;
  const int core_rank = fold.core_rank;
  const Buffer scratch = Buffer::like(data, data.dtype(), data.count());
  BufferView accumulated = data;
  BufferView incoming = scratch.view();
  // After `incoming` has received a lower rank's data: accumulated := incoming op accumulated.
  auto reduce_lower = [&] {
    bagua::reduce(incoming, accumulated, op);
    std::swap(accumulated, incoming);
  };

  if (is_partner) {
    transport.recv(incoming, rank - 1, tag);
    reduce_lower();
  }

  for (int distance = 1; distance < core; distance *= 2) {
    const int peer = fold.rank_of_core_rank(core_rank ^ distance);
    transport.sendrecv(accumulated, peer, incoming, peer, tag);
    if (peer < rank) {
      reduce_lower();
    } else {
      bagua::reduce(accumulated, incoming, op);
    }
  }

  if (accumulated.data() != data.data()) copy(data, accumulated);
  if (is_partner) transport.send(data, rank - 1, tag);
}

}  // namespace bagua::collectives
