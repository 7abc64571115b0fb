#include "netsim/flat_map.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>

namespace bagua::netsim {
namespace {

// Keys hashed to one of 4 values: long runs of colliding keys, wrapping around the table's end, so that
// erasing exercises every case of the backward shift.
struct PoorHash {
  uint64_t operator()(uint32_t k) const { return k % 4 * 0x9e3779b97f4a7c15ull; }
};
struct GoodHash {
  uint64_t operator()(uint32_t k) const { return mix64(k); }
};

// The reference is std::map: after every operation both must hold the same entries.
template <class Hash>
void compare_with_std_map(uint32_t seed) {
  FlatMap<uint32_t, int, Hash> map;
  std::map<uint32_t, int> reference;
  std::mt19937 gen(seed);
  for (int step = 0; step < 20'000; ++step) {
    const uint32_t key = gen() % 300;
    switch (gen() % 4) {
      case 0:
      case 1:
        if (reference.count(key) == 0) {
          map.insert(key, step);
          reference[key] = step;
        }
        break;
      case 2:
        EXPECT_EQ(map.erase(key), reference.erase(key) == 1);
        break;
      default:
        if (step % 1000 == 0) {  // drop the odd values
          map.erase_if([](uint32_t, int v) { return v % 2 == 1; });
          std::erase_if(reference, [](const auto& e) { return e.second % 2 == 1; });
        }
    }
    ASSERT_EQ(map.size(), reference.size());
  }
  for (uint32_t key = 0; key < 300; ++key) {
    const int* found = map.find(key);
    const auto it = reference.find(key);
    ASSERT_EQ(found != nullptr, it != reference.end()) << "key " << key;
    if (found != nullptr) {
      EXPECT_EQ(*found, it->second) << "key " << key;
    }
  }
}

TEST(FlatMap, AgreesWithStdMapUnderRandomInsertsAndErases) {
  compare_with_std_map<GoodHash>(1);
  compare_with_std_map<GoodHash>(2);
}

TEST(FlatMap, AgreesWithStdMapWhenKeysCollide) {
  compare_with_std_map<PoorHash>(3);
  compare_with_std_map<PoorHash>(4);
}

}  // namespace
}  // namespace bagua::netsim
