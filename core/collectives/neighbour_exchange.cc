// Neighbour exchange: every rank of a ring swaps one buffer with its two neighbours, the exchange of
// the decentralized primitives (D_FP_S ring, D_LP_S, CHOCO gossip).
#include "core/collectives/collectives.h"
#include "core/operation.h"

namespace bagua::collectives {

int neighbour_exchange(Transport& transport, const BufferView& data, const BufferView& from_left,
                       const BufferView& from_right, Tag tag) {
  // The `ranks` stand in a ring: `left` = rank - 1 and `right` = rank + 1 (mod ranks) are this rank's
  // *neighbours*. Every rank sends its `data` to left and to right, and receives its left neighbour's
  // data into `from_left` and its right neighbour's into `from_right`; it returns the number of
  // distinct neighbours. Two ranks: left and right are one rank, the *other*; its data is sent and
  // received once, into `from_left`, and `from_right` is not touched (1 neighbour). One rank: nothing
  // moves (0 neighbours). Bagua's low-precision ring posts send-left, send-right, recv-left,
  // recv-right in one NCCL group (comm_ops/decentralized_low_precision_synchronous.rs); so does this.
  const OperationScope scope("neighbour exchange");
  const int ranks = transport.size();
  const int rank = transport.rank();
  if (ranks == 1) return 0;
  const int left = mod(rank - 1, ranks);
  const int right = mod(rank + 1, ranks);
  if (ranks == 2) {
    transport.sendrecv(data, left, from_left, left, tag);
    return 1;
  }
  RequestPtr requests[4] = {transport.isend(data, left, tag), transport.isend(data, right, tag),
                            transport.irecv(from_left, left, tag),
                            transport.irecv(from_right, right, tag)};
  wait_all(requests);
  return 2;
}

}  // namespace bagua::collectives
