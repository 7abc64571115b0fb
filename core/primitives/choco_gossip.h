// CHOCO gossip — compressed decentralized averaging on a ring (Koloskova, Stich and Jaggi,
// "Decentralized Stochastic Optimization and Gossip Algorithms with Compressed Communication",
// ICML 2019, Algorithm 2 CHOCO-SGD without its gradient step; the "memory" of the authors' code,
// epfml/ChocoSGD dl_code/pcode/optim/parallel_choco.py, for the mixed public copies).
//
// Terms. P ranks on a ring (the inner group: the world, or the host leaders when hierarchical), r this
// rank, W the mixing matrix of the ring: W_rj = 1/3 for j in
// {r - 1, r, r + 1} when P >= 3; 1/2 for self and the other rank when P = 2; W = 1 when P = 1 (the same
// doubly stochastic matrix as D_FP_S ring, core/primitives/decentralized.h).
//   x        this rank's weights (x_{t+1/2} in the paper: after the local step)
//   x̂_j      the public copy of rank j's weights, known to j and to its neighbours; starts at 0
//   mix      s_r = sum_j W_rj x̂_j, kept up to date incrementally instead of storing every x̂_j
//   gamma    the consensus step size
// One step:
//   q_r  := Q(x - x̂_r)                              compress the difference to the public copy
//   send q_r to both neighbours, receive q_j from them
//   x̂_r  += D(q_r);   s_r += sum_j W_rj D(q_j)     (the paper's x̂_j^{(t+1)} = x̂_j^{(t)} + q_j)
//   x    += gamma (s_r - x̂_r)                       (= x + gamma sum_j W_rj (x̂_j - x̂_r),
//                                                    as sum_j W_rj = 1)
// With the identity compressor and gamma = 1 the first step gives x := sum_j W_rj x_j, exact ring
// averaging. The exchange is collectives::neighbour_exchange: with P = 2 the other rank's q arrives
// once.
//
// Hierarchical (not in the paper; the mode of the other decentralized primitives, Bagua's
// execute_communication with pre and post): intra-host reduce with average onto the host leader (the
// buffer of other ranks is scratch until the broadcast), the step above among host leaders, each host
// one node of the ring (x̂ and s on leaders only), intra-host broadcast of the leader's new weights.
// Every rank of a host thus leaves with the same weights, as after a D_FP_S or D_LP_S step.
//
// Compression sites: one compressor instance encodes this rank's differences; decoding is stateless.
#pragma once

#include <memory>

#include "core/buffer.h"
#include "core/compress/compressor.h"
#include "core/context.h"
#include "core/primitives/communicator.h"

namespace bagua {

struct ChocoGossipOptions {
  CompressorFactory factory;  // one instance encodes, one decodes
  double gamma = 1.0;         // the consensus step size
};

class ChocoGossip {
 public:
  // `like`: a buffer of the weights' count and space.
  ChocoGossip(RankContext& ctx, Communicator& communicator, const BufferView& like,
              const ChocoGossipOptions& options);

  // One gossip step on `weights` over the inner group's ring.
  void step(const BufferView& weights, Tag tag);

 private:
  void gossip(Transport& group, const BufferView& weights, Tag tag);

  RankContext& ctx_;
  Communicator& communicator_;
  size_t count_;
  double gamma_;
  std::unique_ptr<Compressor> encoder_;
  std::unique_ptr<Compressor> decoder_;
  Buffer own_;  // x̂_r, this rank's public copy
  Buffer mix_;  // s_r
  Buffer difference_;
  Buffer decoded_;
  Buffer sent_;
  Buffer from_left_;
  Buffer from_right_;
};

}  // namespace bagua
