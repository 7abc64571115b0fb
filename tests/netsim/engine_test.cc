#include "netsim/engine.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/check.h"

namespace bagua::netsim {
namespace {

TEST(Engine, EventsRunInTimeOrderAndTiesInInsertionOrder) {
  Engine e;
  std::vector<int> order;
  e.at(Time::ns(20), [&] { order.push_back(3); });
  e.at(Time::ns(10), [&] { order.push_back(1); });
  e.at(Time::ns(10), [&] { order.push_back(2); });
  e.at(Time::ns(20), [&] { order.push_back(4); });
  while (!e.idle())
    e.step();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(e.now(), Time::ns(20));
  EXPECT_EQ(e.events_processed(), 4u);
}

TEST(Engine, EventsScheduledWhileRunningAtTheSameTimeRunAfterThoseAlreadyDue) {
  Engine e;
  std::vector<int> order;
  e.at(Time::ns(5), [&] {
    order.push_back(1);
    e.after(Time::zero(), [&] { order.push_back(3); });
  });
  e.at(Time::ns(5), [&] { order.push_back(2); });
  while (!e.idle())
    e.step();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST(Engine, CancelRemovesOnlyThatEventAndStaleHandlesAreHarmless) {
  Engine e;
  std::vector<int> order;
  auto h1 = e.at(Time::ns(1), [&] { order.push_back(1); });
  auto h2 = e.at(Time::ns(2), [&] { order.push_back(2); });
  e.at(Time::ns(3), [&] { order.push_back(3); });
  EXPECT_TRUE(e.cancel(h2));
  EXPECT_FALSE(e.cancel(h2));
  e.step();
  EXPECT_FALSE(e.cancel(h1));  // already ran
  // The freed slot is reused; the old handle must not cancel the new event.
  e.at(Time::ns(4), [&] { order.push_back(4); });
  EXPECT_FALSE(e.cancel(h2));
  while (!e.idle())
    e.step();
  EXPECT_EQ(order, (std::vector<int>{1, 3, 4}));
}

TEST(Engine, ManyEventsWithCancellationsComeOutSorted) {
  // A heap check: 1000 events at pseudo-random times, every third cancelled.
  Engine e;
  std::vector<EventQueue::Handle> handles;
  std::vector<int64_t> seen;
  uint64_t x = 12345;
  for (int i = 0; i < 1000; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const auto t = static_cast<int64_t>((x >> 33) % 500);
    handles.push_back(e.at(Time::ns(t), [&e, &seen] { seen.push_back(e.now().nanoseconds()); }));
  }
  for (size_t i = 0; i < handles.size(); i += 3)
    EXPECT_TRUE(e.cancel(handles[i]));
  while (!e.idle())
    e.step();
  EXPECT_EQ(seen.size(), 1000u - 334u);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
}

TEST(Engine, SchedulingInThePastIsABug) {
  Engine e;
  e.at(Time::ns(10), [] {});
  e.step();
  EXPECT_THROW(e.at(Time::ns(5), [] {}), InternalError);
}

}  // namespace
}  // namespace bagua::netsim
