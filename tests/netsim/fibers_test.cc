// The fibers' stacks: a finished fiber's stack serves the next fiber of its thread, within a run and
// across runs, and serves it whole; the pool releases what earlier runs left deep in them.
#include "netsim/fibers.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "netsim/engine.h"

namespace bagua::netsim {
namespace {

// Runs `fibers` bodies on a fresh engine to their end; each body first sleeps 1 ns, so that every
// fiber has started (and holds its stack) before any ends.
void run_fibers(int fibers, const std::function<void(int)>& body) {
  Engine engine;
  Fibers f(engine, [](Fibers::Fiber&, std::exception_ptr e) { std::rethrow_exception(e); });
  for (int i = 0; i < fibers; ++i)
    f.spawn(i, 0, [&f, &body, i] {
      f.sleep(Time::ns(1));
      body(i);
    });
  while (!engine.idle())
    engine.step();
}

TEST(Fibers, AFinishedFibersStackServesTheNextRun) {
  run_fibers(4, [](int) {});  // the pool now holds at least 4 stacks
  const size_t pooled = Fibers::pooled_stacks();
  ASSERT_GE(pooled, 4u);
  // Four fibers of the next run take four pooled stacks, none mapped anew (fiber 0 looks when all
  // four have started and none has ended); each gives its stack back when it ends.
  size_t while_running = 0;
  run_fibers(4, [&](int i) {
    if (i == 0) while_running = Fibers::pooled_stacks();
  });
  EXPECT_EQ(while_running, pooled - 4);
  EXPECT_EQ(Fibers::pooled_stacks(), pooled);
}

#if !defined(__SANITIZE_ADDRESS__)
// 900 KiB of the 1 MiB: a reused stack is as deep as a new one (its released pages come back zeroed).
void touch_deep() {
  constexpr size_t kDepth = size_t{900} << 10;
  char block[kDepth];
  std::memset(block, 0x5a, sizeof(block));
  asm volatile("" : : "r"(block) : "memory");  // keep the block and its stores
}

// The mappings of this process (/proc/self/maps): start, end, permissions.
struct Mapping {
  uintptr_t start;
  uintptr_t end;
  std::string perms;
};
std::vector<Mapping> mappings() {
  std::vector<Mapping> all;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream in(line);
    std::string range;
    Mapping m;
    in >> range >> m.perms;
    const size_t dash = range.find('-');
    m.start = std::stoull(range.substr(0, dash), nullptr, 16);
    m.end = std::stoull(range.substr(dash + 1), nullptr, 16);
    all.push_back(m);
  }
  return all;
}

TEST(Fibers, EachStackHasAGuardPageBelowIt) {
  // Stacks are mapped a slab at a time (StackSlabs, fibers.cc: 8 stacks in the first slab, then as
  // many as handed out so far): 20 fibers span several slabs. Each fiber's frame lies in a writable
  // mapping of its own that begins right above an inaccessible page, its guard: without the guards a
  // slab's stacks would be one mapping, and a fiber that overflowed its stack would write over its
  // neighbour's frames instead of faulting.
  std::vector<uintptr_t> frames(20);
  run_fibers(20, [&](int i) {
    volatile char here = 0;
    frames[static_cast<size_t>(i)] = reinterpret_cast<uintptr_t>(&here);
  });
  const std::vector<Mapping> maps = mappings();
  std::set<uintptr_t> stacks;
  for (const uintptr_t frame : frames) {
    size_t m = 0;
    while (m < maps.size() && !(maps[m].start <= frame && frame < maps[m].end))
      ++m;
    ASSERT_LT(m, maps.size()) << "no mapping holds a fiber's frame";
    EXPECT_EQ(maps[m].perms.substr(0, 2), "rw");
    ASSERT_GT(m, 0u);
    EXPECT_EQ(maps[m - 1].end, maps[m].start) << "no mapping right below a fiber's stack";
    EXPECT_EQ(maps[m - 1].perms.substr(0, 3), "---") << "the page below a fiber's stack is accessible";
    EXPECT_GE(maps[m - 1].end - maps[m - 1].start, static_cast<uintptr_t>(sysconf(_SC_PAGESIZE)));
    stacks.insert(maps[m].start);
  }
  EXPECT_EQ(stacks.size(), frames.size()) << "fibers' stacks share a mapping";
}

TEST(Fibers, AReusedStackIsWhole) {
  for (int run = 0; run < 3; ++run)
    run_fibers(2, [](int) { touch_deep(); });
  EXPECT_GE(Fibers::pooled_stacks(), 2u);
}

TEST(Fibers, ARunsStacksArePooledAsLeftAndReleasedBelowTheirTopWhenTheNextRunEnds) {
  // Two fibers touch 900 KiB of their stacks. When their run ends, both stacks are pooled as they
  // left them: at least 2 x 900 KiB resident (the next run's fibers take them with no system call).
  // When a later run that took neither ends (here one with no fiber), every stack pooled before it
  // began is released below its top 64 KiB (StackPool, fibers.cc): what stays resident in the whole
  // pool is at most 64 KiB a stack.
  run_fibers(2, [](int) { touch_deep(); });
  EXPECT_GE(Fibers::pooled_resident_bytes(), size_t{2} * (900 << 10));
  run_fibers(0, [](int) {});
  EXPECT_LE(Fibers::pooled_resident_bytes(), Fibers::pooled_stacks() * (size_t{64} << 10));
  EXPECT_GE(Fibers::pooled_stacks(), 2u);
}
#endif

}  // namespace
}  // namespace bagua::netsim
