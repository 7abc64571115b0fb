#include "core/primitives/centralized.h"

namespace bagua {

CentralizedFullPrecision::CentralizedFullPrecision(Transport& world, bool hierarchical, bool average,
                                                   collectives::AllreduceAlgo algo)
    : world_(world), average_(average), algo_(algo) {
  if (hierarchical) groups_.emplace(world);
}

void CentralizedFullPrecision::allreduce(const BufferView& bucket, Tag tag) {
  if (groups_) {
    if (average_)
      collectives::hierarchical_allreduce_average(*groups_, bucket, tag, algo_);
    else
      collectives::hierarchical_allreduce(*groups_, bucket, ReduceOp::kSum, tag, algo_);
    return;
  }
  if (average_)
    collectives::allreduce_average(world_, bucket, tag, algo_);
  else
    collectives::allreduce(world_, bucket, ReduceOp::kSum, tag, algo_);
}

}  // namespace bagua
