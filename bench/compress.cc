// Encode and decode throughput of every registered compressor (default parameters), and of error
// feedback around sign, minmax_uint8 and topk, on host buffers of 1 MiB and 64 MiB of float32, beside
// a memcpy of the same float32 bytes (the single-core memory speed they are compared with). Throughput
// is reported over the float32 bytes (bytes_per_second), so that encode, decode and memcpy read on the
// same scale. Times are CPU times (the machines are shared); every buffer is written once before the
// timed loop, so that no page fault is timed. scripts/bench prints the ratios to memcpy.
//
//   bench_compress --benchmark_filter=minmax
//   bench_compress --isa=avx2     the kernels of that instruction-set level (baseline, avx2, avx512; at
//                                 most the CPU's), as the tests lower it: what a machine without the
//                                 higher levels gets (the multiversioned loops still follow the CPU)
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/compress/compressor.h"
#include "core/compress/kernels.h"

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

constexpr const char* kErrorFeedbackPrefix = "error_feedback(";
// Error feedback around these (the compressors it is used with: 1-bit SGD, ByteGrad, sparsification).
const char* const kErrorFeedbackInner[] = {"sign", "minmax_uint8", "topk"};

// `name` is a registered compressor or error_feedback(<registered>).
std::unique_ptr<Compressor> make(const std::string& name) {
  const std::string prefix = kErrorFeedbackPrefix;
  if (name.rfind(prefix, 0) == 0)
    return bagua::make_error_feedback(
        make(name.substr(prefix.size(), name.size() - prefix.size() - 1)));
  return registry().create(name, bagua::Params(registry().at(name).schema));
}

void bench_memcpy(benchmark::State& state, size_t bytes) {
  const Buffer in = make_input(bytes / 4);
  const Buffer out = Buffer::host(DType::kF32, bytes / 4);
  std::memcpy(out.view().data(), in.view().data(), bytes);
  for (auto _ : state) {
    std::memcpy(out.view().data(), in.view().data(), bytes);
    benchmark::DoNotOptimize(out.view().data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
}

void bench_encode(benchmark::State& state, const std::string& name, size_t bytes) {
  const size_t n = bytes / 4;
  auto c = make(name);
  const Buffer in = make_input(n);
  const Buffer out = Buffer::host(DType::kU8, static_cast<size_t>(c->encoded_bytes(n).count()));
  c->encode(in, out);  // touches the output (and sizes error feedback's residual)
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
  c->decode(encoded, out);
  for (auto _ : state) {
    c->decode(encoded, out);
    benchmark::DoNotOptimize(out.view().data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
}

const int kRegistered = [] {
  std::vector<std::string> names;
  for (const auto* entry : registry().entries())
    names.push_back(entry->name);
  for (const char* inner : kErrorFeedbackInner)
    names.push_back(std::string(kErrorFeedbackPrefix) + inner + ")");
  for (size_t bytes : kSizesBytes) {
    const std::string size = std::to_string(bytes >> 20) + "MiB";
    benchmark::RegisterBenchmark(("memcpy/" + size).c_str(), bench_memcpy, bytes)
        ->Unit(benchmark::kMillisecond);
    for (const std::string& name : names) {
      benchmark::RegisterBenchmark(("encode/" + name + "/" + size).c_str(), bench_encode, name, bytes)
          ->Unit(benchmark::kMillisecond);
      // Error feedback's decode is its inner compressor's.
      if (name.rfind(kErrorFeedbackPrefix, 0) != 0)
        benchmark::RegisterBenchmark(("decode/" + name + "/" + size).c_str(), bench_decode, name, bytes)
            ->Unit(benchmark::kMillisecond);
    }
  }
  return 0;
}();

}  // namespace

int main(int argc, char** argv) {
  namespace kernels = bagua::compress_kernels;
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--isa=", 0) != 0) {
      rest.push_back(argv[i]);
      continue;
    }
    const std::string wanted = arg.substr(6);
    bool known = false;
    for (const kernels::Isa level :
         {kernels::Isa::kBaseline, kernels::Isa::kAvx2, kernels::Isa::kAvx512}) {
      if (kernels::to_string(level) != wanted) continue;
      known = true;
      if (kernels::limit_isa(level) != level) {
        std::fprintf(stderr, "bench_compress: --isa=%s: this CPU runs at most %s\n", wanted.c_str(),
                     kernels::to_string(kernels::cpu_isa()).c_str());
        return 2;
      }
    }
    if (!known) {
      std::fprintf(stderr, "bench_compress: --isa=%s: expected baseline, avx2 or avx512\n",
                   wanted.c_str());
      return 2;
    }
  }
  int count = static_cast<int>(rest.size());
  benchmark::Initialize(&count, rest.data());
  if (benchmark::ReportUnrecognizedArguments(count, rest.data())) return 1;
  benchmark::AddCustomContext("isa", kernels::to_string(kernels::isa()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
