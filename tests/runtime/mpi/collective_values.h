// Closed-form values of the collectives' tests over a real runtime (the MPI and the NCCL runtime
// tests), and the groups they run on.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <numeric>
#include <vector>

#include "core/buffer.h"
#include "core/transport.h"

namespace bagua::testing {

// Runs `body` on the whole job's group and on the group of all ranks but the last.
inline void on_groups(Transport& world, const std::function<void(Transport&)>& body) {
  body(world);
  std::vector<int> most(static_cast<size_t>(world.size() - 1));
  std::iota(most.begin(), most.end(), 0);
  if (world.rank() < world.size() - 1) {
    auto group = world.subgroup(most);
    body(*group);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// Rank r's contribution at index i: (r + 1) * w(i), w(i) = i % 13 + 1. Over P ranks:
//   sum = P(P+1)/2 * w(i),  min = w(i),  max = P * w(i).
inline int32_t weight(size_t i) {
  return static_cast<int32_t>(i % 13 + 1);
}
inline int32_t contribution(int rank, size_t i) {
  return (rank + 1) * weight(i);
}
inline int32_t reduced(ReduceOp op, int p, size_t i) {
  switch (op) {
    case ReduceOp::kSum:
      return p * (p + 1) / 2 * weight(i);
    case ReduceOp::kMin:
      return weight(i);
    case ReduceOp::kMax:
      return p * weight(i);
  }
  return 0;
}

}  // namespace bagua::testing
