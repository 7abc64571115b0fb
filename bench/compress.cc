// Encode and decode throughput of every registered compressor (default parameters), on host buffers of
// 1 MiB and 64 MiB of float32. Throughput is reported over the float32 bytes (bytes_per_second), so
// that encode and decode of one compressor read on the same scale.
//
//   bench_compress --benchmark_filter=minmax
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/compress/compressor.h"

namespace {

using bagua::Buffer;
using bagua::Compressor;
using bagua::CompressorRegistry;
using bagua::DType;

constexpr size_t kSizesBytes[] = {size_t{1} << 20, size_t{64} << 20};

const CompressorRegistry& registry() {
  static const CompressorRegistry r = [] {
    CompressorRegistry reg("compressor");
    bagua::register_compressors(reg);
    return reg;
  }();
  return r;
}

// Inputs like gradients: normal values, a fixed seed.
Buffer make_input(size_t n) {
  Buffer in = Buffer::host(DType::kF32, n);
  std::mt19937 gen(1);
  std::normal_distribution<float> dist(0.0f, 1e-2f);
  for (float& v : in.as<float>())
    v = dist(gen);
  return in;
}

std::unique_ptr<Compressor> make(const std::string& name) {
  return registry().create(name, bagua::Params(registry().at(name).schema));
}

void bench_encode(benchmark::State& state, const std::string& name, size_t bytes) {
  const size_t n = bytes / 4;
  auto c = make(name);
  const Buffer in = make_input(n);
  const Buffer out = Buffer::host(DType::kU8, static_cast<size_t>(c->encoded_bytes(n).count()));
  for (auto _ : state) {
    c->encode(in, out);
    benchmark::DoNotOptimize(out.view().data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
  state.counters["ratio"] =
      static_cast<double>(bytes) / static_cast<double>(c->encoded_bytes(n).count());
}

void bench_decode(benchmark::State& state, const std::string& name, size_t bytes) {
  const size_t n = bytes / 4;
  auto c = make(name);
  const Buffer in = make_input(n);
  const Buffer encoded = Buffer::host(DType::kU8, static_cast<size_t>(c->encoded_bytes(n).count()));
  c->encode(in, encoded);
  const Buffer out = Buffer::host(DType::kF32, n);
  for (auto _ : state) {
    c->decode(encoded, out);
    benchmark::DoNotOptimize(out.view().data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
}

const int kRegistered = [] {
  for (const auto* entry : registry().entries()) {
    for (size_t bytes : kSizesBytes) {
      const std::string size = std::to_string(bytes >> 20) + "MiB";
      benchmark::RegisterBenchmark(("encode/" + entry->name + "/" + size).c_str(), bench_encode,
                                   entry->name, bytes)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
      benchmark::RegisterBenchmark(("decode/" + entry->name + "/" + size).c_str(), bench_decode,
                                   entry->name, bytes)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
  }
  return 0;
}();

}  // namespace

BENCHMARK_MAIN();
