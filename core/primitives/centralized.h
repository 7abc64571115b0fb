// C_FP_S — centralized, full precision, synchronous (Bagua's taxonomy): every rank ends with the sum
// (or the average) of every rank's bucket.
//
// Flat: one allreduce over the world. Hierarchical: intra-host reduce to the host leader, the allreduce
// among host leaders, intra-host broadcast (collectives::hierarchical_allreduce on the communicator's
// host groups). Both give the same result up to floating-point summation order.
#pragma once

#include "core/buffer.h"
#include "core/collectives/collectives.h"
#include "core/context.h"
#include "core/primitives/communicator.h"

namespace bagua {

struct CentralizedFullPrecisionOptions {
  bool average = true;  // the average over ranks, else the sum
  collectives::AllreduceAlgo algo = collectives::AllreduceAlgo::kRing;
  // kNccl's protocol (collectives::NcclProtocolOption).
  collectives::NcclProtocolOption protocol = collectives::kDefaultNcclProtocol;
};

class CentralizedFullPrecision {
 public:
  // One instance may serve every bucket, of any size, so `like` only stands in the common shape; the
  // collectives check the buckets' dtype (ConfigError for an average of integers). Runs no compute of
  // its own, so `ctx` is not kept either.
  CentralizedFullPrecision(RankContext& ctx, Communicator& communicator, const BufferView& like,
                           const CentralizedFullPrecisionOptions& options);
  // bucket := sum (or average) over ranks of bucket.
  void allreduce(const BufferView& bucket, Tag tag);

 private:
  Communicator& communicator_;
  CentralizedFullPrecisionOptions options_;
};

}  // namespace bagua
