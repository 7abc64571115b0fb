// Workloads and per-rank models.
//
// A Workload is made once per process (its data set generated once from the seed, shared read-only by
// every rank the process hosts: the simulator hosts thousands). It makes one Model per rank, which sees
// only that rank's shard.
//
// A Model exposes a flat parameter vector split into layers (contiguous ranges, forward order, covering
// every parameter), with the modelled cost of each layer's forward and backward pass. Synthetic models
// do real arithmetic in Eigen on materialized buffers (core/models/synthetic.h); profile workloads
// (per-layer parameter counts and compute times of real networks, each figure with its source;
// core/models/profile.h) have no data and run on meta buffers. Every model accepts meta buffers: it
// then does no arithmetic, but still calls ready() for every layer and returns a NaN loss.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "core/clock.h"
#include "core/registry.h"

namespace bagua {

struct Layer {
  std::string name;
  size_t offset = 0;  // first parameter in the flat vector
  size_t count = 0;   // parameters
  Work forward;       // modelled cost of this layer's forward pass on one rank's batch
  Work backward;      // ... and of its backward pass
};

// Calls ready(l) for each of `layers` layers in backward order, last first: for a model whose
// gradients all become final at once. Does nothing when `ready` is empty.
inline void all_layers_ready(int layers, const std::function<void(int layer)>& ready) {
  if (!ready) return;
  for (int l = layers - 1; l >= 0; --l)
    ready(l);
}

class Model {
 public:
  virtual ~Model() = default;
  virtual const std::vector<Layer>& layers() const = 0;  // forward order, contiguous, covering all
  virtual size_t num_params() const = 0;
  // False for profile workloads: their tensors are meta buffers and losses are NaN.
  virtual bool materialized() const = 0;
  // The initial weights, identical on every rank for the same seed (no-op on meta buffers).
  virtual void init_weights(const BufferView& w) const = 0;
  // One iteration on this rank's next batch: writes the gradient of the mean batch loss at `w` into `g`
  // and returns the batch loss. Calls `ready(layer)` for every layer in backward order (last layer
  // first) as soon as that layer's slice of `g` is final. The caller charges the modelled compute.
  // The batch at `step` is given by the workload's partition (core/models/dataset.h); the same step
  // always gives the same batch.
  virtual double forward_backward(const BufferView& w, const BufferView& g, int64_t step,
                                  const std::function<void(int layer)>& ready) = 0;
  // The loss of `w` on the whole training set (every rank's data), for reporting; NaN if unavailable.
  virtual double full_loss(const BufferView& w) const {
    return std::numeric_limits<double>::quiet_NaN();
  }
  // The optimal full loss when known in closed form (linear regression), else NaN.
  virtual double optimal_loss() const { return std::numeric_limits<double>::quiet_NaN(); }
  // The fraction of the workload's held-out test set (all of it) that `w` classifies correctly, for
  // reporting; NaN where the workload has no test set (synthetic and profile workloads).
  virtual double test_accuracy(const BufferView& w) const {
    return std::numeric_limits<double>::quiet_NaN();
  }
  // Whether test_accuracy measures anything (a workload with a test set): the trainer then keeps the
  // weights it evaluates, for the averaged model's accuracy (core/trainer/averaged_model.h).
  virtual bool has_test_set() const { return false; }
};

struct WorkloadSetup {
  int world_size = 1;
  int64_t batch_size = 32;  // per rank
  uint64_t seed = 1;
};

class Workload {
 public:
  virtual ~Workload() = default;
  virtual std::string name() const = 0;
  virtual std::unique_ptr<Model> make_model(int rank) const = 0;
};

using WorkloadRegistry = Registry<Workload, const WorkloadSetup&>;
void register_workloads(WorkloadRegistry& registry);

}  // namespace bagua
