#include "core/primitives/decentralized_low_precision.h"

#include "core/collectives/collectives.h"
#include "core/ops.h"

namespace bagua {

DecentralizedLowPrecision::DecentralizedLowPrecision(RankContext& ctx, Communicator& communicator,
                                                     const BufferView& weights,
                                                     const DecentralizedLowPrecisionOptions& options)
    : ctx_(ctx), communicator_(communicator), count_(weights.count()) {
  BAGUA_CHECK(weights.dtype() == DType::kF32,
              "D_LP_S compresses f32 weights, got " + to_string(weights.dtype()));
  if (communicator_.inner() == nullptr) return;  // not a host leader: no replicas
  encoder_ = options.factory();
  decoder_ = options.factory();
  const size_t n = count_;
  const size_t bytes = static_cast<size_t>(decoder_->encoded_bytes(n).count());
  own_ = Buffer::like(weights, DType::kF32, n);
  left_peer_ = Buffer::like(weights, DType::kF32, n);
  right_peer_ = Buffer::like(weights, DType::kF32, n);
  difference_ = Buffer::like(weights, DType::kF32, n);
  decoded_ = Buffer::like(weights, DType::kF32, n);
  sent_ = Buffer::like(weights, DType::kU8, bytes);
  from_left_ = Buffer::like(weights, DType::kU8, bytes);
  from_right_ = Buffer::like(weights, DType::kU8, bytes);
  // Bagua's _init_states: the three replicas are flattened copies of the initial weights.
  copy(own_, weights);
  copy(left_peer_, weights);
  copy(right_peer_, weights);
}

void DecentralizedLowPrecision::step(const BufferView& weights, Tag tag) {
  BAGUA_CHECK_EQ(weights.count(), count_, "D_LP_S bucket size (one primitive per bucket)");
  communicator_.execute(weights, /*intranode_average=*/true, /*pre=*/true, /*post=*/true, tag,
                        [&](Transport& group) { ring_step(group, weights, tag); });
}

void DecentralizedLowPrecision::ring_step(Transport& group, const BufferView& weights, Tag tag) {
  Clock& clock = ctx_.clock();

  // 1. The difference, in Bagua's order of additions.
  copy(difference_, weights);
  axpy(difference_, 1.0 / 3.0, left_peer_);
  axpy(difference_, 1.0 / 3.0, right_peer_);
  axpy(difference_, -5.0 / 3.0, own_);

  // 2. Compress it and exchange with both neighbours.
  timed_encode(clock, *encoder_, difference_, sent_);
  BufferView sent_view = sent_.view();
  BufferView left_view = from_left_.view();
  BufferView right_view = from_right_.view();
  switch (collectives::neighbour_exchange(group, sent_view, left_view, right_view, tag)) {
    case 0:  // P = 1: left, right and self are one rank
      left_view = sent_view;
      right_view = sent_view;
      break;
    case 1:  // P = 2: left and right are the other rank, whose c arrived once
      right_view = left_view;
      break;
    default:
      break;
  }

  // 3. The neighbours' differences update their replicas.
  timed_decode(clock, *decoder_, left_view, decoded_);
  bagua::reduce(left_peer_, decoded_, ReduceOp::kSum);
  timed_decode(clock, *decoder_, right_view, decoded_);
  bagua::reduce(right_peer_, decoded_, ReduceOp::kSum);

  // 4. This rank's own difference updates its public weights, which become its weights.
  timed_decode(clock, *decoder_, sent_view, decoded_);
  copy(weights, decoded_);
  bagua::reduce(weights, own_, ReduceOp::kSum);
  copy(own_, weights);
}

}  // namespace bagua
