// The fibers' stacks: a finished fiber's stack serves the next fiber of its thread, within a run and
// across runs, and serves it whole; the pool releases what earlier runs left deep in them.
#include "netsim/fibers.h"

#include <gtest/gtest.h>

#include <cstring>

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
