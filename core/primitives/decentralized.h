// D_FP_S — decentralized, full precision, synchronous (Bagua's taxonomy): each rank averages its
// weights with those of some peers, in full precision, and no rank ends with the global average unless
// the peer mode says so. Followed from rust/bagua-core/bagua-core-internal/src/comm_ops/
// decentralized_full_precision_synchronous.rs (DecentralizedFullPrecisionSynchronous).
//
// Terms. P ranks in the inner group (the world, or the host leaders when hierarchical), r this rank's
// index there; `step` counts this primitive's communication steps from 0 (Bagua's op counts its own
// executions, not training iterations). The *peer weights* are the result, written to a separate
// buffer: the trainer keeps computing with the weights meanwhile and copies the peer weights back later
// (Bagua's copy_back_peer_weight).
//
// Peer modes:
//   all        peer weights = the average of every rank's weights (an allreduce average).
//   shift_one  P must be even. Ranks are split into halves [0, P/2) and [P/2, P); at each step every
//              rank is paired with one rank of the other half, and peer weights = (own + peer's) / 2.
//              Bagua's formula for the peer of r at step s:
//                  r <  P/2:  peer = (s + r) mod ((P + 1) / 2) + P/2     ((P + 1) / 2 = P/2 for even P)
//                  r >= P/2:  peer = (r - P/2 - s) mod_euclid (P/2)
//              so the pairing rotates through the other half, one shift per step.
//   ring       peer weights = the average of the distinct ranks among {left, self, right} on the ring
//              (left = r - 1, right = r + 1 mod P): (left + self + right) / 3 for P >= 3. Bagua leaves
//              ring unimplemented for full precision. Defined here for small rings as the average of
//              the distinct members, i.e. the doubly stochastic mixing matrix of the graph:
//                  P = 2: (self + other) / 2        P = 1: self.
//
// Hierarchical: intra-host reduce with average onto the host leader, the peer mode among host leaders,
// intra-host broadcast of the leader's peer weights (Bagua: pre in the op, post in the copy back).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/buffer.h"
#include "core/context.h"
#include "core/primitives/communicator.h"

namespace bagua {

enum class PeerMode : uint8_t { kAll, kShiftOne, kRing };
std::string to_string(PeerMode m);  // "all", "shift_one", "ring"
// Throws ConfigError naming the valid choices.
PeerMode parse_peer_mode(std::string_view name);
std::vector<std::string> peer_mode_names();

// Bagua's shift_one peer of `rank` among `ranks` (even) at communication step `step`.
int shift_one_peer(int rank, int ranks, int64_t step);

struct DecentralizedFullPrecisionOptions {
  PeerMode mode = PeerMode::kAll;
  std::string who = "D_FP_S";  // prefixes error messages (e.g. "decentralized")
};

class DecentralizedFullPrecision {
 public:
  // Throws ConfigError when the inner group cannot use the peer mode (shift_one with an odd count).
  // `like`: a buffer of the weights' count and space. Runs no compute of its own, so `ctx` is not kept.
  DecentralizedFullPrecision(RankContext& ctx, Communicator& communicator, const BufferView& like,
                             const DecentralizedFullPrecisionOptions& options);

  // peer_weights := the peer average of `weights` (weights are only read). One communication step.
  void average(const BufferView& weights, const BufferView& peer_weights, Tag tag);

  int64_t step() const { return step_; }
  PeerMode mode() const { return mode_; }

 private:
  void exchange(Transport& group, const BufferView& peer_weights, Tag tag);

  Communicator& communicator_;
  PeerMode mode_;
  int64_t step_ = 0;
  Buffer left_;   // received weights (shift_one: the peer's; ring: the left neighbour's)
  Buffer right_;  // ring: the right neighbour's
};

}  // namespace bagua
