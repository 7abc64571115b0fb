// Helpers of the NCCL test program. main.cc initializes MPI and, when every process sees a CUDA device,
// creates the NcclWorld; otherwise every test skips (NcclTest's SetUp). Every rank runs every test, in
// the same order, so a test body is the code of one rank: it must not return early on one rank only
// (the others would wait for it forever) — compare whole buffers with first_mismatch and EXPECT.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "core/buffer.h"
#include "core/ops.h"
#include "runtime/nccl/space.h"
#include "runtime/nccl/transport.h"
#include "runtime/nccl/world.h"
#include "tests/runtime/mpi/every_rank.h"

namespace bagua::testing {

inline constexpr const char* kNoDeviceMessage = "no CUDA device: NCCL tests skipped";
inline constexpr const char* kSharedDeviceMessage =
    "fewer CUDA devices than ranks on a node (NCCL needs one per rank): NCCL tests skipped";

// The world, or null when the job has no CUDA device.
runtime::nccl::NcclWorld* nccl_world();

class NcclTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!nccl_world())
      GTEST_SKIP() << "no NCCL world (see the first line of output): NCCL tests skipped";
  }
  runtime::nccl::NcclWorld& world() { return *nccl_world(); }
  RankContext& context() { return nccl_world()->context(); }
  const Space& device() { return nccl_world()->context().space(); }

  // A device buffer holding `values`.
  template <class T>
  Buffer on_device(const std::vector<T>& values) {
    Buffer d(device(), dtype_of<T>(), values.size());
    copy(d, BufferView::of(std::span<const T>(values)));
    return d;
  }
};

// The elements of a (device, host) view, copied to the host.
template <class T>
std::vector<T> on_host(const BufferView& v) {
  std::vector<T> out(v.count());
  copy(BufferView::of(std::span<T>(out)), v);
  return out;
}

// "" when the two byte ranges are equal, else the first differing byte offset and both bytes.
std::string first_byte_difference(std::span<const std::byte> got, std::span<const std::byte> expected);
template <class T>
std::string first_byte_difference(const std::vector<T>& got, const std::vector<T>& expected) {
  if (got.size() != expected.size())
    return "sizes differ: " + std::to_string(got.size()) + " vs " + std::to_string(expected.size());
  return first_byte_difference(std::as_bytes(std::span<const T>(got)),
                               std::as_bytes(std::span<const T>(expected)));
}

// "" when got and expected hold the same values bit for bit (so -0 differs from +0), any NaN matching
// any NaN: the payload of a NaN made by arithmetic is the processor's choice (x86 and CUDA differ).
template <class T>
std::string first_value_difference(const std::vector<T>& got, const std::vector<T>& expected) {
  if (got.size() != expected.size())
    return "sizes differ: " + std::to_string(got.size()) + " vs " + std::to_string(expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    bool same = std::memcmp(&got[i], &expected[i], sizeof(T)) == 0;
    if constexpr (std::is_floating_point_v<T>)
      same = same || (std::isnan(got[i]) && std::isnan(expected[i]));
    if (!same) {
      std::ostringstream os;
      os.precision(17);
      os << "index " << i << " of " << got.size() << ": got " << +got[i] << ", expected "
         << +expected[i];
      return os.str();
    }
  }
  return "";
}

// A deterministic stream of numbers for test data (SplitMix64).
class TestRng {
 public:
  explicit TestRng(uint64_t seed) : state_(seed) {}
  uint64_t next();
  // Uniform in [lo, hi).
  double uniform(double lo, double hi);

 private:
  uint64_t state_;
};

}  // namespace bagua::testing
