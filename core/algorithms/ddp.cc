#include "core/algorithms/ddp.h"

#include <cmath>
#include <numbers>

#include "core/algorithms/collective_params.h"
#include "core/algorithms/tags.h"
#include "core/ops.h"

namespace bagua {

namespace {

constexpr const char* kHookNames[] = {"none", "fp16", "bf16", "powersgd"};

DdpHook parse_hook(const std::string& name) {
  for (size_t i = 0; i < std::size(kHookNames); ++i)
    if (name == kHookNames[i]) return static_cast<DdpHook>(i);
  throw ConfigError("ddp: unknown comm_hook '" + name + "'");
}

// N(0, 1) by Box-Muller from a 64-bit engine whose sequence the C++ standard fixes, so that every rank
// (and every platform) draws the same Q.
float normal(std::mt19937_64& engine) {
  const double u1 = (static_cast<double>(engine() >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
  const double u2 = static_cast<double>(engine() >> 11) * 0x1.0p-53;          // [0, 1)
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2));
}

// Gram-Schmidt on the columns of a rows x cols row-major matrix (powerSGD_hook.py, _orthogonalize,
// epsilon 0): column i normalized, then removed from every later column.
void orthogonalize(float* a, size_t rows, size_t cols) {
  for (size_t i = 0; i < cols; ++i) {
    double norm2 = 0;
    for (size_t k = 0; k < rows; ++k)
      norm2 += static_cast<double>(a[k * cols + i]) * a[k * cols + i];
    const float norm = static_cast<float>(std::sqrt(norm2));
    if (norm > 0)
      for (size_t k = 0; k < rows; ++k)
        a[k * cols + i] /= norm;
    for (size_t j = i + 1; j < cols; ++j) {
      double dot = 0;
      for (size_t k = 0; k < rows; ++k)
        dot += static_cast<double>(a[k * cols + i]) * a[k * cols + j];
      for (size_t k = 0; k < rows; ++k)
        a[k * cols + j] -= static_cast<float>(dot) * a[k * cols + i];
    }
  }
}

// Modelled cost of one side x side by side x r' product: 2 side^2 r' flops, one pass over M.
Work product_cost(const PowerSgdLayer& l) {
  const double side = static_cast<double>(l.side);
  return Work{2.0 * side * side * static_cast<double>(l.rank),
              Bytes(static_cast<int64_t>(sizeof(float) * l.side * l.side)), Time::zero()};
}

}  // namespace

std::string to_string(DdpHook hook) {
  return kHookNames[static_cast<size_t>(hook)];
}

PowerSgdLayer powersgd_layer(const Layer& layer, int layer_index, const PowerSgdOptions& options) {
  PowerSgdLayer l;
  l.layer = layer_index;
  l.side = static_cast<size_t>(std::ceil(std::sqrt(static_cast<double>(layer.count))));
  while (l.side * l.side < layer.count)
    ++l.side;  // guard sqrt's rounding
  while (l.side > 0 && (l.side - 1) * (l.side - 1) >= layer.count)
    --l.side;
  l.rank = std::min(l.side, static_cast<size_t>(options.rank));
  // _should_compress: compressed size x min_compression_rate < uncompressed size, the compressed size
  // being (rows + cols) r'.
  l.compressed = static_cast<double>(2 * l.side * l.rank) * options.min_compression_rate <
                 static_cast<double>(layer.count);
  return l;
}

ParamSchema Ddp::schema() {
  ParamSchema s;
  // DistributedDataParallel(bucket_cap_mb=25) (torch/nn/parallel/distributed.py).
  s.add_int("bucket_cap_mb", 25, "bucket size in MiB after the first bucket", 0);
  // dist._DEFAULT_FIRST_BUCKET_BYTES = kDefaultFirstBucketBytes = 1024 * 1024
  // (torch/csrc/distributed/c10d/reducer.hpp), the first bucket's limit in distributed.py.
  s.add_int("first_bucket_bytes", int64_t{1} << 20, "limit of the first bucket, in bytes", 0);
  // ProcessGroupNCCL: DDP's allreduce is ncclAllReduce.
  add_allreduce_params(s, "nccl", "allreduce algorithm of the buckets");
  // No hook is DDP's default (register_comm_hook is opt-in).
  s.add_string("comm_hook", "none", "communication hook: none, fp16, bf16 or powersgd",
               {"none", "fp16", "bf16", "powersgd"});
  // PowerSGDState defaults (powerSGD_hook.py): matrix_approximation_rank=1, start_powerSGD_iter=1_000,
  // min_compression_rate=2, use_error_feedback=True, warm_start=True, random_seed=0.
  s.add_int("powersgd_rank", 1, "powersgd: rank r of the approximation", 1);
  s.add_int("powersgd_start_iter", 1000, "powersgd: iterations of vanilla allreduce first", 0);
  s.add_double("powersgd_min_compression_rate", 2.0,
               "powersgd: a layer is compressed only when it shrinks by more than this", 0.0);
  s.add_bool("powersgd_error_feedback", true, "powersgd: add the local compression error back");
  s.add_bool("powersgd_warm_start", true, "powersgd: reuse Q from the previous iteration");
  s.add_int("powersgd_seed", 0, "powersgd: seed of the random Q", 0);
  return s;
}

Ddp::Ddp(const Params& params, const AlgorithmDeps& deps)
    : bucket_cap_(Bytes(params.get_int("bucket_cap_mb") << 20)),
      first_bucket_(Bytes(params.get_int("first_bucket_bytes"))),
      hook_(parse_hook(params.get_string("comm_hook"))),
      algo_(allreduce_algo(params)),
      protocol_(nccl_protocol_option(params, algo_)),
      powersgd_{static_cast<int>(params.get_int("powersgd_rank")),
                params.get_int("powersgd_start_iter"),
                params.get_double("powersgd_min_compression_rate"),
                params.get_bool("powersgd_error_feedback"),
                params.get_bool("powersgd_warm_start"),
                static_cast<uint64_t>(params.get_int("powersgd_seed"))},
      rng_(powersgd_.seed) {
  if (hook_ == DdpHook::kFp16 || hook_ == DdpHook::kBf16)
    cast_ = compressor_factory(deps.compressors, to_string(hook_), Params{}, false)();
}

std::vector<Bucket> Ddp::buckets(const std::vector<Layer>& layers, Bytes /*budget*/) const {
  const Bytes limits[] = {first_bucket_, bucket_cap_};
  return make_buckets(layers, limits);
}

void Ddp::init(TrainState& s) {
  wires_.clear();
  powersgd_state_.clear();
  if (cast_)
    for (const Bucket& b : s.buckets)
      wires_.push_back(Buffer::like(s.grads, DType::kU8,
                                    static_cast<size_t>(cast_->encoded_bytes(b.count).count())));
  if (hook_ != DdpHook::kPowerSgd) return;
  if (s.grads.memory() == Memory::kDevice)
    throw ConfigError("ddp: comm_hook powersgd computes on host memory, not on a device");
  const std::vector<Layer>& layers = s.model.layers();
  for (const Bucket& b : s.buckets) {
    PowerSgdState st;
    for (int l : b.layers) {
      const PowerSgdLayer pl = powersgd_layer(layers[static_cast<size_t>(l)], l, powersgd_);
      st.layers.push_back(pl);
      if (pl.compressed) {
        st.factor_count += pl.side * pl.rank;
        st.matrices.push_back(Buffer::like(s.grads, DType::kF32, pl.side * pl.side));
        fill(st.matrices.back(), 0.0);
      } else {
        st.uncompressed_count += layers[static_cast<size_t>(l)].count;
      }
    }
    st.error = Buffer::like(s.grads, DType::kF32, b.count);
    fill(st.error, 0.0);
    st.input = Buffer::like(s.grads, DType::kF32, b.count);
    st.uncompressed = Buffer::like(s.grads, DType::kF32, st.uncompressed_count);
    st.p = Buffer::like(s.grads, DType::kF32, st.factor_count);
    st.q = Buffer::like(s.grads, DType::kF32, st.factor_count);
    powersgd_state_.push_back(std::move(st));
  }
}

void Ddp::allreduce_bucket(TrainState& s, const BufferView& grads, Tag tag) {
  // grad * (1 / div_factor_) into the bucket, then ncclAllReduce(sum) (reducer.cpp).
  Transport& world = s.ctx.transport();
  scale(grads, 1.0 / world.size());
  collectives::allreduce(world, grads, ReduceOp::kSum, tag, algo_, protocol_);
}

void Ddp::on_bucket_ready(TrainState& s, const Bucket& b) {
  s.comm.submit([this, &s, &b] {
    const BufferView grads = s.grads_of(b);
    const Tag tag = tags::bucket(tags::kGradient, b.index);
    TraceScope scope(s.ctx, "ddp bucket " + std::to_string(b.index), "comm", 1);
    switch (hook_) {
      case DdpHook::kNone:
        allreduce_bucket(s, grads, tag);
        return;
      case DdpHook::kFp16:
      case DdpHook::kBf16: {
        // buffer.div_(world).to(16 bits); allreduce (sum); decompress back into the bucket.
        const Buffer& wire = wires_[static_cast<size_t>(b.index)];
        Transport& world = s.ctx.transport();
        scale(grads, 1.0 / world.size());
        timed_encode(s.ctx.clock(), *cast_, grads, wire);
        collectives::allreduce(
            world, wire.view().reinterpret(hook_ == DdpHook::kFp16 ? DType::kF16 : DType::kBF16),
            ReduceOp::kSum, tag, algo_, protocol_);
        timed_decode(s.ctx.clock(), *cast_, wire, grads);
        return;
      }
      case DdpHook::kPowerSgd:
        if (s.step < powersgd_.start_iter)
          allreduce_bucket(s, grads, tag);  // vanilla allreduce first (_allreduce_fut)
        else
          powersgd(s, b, powersgd_state_[static_cast<size_t>(b.index)]);
        return;
    }
  });
}

void Ddp::powersgd(TrainState& s, const Bucket& b, PowerSgdState& st) {
  Transport& world = s.ctx.transport();
  Clock& clock = s.ctx.clock();
  const BufferView grads = s.grads_of(b);
  const bool data = !grads.is_meta();
  const std::vector<Layer>& layers = s.model.layers();
  auto layer_grads = [&](const PowerSgdLayer& l) {
    const Layer& layer = layers[static_cast<size_t>(l.layer)];
    return grads.slice(layer.offset - b.offset, layer.count);
  };

  // g := g + e; keep g + e to compute the new e.
  if (powersgd_.error_feedback) {
    axpy(grads, 1.0, st.error);
    copy(st.input, grads);
  }

  // Uncompressed layers: concatenated, allreduced (sum), divided by the world size, copied back.
  size_t at = 0;
  for (const PowerSgdLayer& l : st.layers)
    if (!l.compressed) {
      const BufferView g = layer_grads(l);
      copy(st.uncompressed.view().slice(at, g.count()), g);
      at += g.count();
    }
  collectives::allreduce(world, st.uncompressed, ReduceOp::kSum, tags::bucket(tags::kGradient, b.index),
                         algo_, protocol_);
  scale(st.uncompressed, 1.0 / world.size());
  at = 0;
  for (const PowerSgdLayer& l : st.layers)
    if (!l.compressed) {
      const BufferView g = layer_grads(l);
      copy(g, st.uncompressed.view().slice(at, g.count()));
      at += g.count();
    }

  // Each compressed layer's M, P and Q, as pointers into the bucket's buffers (host data only).
  struct Factors {
    const PowerSgdLayer* layer;
    float* m;
    float* p;
    float* q;
  };
  std::vector<Factors> factors;
  {
    size_t offset = 0;
    size_t index = 0;
    for (const PowerSgdLayer& l : st.layers) {
      if (!l.compressed) continue;
      Factors f{&l, nullptr, nullptr, nullptr};
      if (data) {
        f.m = st.matrices[index].as<float>().data();
        f.p = st.p.as<float>().data() + offset;
        f.q = st.q.as<float>().data() + offset;
        // M: the layer's gradient in the first count elements of the zero-padded square.
        const auto g = layer_grads(l).as<float>();
        std::copy(g.begin(), g.end(), f.m);
      }
      factors.push_back(f);
      offset += l.side * l.rank;
      ++index;
    }
  }
  const bool randomize = !powersgd_.warm_start || !st.has_q;
  const uint64_t seed = randomize ? rng_() : 0;

  // Q: drawn and orthogonalized, or (warm start) the previous Q orthogonalized.
  if (data) {
    std::mt19937_64 draw(seed);
    for (const Factors& f : factors) {
      const size_t n = f.layer->side * f.layer->rank;
      if (randomize)
        for (size_t i = 0; i < n; ++i)
          f.q[i] = normal(draw);
      orthogonalize(f.q, f.layer->side, f.layer->rank);
    }
  }
  st.has_q = true;

  // P := M Q.
  for (const Factors& f : factors) {
    clock.compute(product_cost(*f.layer));
    if (!data) continue;
    const size_t n = f.layer->side;
    const size_t r = f.layer->rank;
    for (size_t i = 0; i < n; ++i)
      for (size_t k = 0; k < r; ++k) {
        double sum = 0;
        for (size_t j = 0; j < n; ++j)
          sum += static_cast<double>(f.m[i * n + j]) * f.q[j * r + k];
        f.p[i * r + k] = static_cast<float>(sum);
      }
  }
  // allreduce P (sum: P is orthogonalized next, so it need not be divided).
  collectives::allreduce(world, st.p, ReduceOp::kSum, tags::bucket(tags::kCompressed, 2 * b.index),
                         algo_, protocol_);

  // orthogonalize P; Q := M^T P.
  for (const Factors& f : factors) {
    clock.compute(product_cost(*f.layer));
    if (!data) continue;
    const size_t n = f.layer->side;
    const size_t r = f.layer->rank;
    orthogonalize(f.p, n, r);
    for (size_t j = 0; j < n; ++j)
      for (size_t k = 0; k < r; ++k) {
        double sum = 0;
        for (size_t i = 0; i < n; ++i)
          sum += static_cast<double>(f.m[i * n + j]) * f.p[i * r + k];
        f.q[j * r + k] = static_cast<float>(sum);
      }
  }
  // allreduce Q (sum); Q := Q / world.
  collectives::allreduce(world, st.q, ReduceOp::kSum, tags::bucket(tags::kCompressed, 2 * b.index + 1),
                         algo_, protocol_);
  scale(st.q, 1.0 / world.size());

  // M := P Q^T, the layer's gradient its first count elements.
  for (const Factors& f : factors) {
    clock.compute(product_cost(*f.layer));
    if (!data) continue;
    const size_t n = f.layer->side;
    const size_t r = f.layer->rank;
    const auto g = layer_grads(*f.layer).as<float>();
    for (size_t e = 0; e < g.size(); ++e) {
      const size_t i = e / n;
      const size_t j = e % n;
      double sum = 0;
      for (size_t k = 0; k < r; ++k)
        sum += static_cast<double>(f.p[i * r + k]) * f.q[j * r + k];
      g[e] = static_cast<float>(sum);
    }
  }

  // e := (g + e) - decompressed, over the whole bucket (the uncompressed layers' error is their
  // local input minus the average, as PyTorch's input_tensor_cp - input_tensor).
  if (powersgd_.error_feedback) {
    copy(st.error, st.input);
    axpy(st.error, -1.0, grads);
  }
}

void Ddp::after_backward(TrainState& s) {
  s.comm.synchronize();
}

}  // namespace bagua
