// C_FP_S — centralized, full precision, synchronous (Bagua's taxonomy): every rank ends with the sum
// (or the average) of every rank's bucket.
//
// Flat: one allreduce over the world. Hierarchical: intra-host reduce to the host leader, the allreduce
// among host leaders, intra-host broadcast (collectives::hierarchical_allreduce). Both give the same
// result up to floating-point summation order.
#pragma once

#include <memory>
#include <optional>

#include "core/collectives/collectives.h"
#include "core/transport.h"

namespace bagua {

class CentralizedFullPrecision {
 public:
  // Collective over `world` when hierarchical (it builds the host groups).
  CentralizedFullPrecision(Transport& world, bool hierarchical, bool average,
                           collectives::AllreduceAlgo algo = collectives::AllreduceAlgo::kRing);
  // bucket := sum (or average) over ranks of bucket.
  void allreduce(const BufferView& bucket, Tag tag);

 private:
  Transport& world_;
  bool average_;
  collectives::AllreduceAlgo algo_;
  std::optional<collectives::HierarchicalGroups> groups_;
};

}  // namespace bagua
