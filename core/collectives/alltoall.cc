// All-to-all personalized exchange by pairwise exchange.
#include <cstdint>
#include <string>

#include "core/check.h"
#include "core/collectives/collectives.h"
#include "core/operation.h"
#include "core/ops.h"

namespace bagua::collectives {

void alltoall(Transport& transport, const BufferView& send, const BufferView& recv, Tag tag) {
  // Both buffers are cut into one `chunk` per rank; chunk i of `send` is for rank i, and chunk j of
  // `recv` is from rank j. A rank first copies its own chunk across; then in `step` s = 1 .. ranks - 1
  // it sends to `destination` rank + s the chunk meant for it, and receives from `source` rank - s into
  // that rank's slot. Every pair meets exactly once, in both directions.
  const OperationScope scope("alltoall");
  const int ranks = transport.size();
  const int rank = transport.rank();
  if (send.dtype() != recv.dtype() || send.count() != recv.count())
    throw ConfigError("alltoall: send is " + std::to_string(send.count()) + " x " +
                      to_string(send.dtype()) + " but recv is " + std::to_string(recv.count()) + " x " +
                      to_string(recv.dtype()) + " (rank " + std::to_string(rank) + ")");
  if (send.count() % static_cast<size_t>(ranks) != 0)
    throw ConfigError("alltoall: count " + std::to_string(send.count()) + " is not divisible by the " +
                      std::to_string(ranks) + " ranks (rank " + std::to_string(rank) + ")");
  if (send.count() == 0) return;
  if (!send.is_meta() && !recv.is_meta()) {
    const auto send_begin = reinterpret_cast<uintptr_t>(send.data());
    const auto recv_begin = reinterpret_cast<uintptr_t>(recv.data());
    const auto bytes = static_cast<uintptr_t>(send.bytes().count());
    if (send_begin < recv_begin + bytes && recv_begin < send_begin + bytes)
      throw ConfigError("alltoall: send and recv overlap (rank " + std::to_string(rank) + ")");
  }
  const Chunking send_chunks(send, ranks);
  const Chunking recv_chunks(recv, ranks);
  copy(recv_chunks.chunk(rank), send_chunks.chunk(rank));
  for (int step = 1; step < ranks; ++step) {
    const int destination = mod(rank + step, ranks);
    const int source = mod(rank - step, ranks);
    transport.sendrecv(send_chunks.chunk(destination), destination, recv_chunks.chunk(source), source,
                       tag);
  }
}

}  // namespace bagua::collectives
