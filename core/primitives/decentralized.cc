#include "core/primitives/decentralized.h"

#include "core/check.h"
#include "core/collectives/collectives.h"
#include "core/operation.h"
#include "core/ops.h"

namespace bagua {

std::string to_string(PeerMode m) {
  switch (m) {
    case PeerMode::kAll:
      return "all";
    case PeerMode::kShiftOne:
      return "shift_one";
    case PeerMode::kRing:
      return "ring";
  }
  return "?";
}

std::vector<std::string> peer_mode_names() {
  return {"all", "shift_one", "ring"};
}

PeerMode parse_peer_mode(std::string_view name) {
  for (PeerMode m : {PeerMode::kAll, PeerMode::kShiftOne, PeerMode::kRing})
    if (to_string(m) == name) return m;
  throw ConfigError("peer_selection_mode '" + std::string(name) +
                    "' is not one of all, shift_one, ring");
}

int shift_one_peer(int rank, int ranks, int64_t step) {
  BAGUA_CHECK(ranks % 2 == 0 && rank >= 0 && rank < ranks,
              "shift_one_peer(" + std::to_string(rank) + ", " + std::to_string(ranks) + ")");
  const int64_t r = rank;
  const int64_t n = ranks;
  if (rank < ranks / 2) return static_cast<int>((step + r) % ((n + 1) / 2) + n / 2);
  const int64_t m = n / 2;
  return static_cast<int>((((r - n / 2 - step) % m) + m) % m);  // Rust's rem_euclid
}

DecentralizedFullPrecision::DecentralizedFullPrecision(RankContext& /*ctx*/, Communicator& communicator,
                                                       const BufferView& like,
                                                       const DecentralizedFullPrecisionOptions& options)
    : communicator_(communicator), mode_(options.mode) {
  const PeerMode mode = options.mode;
  const int ranks = communicator.inner_size();
  if (mode == PeerMode::kShiftOne && ranks % 2 != 0) {
    throw ConfigError(
        options.who + ": peer_selection_mode shift_one needs an even number of ranks" +
        (communicator.hierarchical() ? " (of hosts, as hierarchical is on)" : std::string()) +
        ", got " + std::to_string(ranks));
  }
  if (communicator.inner() == nullptr) return;
  if (mode == PeerMode::kShiftOne || mode == PeerMode::kRing)
    left_ = Buffer::like(like, like.dtype(), like.count());
  if (mode == PeerMode::kRing) right_ = Buffer::like(like, like.dtype(), like.count());
}

void DecentralizedFullPrecision::average(const BufferView& weights, const BufferView& peer_weights,
                                         Tag tag) {
  BAGUA_CHECK_EQ(weights.count(), peer_weights.count(), "D_FP_S weights and peer weights");
  copy(peer_weights, weights);
  communicator_.execute(peer_weights, /*intranode_average=*/true, /*pre=*/true, /*post=*/true, tag,
                        [&](Transport& group) { exchange(group, peer_weights, tag); });
  ++step_;
}

void DecentralizedFullPrecision::exchange(Transport& group, const BufferView& peer_weights, Tag tag) {
  // `peer_weights` holds this rank's (or this host's averaged) weights on entry, the result on exit.
  const int ranks = group.size();
  const int rank = group.rank();
  switch (mode_) {
    case PeerMode::kAll:
      collectives::allreduce_average(group, peer_weights, tag);
      return;
    case PeerMode::kShiftOne: {
      const int peer = shift_one_peer(rank, ranks, step_);
      const OperationScope scope("shift_one peer exchange");
      group.sendrecv(peer_weights, peer, left_, peer, tag);
      // Bagua's average_inplace: (peer's + own) / 2; both ranks of a pair compute the same sum.
      bagua::reduce(peer_weights, left_, ReduceOp::kSum);
      scale(peer_weights, 0.5);
      return;
    }
    case PeerMode::kRing: {
      // The average of the distinct members of {left, self, right}: with two ranks left = right is
      // the other rank, received once into left_ (collectives::neighbour_exchange).
      if (ranks == 1) return;
      const int neighbours = collectives::neighbour_exchange(group, peer_weights, left_, right_, tag);
      bagua::reduce(peer_weights, left_, ReduceOp::kSum);
      if (neighbours == 2) bagua::reduce(peer_weights, right_, ReduceOp::kSum);
      scale(peer_weights, 1.0 / (neighbours + 1));
      return;
    }
  }
}

}  // namespace bagua
