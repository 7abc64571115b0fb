#include "core/compress/compressor.h"

#include <map>

#include "core/compress/cast.h"
#include "core/compress/common.h"
#include "core/compress/identity.h"
#include "core/compress/minmax_uint8.h"
#include "core/compress/qsgd.h"
#include "core/compress/randomk.h"
#include "core/compress/sign.h"
#include "core/compress/topk.h"

namespace bagua {

Work Compressor::encode_cost(size_t n) const {
  return Work{static_cast<double>(n), Bytes(static_cast<int64_t>(4 * n)) + encoded_bytes(n), {}};
}
Work Compressor::decode_cost(size_t n) const {
  return encode_cost(n);
}

void timed_encode(Clock& clock, Compressor& c, const BufferView& in, const BufferView& out) {
  clock.compute(c.encode_cost(in.count()));
  c.encode(in, out);
}

void timed_decode(Clock& clock, Compressor& c, const BufferView& in, const BufferView& out) {
  clock.compute(c.decode_cost(out.count()));
  c.decode(in, out);
}

namespace compress_detail {

bool check_encode(const Compressor& c, const BufferView& in, const BufferView& out) {
  BAGUA_CHECK(in.dtype() == DType::kF32,
              c.name() + " encode: input is " + to_string(in.dtype()) + ", expected f32");
  BAGUA_CHECK(out.dtype() == DType::kU8,
              c.name() + " encode: output is " + to_string(out.dtype()) + ", expected u8");
  BAGUA_CHECK_EQ(static_cast<int64_t>(out.count()), c.encoded_bytes(in.count()).count(),
                 c.name() + " encode of " + std::to_string(in.count()) + " elements: output bytes");
  return !in.is_meta() && !out.is_meta() && in.count() > 0;
}

bool check_decode(const Compressor& c, const BufferView& in, const BufferView& out) {
  BAGUA_CHECK(in.dtype() == DType::kU8,
              c.name() + " decode: input is " + to_string(in.dtype()) + ", expected u8");
  BAGUA_CHECK(out.dtype() == DType::kF32,
              c.name() + " decode: output is " + to_string(out.dtype()) + ", expected f32");
  BAGUA_CHECK_EQ(static_cast<int64_t>(in.count()), c.encoded_bytes(out.count()).count(),
                 c.name() + " decode of " + std::to_string(out.count()) + " elements: input bytes");
  return !in.is_meta() && !out.is_meta() && out.count() > 0;
}

const DeviceKernels& device_kernels(const Compressor& c, const BufferView& a, const BufferView& b) {
  const Space& space = a.memory() == Memory::kDevice ? a.space() : b.space();
  const DeviceKernels* kernels = space.kernels();
  if (!kernels)
    throw ConfigError("compressor " + c.name() + ": device space '" + space.name() +
                      "' has no compressor kernels");
  return *kernels;
}

void no_device_kernel(const Compressor& c) {
  throw ConfigError("compressor " + c.name() + " has no device kernel");
}

}  // namespace compress_detail

namespace {

size_t chunk_param(const Params& p) {
  return static_cast<size_t>(p.get_int("chunk_size"));
}
uint64_t seed_param(const Params& p) {
  return static_cast<uint64_t>(p.get_int("seed"));
}

// 0.01: keep 1% of the elements, the density of Aji & Heafield (EMNLP 2017), who drop the 99% smallest
// gradient updates.
constexpr double kDefaultRatio = 0.01;
// 0: an arbitrary fixed seed; experiments that sweep randomness set their own.
constexpr int64_t kDefaultSeed = 0;
// 7 levels (4 bits per element with the sign) in buckets of 512 elements: the 4-bit QSGD configuration
// of Alistarh et al., NeurIPS 2017, section 5.
constexpr int64_t kQsgdLevels = 7;
constexpr int64_t kQsgdBucket = 512;

}  // namespace

void register_compressors(CompressorRegistry& registry) {
  registry.add("identity", "raw float32, 4 bytes per element (the lossless baseline)", ParamSchema{},
               [](const Params&) { return std::make_unique<IdentityCompressor>(); });

  registry.add("minmax_uint8",
               "Bagua's MinMax uint8 (ByteGrad): per-chunk min/max header, one byte per element",
               ParamSchema{}.add_int(
                   "chunk_size", 0,
                   "elements per chunk (own min and max); 0 = one chunk for the whole buffer, as "
                   "Bagua does for each rank's slice",
                   0),
               [](const Params& p) { return std::make_unique<MinMaxUint8Compressor>(chunk_param(p)); });

  registry.add("sign", "1-bit sign with a per-chunk scale, the mean of |x|",
               ParamSchema{}.add_int("chunk_size", 0,
                                     "elements per scale; 0 = one scale for the whole buffer", 0),
               [](const Params& p) { return std::make_unique<SignCompressor>(chunk_param(p)); });

  registry.add(
      "topk", "the ceil(ratio n) largest magnitudes, with int32 indices",
      ParamSchema{}.add_double("ratio", kDefaultRatio, "fraction of elements kept", 0.0, 1.0, true),
      [](const Params& p) { return std::make_unique<TopKCompressor>(p.get_double("ratio")); });

  registry.add(
      "randomk", "ceil(ratio n) elements at random indices drawn from (seed, step), same on all ranks",
      ParamSchema{}
          .add_double("ratio", kDefaultRatio, "fraction of elements kept", 0.0, 1.0, true)
          .add_int("seed", kDefaultSeed, "seed of the index draws, shared by all ranks", 0)
          .add_bool("unbiased", false, "scale the decoded values by n / k (an unbiased estimate)"),
      [](const Params& p) {
        return std::make_unique<RandomKCompressor>(p.get_double("ratio"), seed_param(p),
                                                   p.get_bool("unbiased"));
      });

  registry.add("fp16", "IEEE half precision, round to nearest even", ParamSchema{},
               [](const Params&) { return std::make_unique<Fp16Compressor>(); });

  registry.add("bf16", "bfloat16, round to nearest even", ParamSchema{},
               [](const Params&) { return std::make_unique<Bf16Compressor>(); });

  registry.add(
      "qsgd",
      "QSGD: stochastic rounding to s levels of the per-chunk L2 norm, sign and level bit-packed",
      ParamSchema{}
          .add_int("levels", kQsgdLevels, "quantization levels s (bits per element: bit_width(s) + 1)",
                   1, QsgdCompressor::kMaxLevels)
          .add_int("chunk_size", kQsgdBucket,
                   "elements per norm (QSGD's bucket); 0 = one norm for the whole buffer", 0)
          .add_int("seed", kDefaultSeed, "seed of the stochastic rounding", 0),
      [](const Params& p) {
        return std::make_unique<QsgdCompressor>(p.get_int("levels"), chunk_param(p), seed_param(p));
      });
}

CompressorFactory compressor_factory(const CompressorRegistry& registry, const std::string& name,
                                     const Params& params, bool error_feedback) {
  const CompressorRegistry::Entry& entry = registry.at(name);
  std::map<std::string, ParamValue> own;
  for (const auto& [key, value] : params.values()) {
    if (!entry.schema.find(key)) continue;  // someone else's parameter (the algorithm's)
    if (auto error = entry.schema.validate(key, value))
      throw ConfigError("compressor '" + name + "': parameter '" + key + "': " + *error);
    own[key] = value;
  }
  const Params resolved(entry.schema, own);
  CompressorRegistry::Factory make = entry.factory;
  make(resolved);  // construct once now, so that a bad configuration fails here rather than mid-run
  return [make, resolved, error_feedback]() {
    std::unique_ptr<Compressor> c = make(resolved);
    return error_feedback ? make_error_feedback(std::move(c)) : std::move(c);
  };
}

}  // namespace bagua
