#include "core/services.h"

#include <numeric>
#include <vector>

#include "core/check.h"

namespace bagua {

WorkerContext::WorkerContext(RankContext& inner, int workers) : ForwardingContext(inner) {
  Transport& job = inner.transport();
  BAGUA_CHECK(workers >= 1 && workers <= job.size() && job.rank() < workers,
              "a worker context for job rank " + std::to_string(job.rank()) + " of " +
                  std::to_string(job.size()) + " with " + std::to_string(workers) + " workers");
  std::vector<int> members(static_cast<size_t>(workers));
  std::iota(members.begin(), members.end(), 0);
  workers_ = job.subgroup(members);
  services_ = ServiceRanks{&job, workers, job.size() - workers};
}

}  // namespace bagua
