#include "core/primitives/choco_gossip.h"

#include "core/collectives/collectives.h"
#include "core/ops.h"

namespace bagua {

ChocoGossip::ChocoGossip(RankContext& ctx, Communicator& communicator, const BufferView& like,
                         const ChocoGossipOptions& options)
    : ctx_(ctx), communicator_(communicator), count_(like.count()), gamma_(options.gamma) {
  BAGUA_CHECK(like.dtype() == DType::kF32,
              "CHOCO gossip compresses f32 weights, got " + to_string(like.dtype()));
  if (communicator_.inner() == nullptr) return;  // not a host leader: no public copies
  encoder_ = options.factory();
  decoder_ = options.factory();
  const size_t n = count_;
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
  BAGUA_CHECK_EQ(weights.count(), count_, "CHOCO gossip weights");
  communicator_.execute(weights, /*intranode_average=*/true, /*pre=*/true, /*post=*/true, tag,
                        [&](Transport& group) { gossip(group, weights, tag); });
}

void ChocoGossip::gossip(Transport& group, const BufferView& weights, Tag tag) {
  Clock& clock = ctx_.clock();

  // q_r := Q(x - x̂_r)
  copy(difference_, weights);
  axpy(difference_, -1.0, own_);
  timed_encode(clock, *encoder_, difference_, sent_);

  // Exchange with the ring neighbours (one neighbour when P = 2, none when P = 1).
  const int neighbours = collectives::neighbour_exchange(group, sent_, from_left_, from_right_, tag);

  // x̂_r += D(q_r); s_r += sum_j W_rj D(q_j)
  const double w = 1.0 / (neighbours + 1);
  timed_decode(clock, *decoder_, sent_, decoded_);
  bagua::reduce(own_, decoded_, ReduceOp::kSum);
  axpy(mix_, w, decoded_);
  if (neighbours >= 1) {
    timed_decode(clock, *decoder_, from_left_, decoded_);
    axpy(mix_, w, decoded_);
  }
  if (neighbours == 2) {
    timed_decode(clock, *decoder_, from_right_, decoded_);
    axpy(mix_, w, decoded_);
  }

  // x += gamma (s_r - x̂_r)
  axpy(weights, gamma_, mix_);
  axpy(weights, -gamma_, own_);
}

}  // namespace bagua
