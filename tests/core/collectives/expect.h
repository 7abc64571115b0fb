// Helpers shared by the collectives tests: contributions with closed-form reductions, and a check that
// reports the first mismatching index.
//
// Rank r of P contributes x_r[i] = ((r + i) mod P) * 1000 + i. Over all ranks, for every i:
//   sum = 1000 P (P - 1) / 2 + P i,   min = i,   max = 1000 (P - 1) + i,
// every partial sum an integer below 2^24 for the sizes tested (P i <= 8 * 2^20 + 3), so float sums are
// exact in any order.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <sstream>
#include <string>

#include "core/buffer.h"
#include "tests/support/worlds.h"

namespace bagua::testing {

inline double contribution(int rank, int ranks, size_t i) {
  return static_cast<double>(((static_cast<size_t>(rank) + i) % static_cast<size_t>(ranks)) * 1000 + i);
}

inline double reduced(ReduceOp op, int ranks, size_t i) {
  const double p = ranks;
  switch (op) {
    case ReduceOp::kSum:
      return 1000.0 * p * (p - 1) / 2 + p * static_cast<double>(i);
    case ReduceOp::kMin:
      return static_cast<double>(i);
    case ReduceOp::kMax:
      return 1000.0 * (p - 1) + static_cast<double>(i);
  }
  return 0;
}

// Reads element i of a host buffer of any tested dtype as a double.
inline double element(const BufferView& data, size_t i) {
  switch (data.dtype()) {
    case DType::kF32:
      return data.as<float>()[i];
    case DType::kF64:
      return data.as<double>()[i];
    case DType::kI32:
      return data.as<int32_t>()[i];
    case DType::kI64:
      return static_cast<double>(data.as<int64_t>()[i]);
    default:
      ADD_FAILURE() << "untested dtype " << to_string(data.dtype());
      return 0;
  }
}

inline void set_element(const BufferView& data, size_t i, double v) {
  switch (data.dtype()) {
    case DType::kF32:
      data.as<float>()[i] = static_cast<float>(v);
      break;
    case DType::kF64:
      data.as<double>()[i] = v;
      break;
    case DType::kI32:
      data.as<int32_t>()[i] = static_cast<int32_t>(v);
      break;
    case DType::kI64:
      data.as<int64_t>()[i] = static_cast<int64_t>(v);
      break;
    default:
      ADD_FAILURE() << "untested dtype " << to_string(data.dtype());
  }
}

inline void fill_contribution(const BufferView& data, int rank, int ranks) {
  for (size_t i = 0; i < data.count(); ++i)
    set_element(data, i, contribution(rank, ranks, i));
}

// Checks elements [begin, end) of `data` against `expected(i)` (exactly, or within a relative
// `tolerance`) and reports the first mismatch with `what` and the rank. Returns whether all matched.
inline bool expect_elements(const BufferView& data, size_t begin, size_t end,
                            const std::function<double(size_t)>& expected, int rank,
                            const std::string& what, double tolerance = 0) {
  for (size_t i = begin; i < end; ++i) {
    const double want = expected(i);
    const double got = element(data, i);
    const double allowed = tolerance * std::abs(want);
    if (!(std::abs(got - want) <= allowed)) {
      ADD_FAILURE() << what << ": rank " << rank << ", index " << i << ": expected " << want
                    << ", actual " << got;
      return false;
    }
  }
  return true;
}

// Rank counts and element counts of the sweep (Gloo's: 1, 2, odd, powers of two, large; 0, 1, a small
// odd count, a count not divisible by the ranks).
inline const std::vector<int>& rank_counts() {
  static const std::vector<int> counts{1, 2, 3, 4, 5, 8, 16};
  return counts;
}
inline std::vector<size_t> element_counts(int ranks) {
  return {0, 1, 7, 1000 * static_cast<size_t>(ranks) + 3};
}

struct World {
  Backend backend;
  int ranks;
};
inline std::string world_name(const ::testing::TestParamInfo<World>& info) {
  return to_string(info.param.backend) + "_P" + std::to_string(info.param.ranks);
}
inline std::vector<World> all_worlds() {
  std::vector<World> worlds;
  for (Backend b : all_backends())
    for (int p : rank_counts())
      worlds.push_back({b, p});
  return worlds;
}

inline std::string describe(const std::string& collective, DType dtype, size_t count,
                            const std::string& extra) {
  std::ostringstream os;
  os << collective << " " << to_string(dtype) << " count " << count;
  if (!extra.empty()) os << " " << extra;
  return os.str();
}

}  // namespace bagua::testing
