// The config loader's and the topology builder's fuzz targets (config_fuzz.cc, topology_fuzz.cc) run in
// the default build, as tests of the default suite: one executable per target (each defines
// LLVMFuzzerTestOneInput), built with BAGUA_FUZZ_TARGET naming it (tests/CMakeLists.txt). Every seed of
// tests/fuzz/corpus/<target>/ runs through the target, and so does every seed cut short at a few
// lengths (JSON that ends mid-way: the loader's parse errors). A broken invariant aborts the test's
// process with the target's message; an exception other than a one-line ConfigError escapes and fails
// the test. The compressors' target has its own test (compress_replay_test.cc, at every
// instruction-set level).
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::filesystem::path corpus_dir() {
  return std::filesystem::path(BAGUA_SOURCE_DIR) / "tests" / "fuzz" / "corpus" / BAGUA_FUZZ_TARGET;
}

std::vector<uint8_t> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(FuzzSeeds, EverySeedPasses) {
  int seeds = 0;
  for (const auto& entry : std::filesystem::directory_iterator(corpus_dir())) {
    const std::vector<uint8_t> input = read_file(entry.path());
    SCOPED_TRACE(entry.path().filename().string());
    EXPECT_EQ(LLVMFuzzerTestOneInput(input.data(), input.size()), 0);
    ++seeds;
  }
  // config: one seed per shipped config family (11); topology: one per topology and cluster (13). A
  // missing folder or a lost seed fails here.
  EXPECT_GE(seeds, BAGUA_FUZZ_MIN_SEEDS);
}

TEST(FuzzSeeds, EverySeedCutShortPasses) {
  for (const auto& entry : std::filesystem::directory_iterator(corpus_dir())) {
    const std::vector<uint8_t> input = read_file(entry.path());
    for (const size_t size :
         {size_t{0}, size_t{1}, input.size() / 3, input.size() / 2, input.size() - 1}) {
      if (size > input.size()) continue;
      SCOPED_TRACE(entry.path().filename().string() + " cut at " + std::to_string(size));
      EXPECT_EQ(LLVMFuzzerTestOneInput(input.data(), size), 0);
    }
  }
}

}  // namespace
