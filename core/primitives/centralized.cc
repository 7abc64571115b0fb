#include "core/primitives/centralized.h"

namespace bagua {

CentralizedFullPrecision::CentralizedFullPrecision(RankContext& /*ctx*/, Communicator& communicator,
                                                   const BufferView& /*like*/,
                                                   const CentralizedFullPrecisionOptions& options)
    : communicator_(communicator), options_(options) {}

void CentralizedFullPrecision::allreduce(const BufferView& bucket, Tag tag) {
  if (collectives::HierarchicalGroups* groups = communicator_.groups()) {
    if (options_.average)
      collectives::hierarchical_allreduce_average(*groups, bucket, tag, options_.algo,
                                                  options_.protocol);
    else
      collectives::hierarchical_allreduce(*groups, bucket, ReduceOp::kSum, tag, options_.algo,
                                          options_.protocol);
    return;
  }
  Transport& world = communicator_.world();
  if (options_.average)
    collectives::allreduce_average(world, bucket, tag, options_.algo, options_.protocol);
  else
    collectives::allreduce(world, bucket, ReduceOp::kSum, tag, options_.algo, options_.protocol);
}

}  // namespace bagua
