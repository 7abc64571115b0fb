#include "netsim/recycler.h"

#include <gtest/gtest.h>

#include <cstring>

namespace bagua::netsim {
namespace {

TEST(BlockLists, AGivenBlockIsTakenAgainForAnySizeOfItsList) {
  // Blocks are listed in steps of 16 bytes: sizes 40 and 48 share a list, 200 has another.
  BlockLists::Owned lists = BlockLists::create();
  void* a = lists->take(40);
  void* b = lists->take(200);
  lists->give(a, 40);
  EXPECT_EQ(lists->take(48), a);
  std::memset(a, 1, 48);      // a block of that list holds 48 bytes
  void* c = lists->take(40);  // the list is empty again: a new block
  EXPECT_NE(c, a);
  EXPECT_NE(c, b);
  lists->give(a, 48);
  lists->give(b, 200);
  lists->give(c, 40);
}

TEST(BlockLists, AbandonedListsLastUntilTheirLastBlockIsBack) {
  // A request may outlive its mailbox: its block stays usable, and giving it back frees the lists
  // (LeakSanitizer, in the asan preset, reports them if not).
  BlockLists* lists = nullptr;
  void* p = nullptr;
  {
    const BlockLists::Owned owned = BlockLists::create();
    lists = owned.get();
    p = lists->take(64);
  }
  std::memset(p, 7, 64);
  lists->give(p, 64);
}

}  // namespace
}  // namespace bagua::netsim
