// C_LP_S — centralized, low precision, synchronous (Bagua's taxonomy): every rank ends with the
// average (or the sum) of every rank's bucket, communicated compressed by Bagua's scatter-reduce-gather
// (rust/bagua-core/bagua-core-internal/src/comm_ops/centralized_low_precision_synchronous.rs).
//
// Terms. P ranks in the inner group (core/primitives/communicator.h), r this rank's index there. The
// bucket is cut into P chunks by collectives::chunk_range; chunk j "belongs" to rank j.
//   slot        every encoded chunk travels in a slot of encoded_bytes(largest chunk) bytes (a shorter
//               chunk's encoding leaves the slot's tail unused; Bagua pads the bucket itself to a
//               multiple of P instead — its `alignment = world size` — which costs the same order of
//               bytes)
//   scatter     compress chunk j of the bucket into slot j, for every j; alltoall the slots, so that
//               slot j of the received buffer holds rank j's compressed copy of chunk r (Bagua's
//               communicator alltoall: Al::Alltoall<Al::NCCLBackend>, rust/bagua-core/
//               bagua-core-internal/src/communicators/mod.rs, i.e. ncclSend and ncclRecv to every
//               peer in one NCCL group, LLNL/Aluminum include/aluminum/nccl_impl.hpp, do_alltoall;
//               `alltoall` in the options chooses that or the pairwise exchange)
//   reduce      decompress the P received copies of chunk r and average (or sum) them
//   gather      compress the reduced chunk r once more, allgather the slots, decompress every slot j
//               into chunk j of the bucket (Bagua: c.allgather_inplace of the compressed tensor,
//               rust/bagua-core/bagua-core-internal/src/comm_ops/
//               centralized_low_precision_synchronous.rs, i.e. Al::Allgather<Al::NCCLBackend>,
//               communicators/mod.rs, which calls ncclAllGather in place, LLNL/Aluminum
//               include/aluminum/nccl_impl.hpp, do_allgather; `allgather` in the options chooses
//               that, NCCL's pipelined ring, or the bulk-synchronous ring)
// Every chunk, the rank's own included, goes through the compressor twice, as in Bagua. Hierarchical:
// intra-host reduce (full precision, averaged when `average`) to the host leader, the above among host
// leaders, intra-host broadcast (Bagua's execute_communication with pre and post).
//
// Compression sites. A compressor instance may hold state tied to one buffer (error feedback's
// residual): an instance is made, from the factory, per bucket (one primitive per bucket) and per
// site — one per scatter chunk j, one for the gather — so that a residual always belongs to one buffer.
//
// Modelled compute: every encode and decode charges the compressor's cost to the calling stream.
#pragma once

#include <memory>
#include <vector>

#include "core/buffer.h"
#include "core/compress/compressor.h"
#include "core/context.h"
#include "core/primitives/communicator.h"

namespace bagua {

struct CentralizedLowPrecisionOptions {
  CompressorFactory factory;  // one compressor instance per site
  bool average = true;        // the average over ranks, else the sum
  // How the scatter's alltoall runs: pairwise exchange, or as Bagua's communicator runs it, NCCL's
  // grouped send and receive to every peer (collectives::AlltoallAlgo).
  collectives::AlltoallAlgo alltoall = collectives::AlltoallAlgo::kPairwise;
  // How the gather's allgather runs: the bulk-synchronous ring, or as Bagua's communicator runs it,
  // ncclAllGather (collectives::AllgatherAlgo).
  collectives::AllgatherAlgo allgather = collectives::AllgatherAlgo::kRing;
};

class CentralizedLowPrecision {
 public:
  // One instance per bucket. `like`: a buffer of the bucket's count, in the space the bucket lives in.
  CentralizedLowPrecision(RankContext& ctx, Communicator& communicator, const BufferView& like,
                          const CentralizedLowPrecisionOptions& options);

  // bucket := average (or sum) over ranks of bucket, through compressed scatter-reduce-gather.
  void allreduce(const BufferView& bucket, Tag tag);

  // Bytes of one slot (exposed for tests of the wire size).
  size_t slot_bytes() const { return slot_bytes_; }

 private:
  void scatter_reduce_gather(Transport& group, const BufferView& bucket, Tag tag);

  RankContext& ctx_;
  Communicator& communicator_;
  bool average_;
  collectives::AlltoallAlgo alltoall_;
  collectives::AllgatherAlgo allgather_;
  size_t count_;
  int parts_;
  size_t slot_bytes_ = 0;
  std::vector<std::unique_ptr<Compressor>> scatter_sites_;  // one per chunk j
  std::unique_ptr<Compressor> gather_site_;
  std::unique_ptr<Compressor> decoder_;  // decodes what others encoded (decoding is stateless)
  Buffer send_;                          // P slots
  Buffer received_;                      // P slots
  Buffer reduced_;                       // the largest chunk's count of f32
  Buffer decoded_;                       // the largest chunk's count of f32
};

}  // namespace bagua
