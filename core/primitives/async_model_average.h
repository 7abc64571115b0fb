// Asynchronous model averaging (Bagua's D_FP_A with peer mode all): a background loop on the rank's
// communication stream that, every `interval`, averages a snapshot of the weights over all ranks and
// folds the average in while the rank keeps training. Followed from rust/bagua-core/
// bagua-core-internal/src/comm_ops/decentralized_full_precision_asynchronous.rs and
// bagua/torch_api/algorithms/async_model_average.py (_run_async_loop, _negotiate, abort).
//
// Terms:
//   snapshot   a copy of the weights taken at the start of a round
//   average    the allreduce average of every rank's snapshot
//   delta      average - snapshot; the round ends with weights += delta (Bagua's async_model_average
//              kernel: t + reduced / nranks - temp), so the local progress made during the round's
//              communication is kept
//   round      flag, snapshot, average, delta, then sleep `interval`
//   flag       a tiny allreduce(min) opening every round: 1 = keep going, 0 = stop (Bagua negotiates
//              the same way with a one-byte broadcast from rank 0). Every rank runs the same
//              collectives in every round, so all ranks leave the loop at the same round: the first one
//              whose flag allreduce sees a rank that has asked to stop
//   busy       the compute stream is between begin_compute and end_compute (forward and backward read
//              the weights; Bagua locks the weights over that span). A delta that arrives while busy is
//              held back and applied by end_compute; the loop waits for that before its next round
//
// Locking: one std::mutex guards the weights against concurrent writes (snapshot copy, delta add, the
// caller's optimizer step through locked()) and the busy/stop state. It is never held across a
// transport, clock or event call (core/context.h): in the simulator all streams share one OS thread.
//
// Flat only, like Bagua's op ("asynchronous op only accepts non-hierarchical communicator").
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>

#include "core/buffer.h"
#include "core/collectives/collectives.h"
#include "core/context.h"
#include "core/primitives/communicator.h"

namespace bagua {

struct AsyncModelAveragerOptions {
  Time interval;      // between two rounds; > 0
  Tag data_tag{};     // carries the snapshots
  Tag control_tag{};  // carries the flag
  // The allreduce of the snapshots and of the flag: Bagua's loop calls NCCL's allreduce (kNccl).
  collectives::AllreduceAlgo algo = collectives::AllreduceAlgo::kRing;
  collectives::NcclProtocolOption protocol = collectives::kDefaultNcclProtocol;
};

class AsyncModelAverager {
 public:
  // `weights` (averaged in place) must outlive the averager, and so must `communicator`, which must be
  // flat (BAGUA_CHECK otherwise).
  AsyncModelAverager(RankContext& ctx, Communicator& communicator, const BufferView& weights,
                     const AsyncModelAveragerOptions& options);
  AsyncModelAverager(const AsyncModelAverager&) = delete;
  AsyncModelAverager& operator=(const AsyncModelAverager&) = delete;

  // Queues the background loop on `stream` (once).
  void start(Stream& stream);
  bool started() const { return started_; }

  // The compute stream starts / stops reading the weights (forward, backward). end_compute applies a
  // delta held back meanwhile.
  void begin_compute();
  void end_compute();

  // Runs `update` (an optimizer step on the weights, say) with the weights locked. `update` must not
  // call the transport, the clock or an event.
  void locked(const std::function<void()>& update);

  // Asks every rank's loop to stop at its next round and waits until this rank's loop has exited. A
  // no-op if the loop was never started.
  void stop();

  // Completed averaging rounds.
  int64_t rounds() const;

 private:
  void loop();

  RankContext& ctx_;
  Communicator& communicator_;
  BufferView weights_;
  Time interval_;
  Tag data_tag_;
  Tag control_tag_;
  collectives::AllreduceAlgo algo_;
  collectives::NcclProtocolOption protocol_;
  Buffer snapshot_;
  Buffer delta_;
  Buffer flag_;  // host memory: a control value, materialized even for meta weights

  mutable std::mutex mutex_;  // guards the weights and everything below
  bool busy_ = false;
  bool stop_requested_ = false;
  bool held_back_ = false;  // delta_ waits for end_compute
  EventPtr applied_;        // set by end_compute once a held-back delta is applied
  int64_t rounds_ = 0;

  bool started_ = false;
  EventPtr exited_;
};

}  // namespace bagua
