// The fold to a power of two shared by halving-doubling and recursive doubling (Rabenseifner; Open
// MPI's coll_base_allreduce.c): `core` is the largest power of two not above `ranks`, and the `extra` =
// ranks - core ranks are folded away first: among ranks below 2 extra, each even rank sends its whole
// data to its partner, the odd rank above it, which reduces it in, and the even rank waits for the
// result. The remaining core ranks are numbered by `core_rank` (odd r < 2 extra: r / 2; r >= 2 extra:
// r - extra).
#pragma once

#include "core/collectives/collectives.h"

namespace bagua::collectives {

struct PowerOfTwoFold {
  PowerOfTwoFold(int ranks, int rank) {
    while (core * 2 <= ranks)
      core *= 2;
    extra = ranks - core;
    folded_away = rank < 2 * extra && rank % 2 == 0;
    is_partner = rank < 2 * extra && !folded_away;
    core_rank = is_partner ? rank / 2 : rank - extra;
  }
  // The rank (of all `ranks`) whose core_rank is `c`.
  int rank_of_core_rank(int c) const { return c < extra ? 2 * c + 1 : c + extra; }
  // A folded-away rank's whole part: its data to its partner, then the result back from it.
  static void fold_away(Transport& transport, const BufferView& data, int rank, Tag tag) {
    transport.send(data, rank + 1, tag);
    transport.recv(data, rank + 1, tag);
  }

  int core = 1;
  int extra = 0;
  bool folded_away = false;  // an even rank below 2 extra
  bool is_partner = false;   // an odd rank below 2 extra: reduces its folded rank in, sends it back
  int core_rank = 0;         // meaningless when folded_away
};

}  // namespace bagua::collectives
