// top-k (topk.h), one element at a time, as kernels.cc and kernels_x86.cc share it: an element's key,
// the candidates' passes for their tails, and the final pass (kernels.cc's, and kernels_x86.cc's
// vector pass for its blocks holding a tie still to keep and for its last candidates): a candidate is
// kept when its key is above the threshold (the k-th largest key), or equal to it while ties are left
// to keep, in index order; the kept's indices go to y, their values x[i] to y + 4 k.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace bagua::compress_kernels {

// An element's key: |x|'s bits, a NaN's counted as infinity's (reference.cc's, which keeps its own).
inline uint32_t topk_key(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  bits &= 0x7FFFFFFFu;
  return bits > 0x7F800000u ? 0x7F800000u : bits;
}

// The candidates' passes one element at a time (their tails): element i's index and key are written at
// `count` either way (a non-candidate's are overwritten by the next), and a candidate, whose key
// reaches `floor`, raises *most to its key and is counted. Returns the new count.
inline size_t topk_candidate(float v, size_t i, uint32_t floor, uint32_t* index, uint32_t* keys,
                             size_t count, uint32_t* most) {
  const uint32_t key = topk_key(v);
  index[count] = static_cast<uint32_t>(i);
  keys[count] = key;
  if (key < floor) return count;
  *most = key > *most ? key : *most;
  return count + 1;
}

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
