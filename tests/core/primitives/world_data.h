// Helpers shared by the primitives tests: per-rank inputs with a known average, and a per-rank result
// table filled from every rank's thread or fiber.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "core/compress/compressor.h"
#include "tests/support/worlds.h"

namespace bagua::testing {

// Rank r's input element i: smooth in i, different per rank, in about [-1, 3].
inline float input(int rank, size_t i) {
  return static_cast<float>(std::sin(0.37 * static_cast<double>(i) + 1.3 * rank) + 0.25 * rank);
}

inline Buffer input_buffer(int rank, size_t n) {
  Buffer b = Buffer::host(DType::kF32, n);
  auto v = b.as<float>();
  for (size_t i = 0; i < n; ++i)
    v[i] = input(rank, i);
  return b;
}

// The exact average over `ranks` of input(r, i), in double.
inline double average_input(int ranks, size_t i) {
  double sum = 0;
  for (int r = 0; r < ranks; ++r)
    sum += input(r, i);
  return sum / ranks;
}

// One vector per rank, written under a lock.
class Results {
 public:
  explicit Results(int ranks) : values_(static_cast<size_t>(ranks)) {}
  void set(int rank, const BufferView& data) {
    auto v = data.as<float>();
    std::lock_guard<std::mutex> lock(*mutex_);
    values_[static_cast<size_t>(rank)].assign(v.begin(), v.end());
  }
  const std::vector<float>& operator[](int rank) const { return values_[static_cast<size_t>(rank)]; }
  int ranks() const { return static_cast<int>(values_.size()); }

 private:
  std::unique_ptr<std::mutex> mutex_ = std::make_unique<std::mutex>();  // movable
  std::vector<std::vector<float>> values_;
};

inline std::string where(Backend backend, int ranks, int per_host = 1) {
  return "backend " + to_string(backend) + ", " + std::to_string(ranks) + " ranks, " +
         std::to_string(per_host) + " per host";
}

inline CompressorRegistry compressor_registry() {
  CompressorRegistry r("compressor");
  register_compressors(r);
  return r;
}

}  // namespace bagua::testing
