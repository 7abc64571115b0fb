#include "core/primitives/communicator.h"

#include "core/ops.h"

namespace bagua {

Communicator::Communicator(Transport& world, bool hierarchical,
                           collectives::IntraHostOptions intra_host)
    : world_(world) {
  if (hierarchical) groups_.emplace(world, intra_host);
}

Transport* Communicator::inner() {
  if (!groups_) return &world_;
  return groups_->leaders.get();
}

int Communicator::inner_size() const {
  return groups_ ? groups_->hosts() : world_.size();
}

void Communicator::execute(const BufferView& data, bool intranode_average, bool pre, bool post, Tag tag,
                           const std::function<void(Transport& inner)>& op) {
  if (!groups_) {
    op(world_);
    return;
  }
  Transport& intra = *groups_->intra;
  if (pre) {
    // Bagua's hierarchical_pre: reduce_inplace onto intra rank 0 with AVG or SUM (ncclReduce:
    // collectives::intra_host_reduce as the communicator's IntraHostOptions say, IntraHostAlgo::kNccl
    // being NCCL's pipelined chain).
    collectives::intra_host_reduce(*groups_, data, ReduceOp::kSum, tag);
    if (intranode_average && groups_->is_leader() && intra.size() > 1) scale(data, 1.0 / intra.size());
  }
  if (groups_->is_leader()) op(*groups_->leaders);
  // Bagua's hierarchical_post: broadcast from intra rank 0 (ncclBroadcast, likewise).
  if (post) collectives::intra_host_broadcast(*groups_, data, tag);
}

}  // namespace bagua
