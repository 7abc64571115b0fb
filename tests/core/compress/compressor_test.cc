#include "core/compress/compressor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "core/compress/cast.h"
#include "core/compress/error_feedback.h"
#include "core/compress/identity.h"
#include "core/compress/minmax_uint8.h"
#include "core/compress/qsgd.h"
#include "core/compress/randomk.h"
#include "core/compress/sign.h"
#include "core/compress/topk.h"
#include "core/device_kernels.h"
#include "tests/core/compress/compress_test_util.h"

namespace bagua {
namespace {

using testing::round_trip;
using testing::uniform_values;

const std::vector<std::string> kNames = {"identity", "minmax_uint8", "sign", "topk",
                                         "randomk",  "fp16",         "bf16", "qsgd"};

CompressorRegistry make_registry() {
  CompressorRegistry r("compressor");
  register_compressors(r);
  return r;
}

size_t div_up(size_t a, size_t b) {
  return (a + b - 1) / b;
}

TEST(CompressorRegistry, RegistersEveryNameWithItsParameters) {
  const CompressorRegistry r = make_registry();
  EXPECT_EQ(r.entries().size(), kNames.size());
  for (const std::string& name : kNames) {
    const auto* e = r.find(name);
    ASSERT_NE(e, nullptr) << name;
    EXPECT_FALSE(e->description.empty()) << name;
    EXPECT_EQ(r.create(name, Params(e->schema))->name(), name);
  }
  EXPECT_NE(r.at("minmax_uint8").schema.find("chunk_size"), nullptr);
  EXPECT_NE(r.at("sign").schema.find("chunk_size"), nullptr);
  EXPECT_NE(r.at("topk").schema.find("ratio"), nullptr);
  EXPECT_NE(r.at("randomk").schema.find("seed"), nullptr);
  EXPECT_NE(r.at("qsgd").schema.find("levels"), nullptr);
  EXPECT_NE(r.at("qsgd").schema.find("seed"), nullptr);
}

TEST(CompressorFactory, PicksItsOwnParametersAndWrapsErrorFeedback) {
  const CompressorRegistry r = make_registry();
  Params p;
  p.set("ratio", 0.25);
  p.set("learning_rate", 0.1);  // an algorithm's parameter: ignored
  CompressorFactory f = compressor_factory(r, "topk", p, false);
  auto a = f();
  auto b = f();
  EXPECT_NE(a.get(), b.get());  // a fresh instance per site
  EXPECT_EQ(a->name(), "topk");
  EXPECT_EQ(a->encoded_bytes(100).count(), 8 * 25);
  auto ef = compressor_factory(r, "sign", Params{}, true)();
  EXPECT_EQ(ef->name(), "error_feedback(sign)");
  EXPECT_NE(dynamic_cast<ErrorFeedbackCompressor*>(ef.get()), nullptr);
  // Defaults fill what is not given: qsgd's 7 levels (4 bits) in chunks of 512.
  EXPECT_EQ(compressor_factory(r, "qsgd", Params{}, false)()->encoded_bytes(1024).count(), 4 * 2 + 512);
}

TEST(CompressorFactory, RejectsBadNamesAndValues) {
  const CompressorRegistry r = make_registry();
  EXPECT_THROW(compressor_factory(r, "nope", Params{}, false), ConfigError);
  Params bad;
  bad.set("ratio", 1.5);
  try {
    compressor_factory(r, "topk", bad, false);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("ratio"), std::string::npos) << e.what();
  }
  Params wrong_type;
  wrong_type.set("chunk_size", std::string("big"));
  EXPECT_THROW(compressor_factory(r, "minmax_uint8", wrong_type, false), ConfigError);
}

// Exact sizes for n in {0, 1, 7, chunk - 1, chunk, chunk + 1, 10^6}, from each layout's closed form,
// and an encode/decode of each size to show that views of exactly that size are accepted.
TEST(Compressor, ExactEncodedSizes) {
  const size_t chunk = 1000;
  auto k = [](size_t n) { return div_up(n, 10); };  // ceil(0.1 n)
  auto minmax = [&](size_t n) {
    // A record per chunk: 32-byte header plus the chunk's bytes padded to 32.
    const size_t full = n / chunk, rest = n % chunk;
    return full * (32 + div_up(chunk, 32) * 32) + (rest ? 32 + div_up(rest, 32) * 32 : 0);
  };
  struct Sized {
    std::unique_ptr<Compressor> c;
    std::function<size_t(size_t)> bytes;
  };
  std::vector<Sized> all;
  all.push_back({std::make_unique<IdentityCompressor>(), [](size_t n) { return 4 * n; }});
  all.push_back({std::make_unique<MinMaxUint8Compressor>(chunk), minmax});
  all.push_back({std::make_unique<MinMaxUint8Compressor>(0),
                 [](size_t n) { return n ? 32 + div_up(n, 32) * 32 : 0; }});
  all.push_back({std::make_unique<SignCompressor>(chunk),
                 [&](size_t n) { return 4 * div_up(n, chunk) + div_up(n, 8); }});
  all.push_back(
      {std::make_unique<SignCompressor>(0), [](size_t n) { return (n ? 4 : 0) + div_up(n, 8); }});
  all.push_back({std::make_unique<TopKCompressor>(0.1), [&](size_t n) { return 8 * k(n); }});
  all.push_back(
      {std::make_unique<RandomKCompressor>(0.1, 1), [&](size_t n) { return n ? 8 + 4 * k(n) : 0; }});
  all.push_back({std::make_unique<Fp16Compressor>(), [](size_t n) { return 2 * n; }});
  all.push_back({std::make_unique<Bf16Compressor>(), [](size_t n) { return 2 * n; }});
  all.push_back({std::make_unique<QsgdCompressor>(7, chunk, 1),  // 4 bits per element
                 [&](size_t n) { return 4 * div_up(n, chunk) + div_up(4 * n, 8); }});
  all.push_back({std::make_unique<QsgdCompressor>(1, chunk, 1),  // 2 bits per element
                 [&](size_t n) { return 4 * div_up(n, chunk) + div_up(2 * n, 8); }});
  all.push_back({std::make_unique<QsgdCompressor>(200, 0, 1),  // 9 bits per element
                 [&](size_t n) { return (n ? 4 : 0) + div_up(9 * n, 8); }});
  all.push_back({make_error_feedback(std::make_unique<SignCompressor>(chunk)),
                 [&](size_t n) { return 4 * div_up(n, chunk) + div_up(n, 8); }});
  for (Sized& s : all) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{7}, chunk - 1, chunk, chunk + 1, size_t{1000000}}) {
      ASSERT_EQ(s.c->encoded_bytes(n).count(), static_cast<int64_t>(s.bytes(n)))
          << s.c->name() << " n " << n;
      // Error feedback keeps one buffer size per instance: exercise it on a fresh wrapper per size.
      std::unique_ptr<Compressor> fresh;
      Compressor* c = s.c.get();
      if (dynamic_cast<ErrorFeedbackCompressor*>(c)) {
        fresh = make_error_feedback(std::make_unique<SignCompressor>(chunk));
        c = fresh.get();
      }
      const std::vector<float> x = uniform_values(n, -1, 1, 61);
      const std::vector<float> y = round_trip(*c, x);
      ASSERT_EQ(y.size(), n);
      for (size_t i = 0; i < n; ++i)
        ASSERT_TRUE(std::isfinite(y[i])) << c->name() << " n " << n << " at " << i;
    }
  }
}

// On meta buffers encode and decode touch nothing, and still check sizes.
TEST(Compressor, MetaBuffersAreNoOpsWithSizesChecked) {
  const CompressorRegistry r = make_registry();
  for (const std::string& name : kNames) {
    auto c = r.create(name, Params(r.at(name).schema));
    const size_t n = 123456789;  // 470 MiB of floats, never allocated
    const Buffer in = Buffer::meta(DType::kF32, n);
    const Buffer out = Buffer::meta(DType::kU8, static_cast<size_t>(c->encoded_bytes(n).count()));
    c->encode(in, out);
    c->decode(out, in);
    const Buffer wrong = Buffer::meta(DType::kU8, out.count() + 1);
    EXPECT_THROW(c->encode(in, wrong), InternalError) << name;
    EXPECT_THROW(c->decode(wrong, in), InternalError) << name;
    const Buffer not_f32 = Buffer::meta(DType::kF64, n);
    EXPECT_THROW(c->encode(not_f32, out), InternalError) << name;
  }
}

// Costs: memory traffic and flops from each compressor's model, worked out for n = 1000.
TEST(Compressor, ModelledCosts) {
  // minmax, one chunk: three reads of 4000 bytes (min, max, quantize) + 32 + 1024 bytes written; 6
  // flops.
  const Work mm = MinMaxUint8Compressor(0).encode_cost(1000);
  EXPECT_EQ(mm.memory.count(), 12000 + 1056);
  EXPECT_EQ(mm.flops, 6000);
  EXPECT_EQ(MinMaxUint8Compressor(0).decode_cost(1000).memory.count(), 4000 + 1056);
  // fp16: 4000 read + 2000 written.
  EXPECT_EQ(Fp16Compressor().encode_cost(1000).memory.count(), 6000);
  // identity: a copy.
  EXPECT_EQ(IdentityCompressor().decode_cost(1000).memory.count(), 8000);
  // error feedback: inner encode + inner decode + two passes of 12 bytes per element.
  auto ef = make_error_feedback(std::make_unique<Fp16Compressor>());
  EXPECT_EQ(ef->encode_cost(1000).memory.count(), 6000 + 6000 + 24000);
  EXPECT_EQ(ef->decode_cost(1000).memory.count(), 6000);
  // Costs scale with n and are charged for meta sizes alike.
  const CompressorRegistry r = make_registry();
  for (const std::string& name : kNames) {
    auto c = r.create(name, Params(r.at(name).schema));
    EXPECT_GT(c->encode_cost(1 << 20).memory.count(), c->encode_cost(1 << 10).memory.count()) << name;
    EXPECT_GE(c->encode_cost(1 << 20).memory.count(), c->encoded_bytes(1 << 20).count()) << name;
  }
}

// A device space with fake kernels: the compressors that have a device kernel call it (with the
// layout's chunk size); the others refuse with ConfigError naming themselves.
struct FakeKernels final : DeviceKernels {
  mutable std::vector<std::string> calls;
  void minmax_u8_encode(const BufferView&, const BufferView&, size_t chunk) const override {
    calls.push_back("minmax_u8_encode " + std::to_string(chunk));
  }
  void minmax_u8_decode(const BufferView&, const BufferView&, size_t chunk) const override {
    calls.push_back("minmax_u8_decode " + std::to_string(chunk));
  }
  void sign_encode(const BufferView&, const BufferView&, size_t chunk) const override {
    calls.push_back("sign_encode " + std::to_string(chunk));
  }
  void sign_decode(const BufferView&, const BufferView&, size_t chunk) const override {
    calls.push_back("sign_decode " + std::to_string(chunk));
  }
  void f32_to_f16(const BufferView& in, const BufferView& out) const override {
    calls.push_back("f32_to_f16 " + to_string(out.dtype()) + " " + std::to_string(out.count()));
  }
  void f16_to_f32(const BufferView& in, const BufferView& out) const override {
    calls.push_back("f16_to_f32 " + to_string(in.dtype()) + " " + std::to_string(in.count()));
  }
};

// Device memory stood in for by host memory; only memory() and kernels() matter here.
class FakeDeviceSpace final : public Space {
 public:
  Memory memory() const override { return Memory::kDevice; }
  std::string name() const override { return "fake_device"; }
  void* allocate(size_t bytes) const override { return host_space().allocate(bytes); }
  void deallocate(void* p) const override { host_space().deallocate(p); }
  void copy(const BufferView&, const BufferView&) const override { ++copies; }
  void reduce(const BufferView&, const BufferView&, ReduceOp) const override {}
  void scale(const BufferView&, double) const override {}
  void axpy(const BufferView&, double, const BufferView&) const override {}
  void fill(const BufferView&, double) const override {}
  const DeviceKernels* kernels() const override { return &fake; }
  FakeKernels fake;
  mutable int copies = 0;
};

TEST(Compressor, DeviceBuffersUseDeviceKernels) {
  FakeDeviceSpace device;
  const size_t n = 100;
  auto run = [&](Compressor& c) {
    const Buffer in(device, DType::kF32, n);
    const Buffer out(device, DType::kU8, static_cast<size_t>(c.encoded_bytes(n).count()));
    c.encode(in, out);
    c.decode(out, in);
  };
  MinMaxUint8Compressor minmax(0);
  run(minmax);
  SignCompressor sign(64);
  run(sign);
  Fp16Compressor fp16;
  run(fp16);
  EXPECT_EQ(device.fake.calls,
            (std::vector<std::string>{"minmax_u8_encode 100", "minmax_u8_decode 100", "sign_encode 64",
                                      "sign_decode 64", "f32_to_f16 f16 100", "f16_to_f32 f16 100"}));
  IdentityCompressor identity;
  run(identity);
  EXPECT_EQ(device.copies, 2);  // through the space, no kernel needed

  const CompressorRegistry r = make_registry();
  for (const std::string name : {"topk", "randomk", "bf16", "qsgd"}) {
    auto c = r.create(name, Params(r.at(name).schema));
    try {
      run(*c);
      ADD_FAILURE() << name << " ran on a device buffer";
    } catch (const ConfigError& e) {
      EXPECT_EQ(std::string(e.what()), "compressor " + name + " has no device kernel");
    }
  }
}

}  // namespace
}  // namespace bagua
