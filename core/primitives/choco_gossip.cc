#include "core/primitives/choco_gossip.h"

#include "core/ops.h"

namespace bagua {

ChocoGossip::ChocoGossip(RankContext& ctx, const BufferView& like, const CompressorFactory& factory,
                         double gamma)
    : ctx_(ctx), gamma_(gamma), encoder_(factory()), decoder_(factory()) {
  BAGUA_CHECK(like.dtype() == DType::kF32,
              "CHOCO gossip compresses f32 weights, got " + to_string(like.dtype()));
  const size_t n = like.count();
  const size_t bytes = static_cast<size_t>(decoder_->encoded_bytes(n).count());
  own_ = Buffer::like(like, DType::kF32, n);
  mix_ = Buffer::like(like, DType::kF32, n);
  difference_ = Buffer::like(like, DType::kF32, n);
  decoded_ = Buffer::like(like, DType::kF32, n);
  sent_ = Buffer::like(like, DType::kU8, bytes);
  from_left_ = Buffer::like(like, DType::kU8, bytes);
  from_right_ = Buffer::like(like, DType::kU8, bytes);
  fill(own_, 0.0);  // x̂^{(0)} = 0 (the paper's initialization, and the authors' zeros_like)
  fill(mix_, 0.0);
}

void ChocoGossip::step(const BufferView& weights, Tag tag) {
  Transport& world = ctx_.transport();
  Clock& clock = ctx_.clock();
  const int ranks = world.size();
  const int rank = world.rank();
  const size_t n = weights.count();
  BAGUA_CHECK_EQ(n, own_.count(), "CHOCO gossip weights");

  // q_r := Q(x - x̂_r)
  copy(difference_, weights);
  axpy(difference_, -1.0, own_);
  timed_encode(clock, *encoder_, difference_, sent_);

  // Exchange with the ring neighbours (one neighbour when P = 2, none when P = 1).
  const int left = (rank + ranks - 1) % ranks;
  const int right = (rank + 1) % ranks;
  if (ranks == 2) {
    world.sendrecv(sent_, left, from_left_, left, tag);
  } else if (ranks >= 3) {
    RequestPtr requests[4] = {world.isend(sent_, left, tag), world.isend(sent_, right, tag),
                              world.irecv(from_left_, left, tag), world.irecv(from_right_, right, tag)};
    wait_all(requests);
  }

  // x̂_r += D(q_r); s_r += sum_j W_rj D(q_j)
  const double w = ranks >= 3 ? 1.0 / 3.0 : 1.0 / ranks;
  timed_decode(clock, *decoder_, sent_, decoded_);
  bagua::reduce(own_, decoded_, ReduceOp::kSum);
  axpy(mix_, w, decoded_);
  if (ranks >= 2) {
    timed_decode(clock, *decoder_, from_left_, decoded_);
    axpy(mix_, w, decoded_);
  }
  if (ranks >= 3) {
    timed_decode(clock, *decoder_, from_right_, decoded_);
    axpy(mix_, w, decoded_);
  }

  // x += gamma (s_r - x̂_r)
  axpy(weights, gamma_, mix_);
  axpy(weights, -gamma_, own_);
}

}  // namespace bagua
