// D_LP_S — decentralized, low precision, synchronous (Bagua's taxonomy): ring averaging in which ranks
// send each other compressed *differences* of their public weights, so that compression errors do not
// accumulate. Followed from rust/bagua-core/bagua-core-internal/src/comm_ops/
// decentralized_low_precision_synchronous.rs (DecentralizedLowPrecisionSynchronous, peer mode ring) and
// bagua/torch_api/algorithms/decentralized.py (LowPrecisionDecentralizedAlgorithm._init_states).
//
// Terms. P ranks in the inner group on a ring, r this rank, left = r - 1 and right = r + 1 (mod P).
//   weights        the rank's current model weights x (after its local optimizer steps)
//   public weights x̂_r, the weights rank r has published; every rank keeps three *replicas*:
//                  own = x̂_r, left_peer = x̂_left, right_peer = x̂_right, all initialized to the initial
//                  weights (identical on every rank)
//   difference     d = x + (left_peer + right_peer) / 3 - (5/3) own
//                    = [x - own + (left_peer + own + right_peer) / 3] - own,
//                  the new weights (local progress plus the replicas' neighbour average) minus own
//   c              the compressed difference C(d), sent to both neighbours
//
// One step, in Bagua's order:
//   1. d := x;  d += left_peer / 3;  d += right_peer / 3;  d += -5/3 own
//   2. c := C(d); send c to left and to right; receive c_left from left and c_right from right
//   3. left_peer += D(c_left);  right_peer += D(c_right)
//   4. x := D(c) + own;  own := x
// Every replica of rank i's public weights, on i and on its two neighbours, receives the very same
// D(c_i) by the very same float addition, so all replicas stay bit-identical across ranks (addition is
// commutative in IEEE arithmetic); after a step the weights equal the public weights.
//
// Small rings. P = 2: left and right are the same rank, the other. Bagua's op sends c to it twice (and
// receives twice from it); here c travels once each way (collectives::neighbour_exchange's convention
// for two ranks) and the one c received stands for both, so the result is Bagua's: both replicas are
// replicas of the other rank, and the mixing weights are 1/3 self and 2/3 other (still doubly
// stochastic). P = 1: left, right and self coincide; c is "received" from
// oneself without the transport, and x := D(c) + own is a no-op up to compression.
//
// Hierarchical: intra-host reduce with average onto the host leader (in place: the buffer of other
// ranks is scratch until the broadcast), the step among host leaders (replicas on leaders only),
// intra-host broadcast of the leader's new weights (Bagua's execute_communication, pre and post).
//
// Compression sites: one compressor instance encodes this rank's differences (its residual, with error
// feedback, belongs to them); decoding is stateless.
#pragma once

#include <memory>

#include "core/buffer.h"
#include "core/compress/compressor.h"
#include "core/context.h"
#include "core/primitives/communicator.h"

namespace bagua {

struct DecentralizedLowPrecisionOptions {
  CompressorFactory factory;  // one instance encodes, one decodes
};

class DecentralizedLowPrecision {
 public:
  // One instance per bucket; the replicas start as copies of `weights`.
  DecentralizedLowPrecision(RankContext& ctx, Communicator& communicator, const BufferView& weights,
                            const DecentralizedLowPrecisionOptions& options);

  // One communication step on `weights` (the bucket given at construction, or one of its size).
  void step(const BufferView& weights, Tag tag);

  // The replicas (empty views on non-leaders of a hierarchical communicator).
  BufferView own() const { return own_.view(); }
  BufferView left_peer() const { return left_peer_.view(); }
  BufferView right_peer() const { return right_peer_.view(); }

 private:
  void ring_step(Transport& group, const BufferView& weights, Tag tag);

  RankContext& ctx_;
  Communicator& communicator_;
  size_t count_;
  std::unique_ptr<Compressor> encoder_;
  std::unique_ptr<Compressor> decoder_;
  Buffer own_;
  Buffer left_peer_;
  Buffer right_peer_;
  Buffer difference_;
  Buffer decoded_;
  Buffer sent_;
  Buffer from_left_;
  Buffer from_right_;
};

}  // namespace bagua
