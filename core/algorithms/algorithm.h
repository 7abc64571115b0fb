// Algorithms: a training-time communication policy built from primitives, with hooks where Bagua has
// them. The trainer calls, on each rank and each iteration:
//
//   before_forward        (Bagua: forward pre-hook; e.g. decentralized starts averaging weights)
//   on_bucket_ready(b)    during backward, as soon as every gradient of bucket b is final
//                         (Bagua: the bucket's operations; gradient_allreduce queues its allreduce on
//                         the communication stream, so it overlaps the backward pass of earlier layers)
//   after_backward        (Bagua: post-backward hook; e.g. wait for the communication stream)
//   apply_update          (the optimizer step; algorithms that own their update override it)
//   after_update          (Bagua: post-optimizer-step hook)
//
// and once: init (tensors to buckets, sub-groups, state) and finish (drain background work).
//
// Buckets: consecutive layers in backward order, a bucket closed as soon as it holds at least the byte
// budget (Bagua's rule, bagua/torch_api/utils.py split_bucket_by_bucket_size; default 10 MiB), unless
// the algorithm buckets its own way (Algorithm::buckets). As layers are contiguous in the flat
// parameter vector, a bucket is a contiguous range too.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/compress/compressor.h"
#include "core/context.h"
#include "core/models/model.h"
#include "core/optim/optimizer.h"
#include "core/registry.h"
#include "core/services.h"

namespace bagua {

struct Bucket {
  int index = 0;            // communication order: bucket 0 holds the last layers
  size_t offset = 0;        // first parameter in the flat vector
  size_t count = 0;         // parameters
  std::vector<int> layers;  // forward indices of its layers, in backward order
};

// Packs layers, last first, into buckets: a bucket closes once it holds >= `budget` bytes of float32
// (so a budget of 0 gives one bucket per layer, and a large layer may overshoot the budget).
std::vector<Bucket> make_buckets(const std::vector<Layer>& layers, Bytes budget);
// The same rule with one limit per bucket: bucket i closes once it holds >= limits[min(i, size - 1)]
// bytes, so the last limit serves every later bucket (PyTorch's compute_bucket_assignment_by_size with
// bucket_size_limits, torch/csrc/distributed/c10d/reducer.cpp). `limits` must not be empty.
std::vector<Bucket> make_buckets(const std::vector<Layer>& layers, std::span<const Bytes> limits);

// One rank's training state, as algorithms see it.
struct TrainState {
  RankContext& ctx;
  Model& model;
  Optimizer& optimizer;
  BufferView weights;           // flat parameters (meta for profile workloads)
  BufferView grads;             // flat gradients, same layout
  std::vector<Bucket> buckets;  // made by the trainer from the bucket budget
  Stream& comm;                 // this rank's communication stream
  int64_t step = 0;             // the current iteration, from 0

  BufferView weights_of(const Bucket& b) const { return weights.slice(b.offset, b.count); }
  BufferView grads_of(const Bucket& b) const { return grads.slice(b.offset, b.count); }
};

// One service rank's state (core/services.h), as an algorithm's server loop sees it.
struct ServiceState {
  RankContext& ctx;             // its transport is the job group (workers, then service ranks)
  const ServiceRanks& ranks;    // the world's workers and service ranks
  int index = 0;                // this service rank's number, 0 .. ranks.count - 1
  std::vector<Bucket> buckets;  // what the workers' trainer hands to on_bucket_ready, made alike
  int64_t iterations = 0;       // the workers' iterations: the loop serves exactly these
  BufferView like;              // meta when the workers' model is (a profile), host memory otherwise
};

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  virtual std::string name() const = 0;
  // The buckets the trainer hands to on_bucket_ready, from the model's layers (forward order) and the
  // configured bucket budget: Bagua's rule by default. A system that buckets its own way overrides it
  // (DDP's small first bucket; Horovod and BytePS, which see every tensor as it becomes ready).
  virtual std::vector<Bucket> buckets(const std::vector<Layer>& layers, Bytes budget) const {
    return make_buckets(layers, budget);
  }
  // Throws ConfigError when the world (its size, its hosts) cannot run this algorithm.
  virtual void init(TrainState& s) {}
  virtual void before_forward(TrainState& s) {}
  virtual void on_bucket_ready(TrainState& s, const Bucket& b) {}
  virtual void after_backward(TrainState& s) {}
  virtual void apply_update(TrainState& s) { s.optimizer.step(s.weights, s.grads); }
  // Modelled device cost of apply_update, charged by the trainer on the compute stream.
  virtual Work update_cost(const TrainState& s) const { return s.optimizer.cost(s.model.num_params()); }
  // Runs `read` while the weights are stable: asynchronous algorithms hold off their background
  // averaging so that the trainer's evaluation reads a consistent model.
  virtual void read_weights(TrainState& s, const std::function<void()>& read) { read(); }
  virtual void after_update(TrainState& s) {}
  virtual void finish(TrainState& s) {}

  // Service ranks (core/services.h). An algorithm that runs a server loop on the world's service ranks
  // says so here (from its parameters), and every service rank runs serve() once, while the workers
  // train: it serves the workers' s.iterations iterations and returns. The composition root refuses a
  // world with service ranks for an algorithm that does not use them, and init() refuses a world
  // without them for one that does.
  virtual bool uses_service_ranks() const { return false; }
  virtual void serve(ServiceState& s) {}
};

struct AlgorithmDeps {
  const CompressorRegistry& compressors;
  const OptimizerRegistry& optimizers;
};
using AlgorithmRegistry = Registry<Algorithm, const AlgorithmDeps&>;
// Registers the algorithms. The compressing ones declare, in their parameter schemas, every compressor
// of `compressors` (its name as a `compressor` choice, its parameters prefixed): register the
// compressors first, and hand the algorithms the same registry in AlgorithmDeps.
void register_algorithms(AlgorithmRegistry& registry, const CompressorRegistry& compressors);

}  // namespace bagua
