#include "core/trainer/trainer.h"

#include <cmath>
#include <span>

#include "core/check.h"
#include "core/ops.h"

namespace bagua {

namespace {

// Where the model's arithmetic happens. Synthetic models compute in Eigen on host memory; when the
// rank's tensors live on a device, the trainer keeps host mirrors: weights are copied to the host
// before the forward pass and each layer's gradients to the device as soon as they are final.
struct Tensors {
  Buffer weights;
  Buffer grads;
  Buffer host_weights;  // mirrors, only for a device-resident materialized model
  Buffer host_grads;
  bool mirrored = false;

  BufferView model_weights() const { return mirrored ? host_weights.view() : weights.view(); }
  BufferView model_grads() const { return mirrored ? host_grads.view() : grads.view(); }
};

Tensors make_tensors(RankContext& ctx, const Model& model) {
  const size_t n = model.num_params();
  Tensors t;
  if (!model.materialized()) {
    t.weights = Buffer::meta(DType::kF32, n);
    t.grads = Buffer::meta(DType::kF32, n);
    return t;
  }
  t.weights = Buffer(ctx.space(), DType::kF32, n);
  t.grads = Buffer(ctx.space(), DType::kF32, n);
  t.mirrored = ctx.space().memory() == Memory::kDevice;
  if (t.mirrored) {
    t.host_weights = Buffer::host(DType::kF32, n);
    t.host_grads = Buffer::host(DType::kF32, n);
    model.init_weights(t.host_weights);
    copy(t.weights, t.host_weights);
  } else {
    model.init_weights(t.weights);
  }
  fill(t.grads, 0.0);
  return t;
}

void check_layers(const Model& model) {
  size_t next = 0;
  for (const Layer& l : model.layers()) {
    BAGUA_CHECK_EQ(l.offset, next, "layer '" + l.name + "' must start where the previous one ended");
    next += l.count;
  }
  BAGUA_CHECK_EQ(next, model.num_params(), "layers must cover every parameter");
}

std::string diverged_text(int rank, int64_t iteration, const char* which, double value) {
  return std::string(which) + " " +
         (std::isnan(value) ? "nan"
          : value > 0       ? "inf"
                            : "-inf") +
         " at iteration " + std::to_string(iteration) + " on rank " + std::to_string(rank);
}

}  // namespace

Diverged::Diverged(int rank, int64_t iteration, const char* which, double value)
    : std::runtime_error("diverged: " + diverged_text(rank, iteration, which, value)),
      rank_(rank),
      iteration_(iteration) {}

TrainResult train(RankContext& ctx, Model& model, Optimizer& optimizer, Algorithm& algorithm,
                  const TrainOptions& options, const IterationObserver& observer) {
  check_layers(model);
  const std::vector<Layer>& layers = model.layers();
  Clock& clock = ctx.clock();
  Tensors tensors = make_tensors(ctx, model);
  std::unique_ptr<Stream> comm = ctx.make_stream("communication");

  TrainState state{ctx,           model,
                   optimizer,     tensors.weights,
                   tensors.grads, algorithm.buckets(layers, options.bucket_bytes),
                   *comm,         0};
  algorithm.init(state);

  // Which bucket each layer belongs to, and (in each backward pass) how many of a bucket's layers are
  // still pending.
  std::vector<int> bucket_of(layers.size(), -1);
  std::vector<size_t> pending(state.buckets.size());
  for (const Bucket& b : state.buckets)
    for (int l : b.layers)
      bucket_of[static_cast<size_t>(l)] = b.index;
  for (size_t l = 0; l < layers.size(); ++l)
    BAGUA_CHECK(bucket_of[l] >= 0, "layer " + std::to_string(l) + " is in no bucket");

  TrainResult result;
  result.rank = ctx.transport().rank();
  result.iterations.reserve(static_cast<size_t>(options.iterations));

  // The full-data loss and test accuracy of this rank's weights (and, where kept, a copy of them):
  // real arithmetic, outside modelled time.
  auto evaluate = [&](IterationRecord& rec) {
    if (!model.materialized()) return;
    algorithm.read_weights(state, [&] {
      if (tensors.mirrored) copy(tensors.host_weights, tensors.weights);
      rec.full_loss = model.full_loss(tensors.model_weights());
      rec.test_accuracy = model.test_accuracy(tensors.model_weights());
      if (options.keep_evaluated_weights) {
        const std::span<float> w = tensors.model_weights().as<float>();
        result.evaluated_weights.push_back({rec.iteration, std::vector<float>(w.begin(), w.end())});
      }
    });
  };

  // Timelines name each compute slice after its layer and pass (only when a tracer records them).
  Tracer* const tracer = ctx.tracer();
  std::vector<std::string> forward_label, backward_label;
  if (tracer) {
    for (const Layer& layer : layers) {
      forward_label.push_back("forward " + layer.name);
      backward_label.push_back("backward " + layer.name);
    }
  }
  auto labelled = [&](Work w, const std::vector<std::string>& labels, size_t l) {
    if (tracer) w.label = labels[l];
    return w;
  };

  for (int64_t step = 0; step < options.iterations; ++step) {
    state.step = step;
    IterationRecord rec;
    rec.iteration = step;
    rec.begin = clock.now();
    if (tracer) tracer->begin_iteration(step);

    algorithm.before_forward(state);
    if (tensors.mirrored) copy(tensors.host_weights, tensors.weights);

    // Compute is the clock time the forward, backward and update phases take, less the time spent in
    // the algorithm's hooks during backward: on the simulator exactly the modelled compute charged, on
    // a real runtime the real arithmetic plus any emulated (profiled) compute.
    const Time compute_begin = clock.now();
    Time in_hooks;

    // Forward: every layer's modelled cost, in forward order.
    for (size_t l = 0; l < layers.size(); ++l)
      clock.compute(labelled(layers[l].forward, forward_label, l));

    // Backward: layer by layer, last first; a bucket is handed to the algorithm (overlap) the moment
    // its last layer's gradients are final.
    for (const Bucket& b : state.buckets)
      pending[static_cast<size_t>(b.index)] = b.layers.size();
    int next_ready = 0;  // buckets become ready strictly in index order
    rec.loss = model.forward_backward(tensors.model_weights(), tensors.model_grads(), step, [&](int l) {
      const Layer& layer = layers[static_cast<size_t>(l)];
      clock.compute(labelled(layer.backward, backward_label, static_cast<size_t>(l)));
      if (tensors.mirrored)
        copy(tensors.grads.view().slice(layer.offset, layer.count),
             tensors.host_grads.view().slice(layer.offset, layer.count));
      const int b = bucket_of[static_cast<size_t>(l)];
      BAGUA_CHECK(pending[static_cast<size_t>(b)] > 0,
                  "layer " + std::to_string(l) + " reported ready twice");
      if (--pending[static_cast<size_t>(b)] == 0) {
        BAGUA_CHECK_EQ(b, next_ready, "buckets must complete in backward order");
        ++next_ready;
        if (options.overlap) {
          const Time hook_begin = clock.now();
          algorithm.on_bucket_ready(state, state.buckets[static_cast<size_t>(b)]);
          in_hooks += clock.now() - hook_begin;
        }
      }
    });
    rec.compute = clock.now() - compute_begin - in_hooks;
    BAGUA_CHECK_EQ(static_cast<size_t>(next_ready), state.buckets.size(),
                   "every layer must be reported ready in each backward pass");
    if (!options.overlap)
      for (const Bucket& b : state.buckets)
        algorithm.on_bucket_ready(state, b);

    algorithm.after_backward(state);
    const Time update_begin = clock.now();
    algorithm.apply_update(state);
    Work update = algorithm.update_cost(state);
    if (tracer) update.label = "update";
    clock.compute(update);
    rec.compute += clock.now() - update_begin;
    algorithm.after_update(state);
    rec.end = clock.now();

    const bool last = step + 1 == options.iterations;
    const bool evaluating =
        last || (options.eval_interval > 0 && (step + 1) % options.eval_interval == 0);
    if (last) {
      // Drain background communication (asynchronous algorithms) before the final evaluation.
      algorithm.finish(state);
      comm->synchronize();
      result.finish = clock.now();
    }
    if (evaluating) evaluate(rec);
    result.iterations.push_back(rec);
    if (observer) observer(rec);
    if (model.materialized()) {
      if (!std::isfinite(rec.loss)) throw Diverged(result.rank, step, "loss", rec.loss);
      // A NaN full loss is a model without one (Model::full_loss); an infinite one has diverged.
      if (evaluating && std::isinf(rec.full_loss))
        throw Diverged(result.rank, step, "full loss", rec.full_loss);
    }
  }

  if (result.iterations.empty()) {
    algorithm.finish(state);
    comm->synchronize();
    result.finish = clock.now();
  }
  return result;
}

void serve(RankContext& ctx, int workers, const Model& model, Algorithm& algorithm,
           const TrainOptions& options) {
  Transport& job = ctx.transport();
  BAGUA_CHECK(job.rank() >= workers && job.rank() < job.size(),
              "serve() on job rank " + std::to_string(job.rank()) + " of " +
                  std::to_string(job.size()) + " with " + std::to_string(workers) + " workers");
  check_layers(model);
  const ServiceRanks ranks{&job, workers, job.size() - workers};
  ServiceState state{
      ctx,
      ranks,
      job.rank() - workers,
      algorithm.buckets(model.layers(), options.bucket_bytes),
      options.iterations,
      BufferView(nullptr, 0, DType::kF32, model.materialized() ? &ctx.space() : &meta_space())};
  algorithm.serve(state);
}

}  // namespace bagua
