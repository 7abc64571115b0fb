#include "core/primitives/centralized_low_precision.h"

#include "core/collectives/collectives.h"
#include "core/ops.h"

namespace bagua {

CentralizedLowPrecision::CentralizedLowPrecision(RankContext& ctx, Communicator& communicator,
                                                 const BufferView& like,
                                                 const CentralizedLowPrecisionOptions& options)
    : ctx_(ctx),
      communicator_(communicator),
      average_(options.average),
      alltoall_(options.alltoall),
      allgather_(options.allgather),
      count_(like.count()),
      parts_(communicator.inner_size()) {
  BAGUA_CHECK(like.dtype() == DType::kF32,
              "C_LP_S compresses f32 buckets, got " + to_string(like.dtype()));
  if (communicator_.inner() == nullptr)
    return;  // a non-leader of a hierarchical communicator: no sites
  for (int j = 0; j < parts_; ++j)
    scatter_sites_.push_back(options.factory());
  gather_site_ = options.factory();
  decoder_ = options.factory();
  const size_t largest = collectives::chunk_range(count_, parts_, 0).count;
  slot_bytes_ = static_cast<size_t>(decoder_->encoded_bytes(largest).count());
  const size_t total = slot_bytes_ * static_cast<size_t>(parts_);
  send_ = Buffer::like(like, DType::kU8, total);
  received_ = Buffer::like(like, DType::kU8, total);
  reduced_ = Buffer::like(like, DType::kF32, largest);
  decoded_ = Buffer::like(like, DType::kF32, largest);
  // The tail of a shorter chunk's slot is sent as it is: zero it once, so that runs are deterministic.
  fill(send_, 0.0);
}

void CentralizedLowPrecision::allreduce(const BufferView& bucket, Tag tag) {
  BAGUA_CHECK_EQ(bucket.count(), count_, "C_LP_S bucket size (one primitive per bucket)");
  communicator_.execute(bucket, average_, /*pre=*/true, /*post=*/true, tag,
                        [&](Transport& group) { scatter_reduce_gather(group, bucket, tag); });
}

void CentralizedLowPrecision::scatter_reduce_gather(Transport& group, const BufferView& bucket,
                                                    Tag tag) {
  const int ranks = group.size();
  const int rank = group.rank();
  BAGUA_CHECK_EQ(ranks, parts_, "C_LP_S inner group size");
  Clock& clock = ctx_.clock();
  const collectives::Chunking chunks(bucket, ranks);
  auto slot = [&](const Buffer& b, int j, size_t elements) {
    return b.view().slice(static_cast<size_t>(j) * slot_bytes_,
                          static_cast<size_t>(decoder_->encoded_bytes(elements).count()));
  };

  // Scatter: chunk j, compressed by its own site, to rank j.
  for (int j = 0; j < ranks; ++j) {
    const BufferView chunk = chunks.chunk(j);
    timed_encode(clock, *scatter_sites_[static_cast<size_t>(j)], chunk, slot(send_, j, chunk.count()));
  }
  collectives::alltoall(group, send_, received_, tag, alltoall_);

  // Reduce: the P decompressed copies of this rank's chunk, summed in rank order, then averaged.
  const size_t own_count = chunks.range(rank).count;
  const BufferView reduced = reduced_.view().slice(0, own_count);
  const BufferView decoded = decoded_.view().slice(0, own_count);
  for (int j = 0; j < ranks; ++j) {
    if (j == 0) {
      timed_decode(clock, *decoder_, slot(received_, 0, own_count), reduced);
    } else {
      timed_decode(clock, *decoder_, slot(received_, j, own_count), decoded);
      bagua::reduce(reduced, decoded, ReduceOp::kSum);
    }
  }
  if (average_ && ranks > 1) scale(reduced, 1.0 / ranks);

  // Gather: the reduced chunk compressed once more, every rank's slot to every rank, all decompressed.
  timed_encode(clock, *gather_site_, reduced, slot(send_, rank, own_count));
  collectives::allgather(group, send_, tag, allgather_);
  for (int j = 0; j < ranks; ++j) {
    const BufferView chunk = chunks.chunk(j);
    timed_decode(clock, *decoder_, slot(send_, j, chunk.count()), chunk);
  }
}

}  // namespace bagua
