// The compressors' fuzz target (tests/fuzz/compress_fuzz.cc) run in the default build, as a test of
// the default suite: on every seed of tests/fuzz/corpus/compress and on random inputs. The fuzz preset
// builds with clang, where the compressors have only their baseline kernels; this build (GCC) has
// every instruction-set level the CPU runs (baseline, AVX2, AVX-512), and the target checks each of
// them against the scalar reference. A broken invariant aborts the test's process with the target's
// message naming the compressor, its configuration, the step, the level and the element.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::filesystem::path corpus_dir() {
  const char* source = std::getenv("BAGUA_SOURCE_DIR");
  return std::filesystem::path(source ? source : ".") / "tests" / "fuzz" / "corpus" / "compress";
}

TEST(CompressFuzz, EverySeedPassesAtEveryLevel) {
  int seeds = 0;
  for (const auto& entry : std::filesystem::directory_iterator(corpus_dir())) {
    std::ifstream in(entry.path(), std::ios::binary);
    const std::vector<uint8_t> input((std::istreambuf_iterator<char>(in)),
                                     std::istreambuf_iterator<char>());
    SCOPED_TRACE(entry.path().filename().string());
    EXPECT_EQ(LLVMFuzzerTestOneInput(input.data(), input.size()), 0);
    ++seeds;
  }
  // One seed per compressor and shape (32), error feedback around each (8), QSGD's levels (10), and
  // the rejected configurations: a missing folder or a lost seed fails here.
  EXPECT_GE(seeds, 50);
}

// Inputs no seed has: each compressor in turn, every flag and shape, lengths around the vector widths
// and the chunk sizes, values of random bits (NaNs, infinities, subnormals of either sign).
TEST(CompressFuzz, RandomInputsPassAtEveryLevel) {
  std::mt19937 gen(20261201);
  for (int i = 0; i < 400; ++i) {
    const size_t n = i % 5 == 0 ? gen() % 1300 : gen() % 70;
    std::vector<uint8_t> input(16 + 4 * n);
    for (uint8_t& b : input)
      b = static_cast<uint8_t>(gen());
    input[0] = static_cast<uint8_t>(i % 8);
    input[7] &= 0x7F;  // p's top bit clear: chunk sizes below 1024, ratios below 1
    input[10] = 0;     // QSGD's levels below 65536
    EXPECT_EQ(LLVMFuzzerTestOneInput(input.data(), input.size()), 0) << "input " << i;
  }
}

}  // namespace
