// top-k's (topk.h) final pass, one candidate at a time, as kernels.cc runs it and kernels_x86.cc's
// vector pass runs it for its blocks holding a tie still to keep and for its last candidates: a
// candidate is kept when its key is above the threshold (the k-th largest key), or equal to it while
// ties are left to keep, in index order; the kept's indices go to y, their values x[i] to y + 4 k.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace bagua::compress_kernels {

struct TopkKept {
  uint32_t threshold;
  size_t ties_left;  // keys equal to the threshold still to keep
  size_t k;
  uint8_t* y;
  size_t count = 0;  // kept so far

  void offer(uint32_t index, uint32_t key, const float* x) {
    const bool tie = key == threshold && ties_left > 0;
    if (key > threshold || tie) {
      ties_left -= tie;
      std::memcpy(y + 4 * count, &index, 4);
      std::memcpy(y + 4 * k + 4 * count, x + index, 4);
      ++count;
    }
  }
};

}  // namespace bagua::compress_kernels
