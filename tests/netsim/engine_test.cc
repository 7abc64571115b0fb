#include "netsim/engine.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <tuple>
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

// A script of events that schedule further events, run on an Engine and on a reference queue (a sorted
// set of (time, sequence)): both must run the same events at the same times in the same order. Each
// event draws its children from a generator seeded by its own id, so the script does not depend on the
// order it runs in. Children are posted (no handle) after one of 11 recurring delays (more than the
// engine has lanes, so some share the heap) or an arbitrary one, or scheduled with a handle at an
// arbitrary time; some events cancel a pending scheduled one. With `recurring_scheduled`, some of the
// scheduled children are scheduled after a recurring delay (Engine::at_recurring: into a lane, still
// cancellable).
class ScriptedEvents {
 public:
  explicit ScriptedEvents(uint32_t seed, bool recurring_scheduled = false)
      : seed_(seed), recurring_scheduled_(recurring_scheduled) {}

  // (time, id) of every event, in the order the engine ran them.
  std::vector<std::pair<int64_t, int>> run_engine() {
    Engine engine;
    std::map<int, EventQueue::Handle> handles;
    std::vector<std::pair<int64_t, int>> ran;
    struct Context {
      ScriptedEvents* script;
      Engine* engine;
      std::map<int, EventQueue::Handle>* handles;
      std::vector<std::pair<int64_t, int>>* ran;
      Callback::Fn run;
    } context{this, &engine, &handles, &ran, nullptr};
    context.run = [](void* object, uint64_t argument) {
      Context& c = *static_cast<Context*>(object);
      const int id = static_cast<int>(argument);
      c.handles->erase(id);
      c.ran->emplace_back(c.engine->now().nanoseconds(), id);
      for (const Child& child : c.script->children(id, c.engine->now().nanoseconds())) {
        const Callback callback{c.run, object, static_cast<uint64_t>(child.id)};
        if (child.cancel >= 0) {
          auto it = c.handles->find(child.cancel);
          if (it != c.handles->end()) {
            EXPECT_TRUE(c.engine->cancel(it->second));
            c.handles->erase(it);
          }
        } else if (child.posted) {
          c.engine->post(Time::ns(child.at - c.engine->now().nanoseconds()), callback, child.recurring);
        } else if (child.recurring) {
          (*c.handles)[child.id] = c.engine->at_recurring(Time::ns(child.at), callback);
        } else {
          (*c.handles)[child.id] = c.engine->at(Time::ns(child.at), callback);
        }
      }
    };
    engine.post(Time::zero(), {context.run, &context, 0});
    while (!engine.idle())
      engine.step();
    EXPECT_EQ(engine.events_processed(), ran.size());
    return ran;
  }

  std::vector<std::pair<int64_t, int>> run_reference() {
    std::set<std::tuple<int64_t, uint64_t, int>> queue;  // (time, sequence, id)
    std::map<int, std::tuple<int64_t, uint64_t, int>> cancellable;
    uint64_t sequence = 0;
    std::vector<std::pair<int64_t, int>> ran;
    queue.insert({0, sequence++, 0});
    while (!queue.empty()) {
      const auto [now, s, id] = *queue.begin();
      queue.erase(queue.begin());
      cancellable.erase(id);
      ran.emplace_back(now, id);
      for (const Child& child : children(id, now)) {
        if (child.cancel >= 0) {
          auto it = cancellable.find(child.cancel);
          if (it != cancellable.end()) {
            queue.erase(it->second);
            cancellable.erase(it);
          }
          continue;
        }
        const std::tuple<int64_t, uint64_t, int> key{child.at, sequence++, child.id};
        queue.insert(key);
        if (!child.posted) cancellable[child.id] = key;
      }
    }
    return ran;
  }

 private:
  struct Child {
    int id = -1;
    int64_t at = 0;
    bool posted = false;
    bool recurring = false;  // posted after one of the recurring delays
    int cancel = -1;         // >= 0: cancel the scheduled event with this id instead
  };
  // The children of event `id`, run at `now`: ids are handed out in order of creation, so the same run
  // order gives the same ids.
  std::vector<Child> children(int id, int64_t now) {
    std::mt19937 gen(seed_ * 7919u + static_cast<uint32_t>(id));
    std::vector<Child> out;
    if (next_id_ > 3000) return out;
    const int n = id == 0 ? 30 : 1 + static_cast<int>(gen() % 3);
    for (int k = 0; k < n; ++k) {
      Child c;
      const uint32_t kind = gen() % 10;
      if (kind == 0 && id > 0) {
        c.cancel = static_cast<int>(gen() % static_cast<uint32_t>(id + 1)) + id / 2;
      } else {
        c.id = next_id_++;
        if (kind < 6) {
          static constexpr int64_t kDelays[] = {0, 0, 0, 5, 7, 11, 13, 17, 19, 23, 29, 31};
          c.posted = c.recurring = true;
          c.at = now + kDelays[gen() % 12];
        } else if (kind == 7 && recurring_scheduled_) {
          static constexpr int64_t kDelays[] = {5, 7, 11, 13, 17, 19, 23, 29, 31, 37};
          c.recurring = true;
          c.at = now + kDelays[gen() % 10];
        } else {
          c.posted = kind == 6;
          c.at = now + static_cast<int64_t>(gen() % 40);
        }
      }
      out.push_back(c);
    }
    return out;
  }

  uint32_t seed_;
  bool recurring_scheduled_;
  int next_id_ = 1;
};

TEST(Engine, LanesAndTheHeapTogetherRunEventsInTimeThenSchedulingOrder) {
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    const auto engine = ScriptedEvents(seed).run_engine();
    const auto reference = ScriptedEvents(seed).run_reference();
    EXPECT_GT(engine.size(), 1000u);
    EXPECT_EQ(engine, reference) << "seed " << seed;
  }
}

TEST(Engine, CancellableEventsInLanesRunInTimeThenSchedulingOrder) {
  // As above, with a tenth of the scheduled events in the lanes of their recurring delays (ten of
  // them, more than the lanes left free by the posted ones), cancelled now and then at the front of
  // their lane, in its middle, or after they ran.
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    const auto engine = ScriptedEvents(seed, /*recurring_scheduled=*/true).run_engine();
    const auto reference = ScriptedEvents(seed, /*recurring_scheduled=*/true).run_reference();
    EXPECT_GT(engine.size(), 1000u);
    EXPECT_EQ(engine, reference) << "seed " << seed;
  }
}

TEST(Engine, ACancelledEventInALaneLeavesATombstoneThatIsPassedOver) {
  // By hand. a, b, c scheduled at 10, 10 and 10 ns with the recurring delay 10 share one lane, in
  // that order; d is posted at 10 ns after the same delay, behind them in the same lane. Cancelling
  // b (the middle) leaves a tombstone; cancelling a (the front) then passes it too: c is the front.
  // Only c and d run, c first; b's and a's handles are stale (cancel says so), c's too once it ran.
  // A lane whose entries are all cancelled is empty: the engine is idle. Rescheduling a lane event
  // moves it to the radix queue under a new handle, where it runs at its new time.
  Engine e;
  std::vector<uint64_t> order;
  const Callback::Fn record = [](void* o, uint64_t x) {
    static_cast<std::vector<uint64_t>*>(o)->push_back(x);
  };
  const auto a = e.at_recurring(Time::ns(10), Callback{record, &order, 1});
  const auto b = e.at_recurring(Time::ns(10), Callback{record, &order, 2});
  const auto c = e.at_recurring(Time::ns(10), Callback{record, &order, 3});
  e.post(Time::ns(10), Callback{record, &order, 4}, true);
  EXPECT_NE(a, b);
  EXPECT_TRUE(e.cancel(b));
  EXPECT_EQ(e.peek().argument, 1u);
  EXPECT_TRUE(e.cancel(a));
  EXPECT_EQ(e.peek().argument, 3u);
  EXPECT_FALSE(e.cancel(b));
  EXPECT_FALSE(e.cancel(a));
  while (!e.idle())
    e.step();
  EXPECT_EQ(order, (std::vector<uint64_t>{3, 4}));
  EXPECT_FALSE(e.cancel(c));
  EXPECT_EQ(e.now(), Time::ns(10));

  const auto x = e.at_recurring(Time::ns(20), Callback{record, &order, 5});
  const auto y = e.at_recurring(Time::ns(20), Callback{record, &order, 6});
  EXPECT_TRUE(e.cancel(y));
  EXPECT_TRUE(e.cancel(x));
  EXPECT_TRUE(e.idle());

  const auto z = e.at_recurring(Time::ns(20), Callback{record, &order, 7});
  e.at_recurring(Time::ns(20), Callback{record, &order, 8});
  const auto z_moved = e.reschedule(z, Time::ns(15), Callback{record, &order, 7});
  EXPECT_NE(z_moved, z);
  EXPECT_FALSE(e.cancel(z));
  while (!e.idle())
    e.step();
  EXPECT_EQ(order, (std::vector<uint64_t>{3, 4, 7, 8}));
  EXPECT_EQ(e.now(), Time::ns(20));
}

TEST(Engine, PeekShowsTheCallbackThatRunsNext) {
  Engine e;
  int ran = 0;
  const Callback::Fn count = [](void* object, uint64_t argument) {
    *static_cast<int*>(object) += static_cast<int>(argument);
  };
  e.at(Time::ns(9), Callback{count, &ran, 100});
  e.post(Time::ns(4), Callback{count, &ran, 10}, true);
  e.post(Time::zero(), Callback{count, &ran, 1});
  EXPECT_EQ(e.peek().argument, 1u);
  e.step();
  EXPECT_EQ(e.peek().argument, 10u);
  e.step();
  EXPECT_EQ(e.peek().argument, 100u);
  e.step();
  EXPECT_EQ(ran, 111);
  EXPECT_EQ(e.peek().fn, nullptr);
}

TEST(Engine, RescheduleRunsAnEventWhereCancelAndScheduleWould) {
  // Callbacks record their argument. A (1) and B (2) at 10 ns, C (3) at 20 ns. A moved to 10 ns again
  // takes a new sequence number, so it now runs after B (as a cancelled and re-added event would); C
  // moved to 5 ns runs first; A's handle stays valid and moving it once more to 30 ns puts it last. A
  // handle whose event has run is stale: reschedule then schedules a new event.
  Engine e;
  std::vector<uint64_t> order;
  const Callback::Fn record = [](void* o, uint64_t x) {
    static_cast<std::vector<uint64_t>*>(o)->push_back(x);
  };
  auto a = e.at(Time::ns(10), Callback{record, &order, 1});
  e.at(Time::ns(10), Callback{record, &order, 2});
  auto c = e.at(Time::ns(20), Callback{record, &order, 3});
  a = e.reschedule(a, Time::ns(10), Callback{record, &order, 1});
  c = e.reschedule(c, Time::ns(5), Callback{record, &order, 3});
  const auto a_again = e.reschedule(a, Time::ns(30), Callback{record, &order, 1});
  EXPECT_EQ(a_again, a);
  while (!e.idle())
    e.step();
  EXPECT_EQ(order, (std::vector<uint64_t>{3, 2, 1}));
  EXPECT_EQ(e.now(), Time::ns(30));
  // The event behind `c` has run: a new one is scheduled (at 40 ns) and runs.
  const auto fresh = e.reschedule(c, Time::ns(40), Callback{record, &order, 4});
  EXPECT_NE(fresh, EventQueue::kNoEvent);
  e.step();
  EXPECT_EQ(order.back(), 4u);
  EXPECT_EQ(e.now(), Time::ns(40));
  EXPECT_THROW(e.reschedule(fresh, Time::ns(39), Callback{record, &order, 5}), InternalError);
}

TEST(Engine, RescheduledHeapEventsComeOutInTheSameOrderAsCancelledAndRescheduledOnes) {
  // Two queues get the same random schedule, reschedule and cancel operations; one reschedules in
  // place, the other cancels and schedules again. They must run the same events in the same order.
  std::mt19937_64 rng(7);
  Engine moved, readded;
  std::vector<uint64_t> order_moved, order_readded;
  const Callback::Fn record = [](void* o, uint64_t x) {
    static_cast<std::vector<uint64_t>*>(o)->push_back(x);
  };
  std::vector<EventQueue::Handle> hm, hr;
  for (uint64_t i = 0; i < 2000; ++i) {
    const Time at = moved.now() + Time::ns(static_cast<int64_t>(rng() % 50));
    const uint64_t op = rng() % 4;
    if (op == 0 || hm.empty()) {
      hm.push_back(moved.at(at, Callback{record, &order_moved, i}));
      hr.push_back(readded.at(at, Callback{record, &order_readded, i}));
    } else if (op == 1) {
      const size_t k = rng() % hm.size();
      hm[k] = moved.reschedule(hm[k], at, Callback{record, &order_moved, i});
      readded.cancel(hr[k]);
      hr[k] = readded.at(at, Callback{record, &order_readded, i});
    } else if (op == 2) {
      const size_t k = rng() % hm.size();
      moved.cancel(hm[k]);
      readded.cancel(hr[k]);
    } else if (!moved.idle()) {
      moved.step();
      readded.step();
    }
  }
  while (!moved.idle())
    moved.step();
  while (!readded.idle())
    readded.step();
  EXPECT_EQ(order_moved, order_readded);
  EXPECT_GT(order_moved.size(), 500u);
}

TEST(Engine, TheRadixQueueSpreadsABucketAndKeepsTiesInSchedulingOrder) {
  // By hand, base 0: a at 12 (sequence 0), b at 9 (1), c at 12 (2), d at 8 (3). 12 = 0b1100 and
  // 9 = 0b1001 and 8 = 0b1000 all differ from the base first in bit 3: all four share bucket 4. Taking
  // d (the earliest) moves the base to 8: b (9 = 8 ^ 0b1) goes to bucket 1, a and c (12 = 8 ^ 0b100) to
  // bucket 3. Then e is scheduled at 12 (sequence 4) and c is moved to 12 (sequence 5), after e; a
  // cancelled event at 9 (f, sequence 6) leaves no trace. Order: d, b, a, e, c.
  Engine e;
  std::vector<uint64_t> order;
  const Callback::Fn record = [](void* o, uint64_t x) {
    static_cast<std::vector<uint64_t>*>(o)->push_back(x);
  };
  e.at(Time::ns(12), Callback{record, &order, 0});
  e.at(Time::ns(9), Callback{record, &order, 1});
  auto c = e.at(Time::ns(12), Callback{record, &order, 2});
  e.at(Time::ns(8), Callback{record, &order, 3});
  e.step();
  EXPECT_EQ(order, (std::vector<uint64_t>{3}));
  e.at(Time::ns(12), Callback{record, &order, 4});
  c = e.reschedule(c, Time::ns(12), Callback{record, &order, 2});
  EXPECT_TRUE(e.cancel(e.at(Time::ns(9), Callback{record, &order, 5})));
  EXPECT_EQ(e.peek().argument, 1u);
  while (!e.idle())
    e.step();
  EXPECT_EQ(order, (std::vector<uint64_t>{3, 1, 0, 4, 2}));
  EXPECT_EQ(e.now(), Time::ns(12));
}

TEST(Engine, RandomSchedulesReschedulesAndCancelsRunInTheOrderOfASortedReference) {
  // An Engine and a reference (a sorted set of (time, sequence, id)) get the same random operations:
  // events at times near now (many ties, ordered by their sequences alone), far ahead (up to 2^40 ns,
  // so that they pass through many buckets), and at now; moves earlier and later; cancels; and, between
  // runs of steps, what peek() and next_time() show. Half the new events are scheduled after one of
  // three recurring delays (lanes), and moved out of them or cancelled like the others. Both must agree
  // throughout.
  for (const int64_t spread : {int64_t{4}, int64_t{1} << 12, int64_t{1} << 40}) {
    std::mt19937_64 rng(static_cast<uint64_t>(spread));
    Engine e;
    std::vector<uint64_t> ran;
    const Callback::Fn record = [](void* o, uint64_t x) {
      static_cast<std::vector<uint64_t>*>(o)->push_back(x);
    };
    std::set<std::tuple<int64_t, uint64_t, uint64_t>> reference;  // (time, sequence, id)
    std::vector<std::tuple<int64_t, uint64_t, uint64_t>> keys;    // by id, while pending
    std::vector<EventQueue::Handle> handles;
    std::vector<uint64_t> expected;
    uint64_t sequence = 0;
    const auto draw_time = [&] {
      const uint64_t kind = rng() % 4;
      if (kind == 0) return e.now();
      const int64_t range = kind == 1 ? 4 : spread;
      return e.now() + Time::ns(static_cast<int64_t>(rng() % static_cast<uint64_t>(range)));
    };
    for (int round = 0; round < 3000; ++round) {
      const uint64_t op = rng() % 10;
      if (op < 5 || handles.empty()) {
        // Every other one after a recurring delay (a lane, cancellable), or at a time drawn as below.
        static constexpr int64_t kRecurring[] = {3, 5, int64_t{1} << 20};
        const bool recurring = rng() % 2 == 0;
        const Time at = recurring ? e.now() + Time::ns(kRecurring[rng() % 3]) : draw_time();
        const uint64_t id = handles.size();
        handles.push_back(recurring ? e.at_recurring(at, Callback{record, &ran, id})
                                    : e.at(at, Callback{record, &ran, id}));
        keys.emplace_back(at.nanoseconds(), sequence++, id);
        reference.insert(keys.back());
      } else {
        const uint64_t id = rng() % handles.size();
        const bool pending = reference.count(keys[id]) > 0;
        if (op < 8) {  // moved (or, once it ran, scheduled anew under the same id)
          const Time at = draw_time();
          handles[id] = e.reschedule(handles[id], at, Callback{record, &ran, id});
          reference.erase(keys[id]);
          keys[id] = {at.nanoseconds(), sequence++, id};
          reference.insert(keys[id]);
        } else {
          EXPECT_EQ(e.cancel(handles[id]), pending);
          reference.erase(keys[id]);
        }
      }
      if (!reference.empty()) {
        EXPECT_EQ(e.next_time().nanoseconds(), std::get<0>(*reference.begin()));
        EXPECT_EQ(e.peek().argument, std::get<2>(*reference.begin()));
      }
      for (uint64_t steps = rng() % 3; steps > 0 && !reference.empty(); --steps) {
        expected.push_back(std::get<2>(*reference.begin()));
        reference.erase(reference.begin());
        e.step();
      }
    }
    while (!reference.empty()) {
      expected.push_back(std::get<2>(*reference.begin()));
      reference.erase(reference.begin());
    }
    while (!e.idle())
      e.step();
    EXPECT_EQ(ran, expected) << "spread " << spread;
    EXPECT_GT(ran.size(), 1000u);
  }
}

// A deferred callback's order: what it records, and what it schedules at now().
struct Deferred {
  Engine* engine;
  std::vector<int>* order;
  static void run(void* object, uint64_t tag) {
    auto& d = *static_cast<Deferred*>(object);
    d.order->push_back(static_cast<int>(tag));
    d.engine->after(Time::zero(), [&d] { d.order->push_back(5); });
  }
};

TEST(Engine, ADeferredCallbackRunsOnceTheInstantHasNoEventLeftBeforeTimeMovesOn) {
  // At 5 ns: event 1 defers 4 and schedules 3 at now; event 2 was already due. 4 runs after 1, 2
  // and 3 (every event of the instant, also those scheduled after it was deferred) and before 6 at
  // 9 ns; what 4 schedules at now (5) runs at 5 ns, after it.
  Engine e;
  std::vector<int> order;
  Deferred d{&e, &order};
  e.at(Time::ns(5), [&] {
    order.push_back(1);
    e.defer({&Deferred::run, &d, 4});
    EXPECT_THROW(e.defer({&Deferred::run, &d, 7}), InternalError);  // one at a time
    e.after(Time::zero(), [&] { order.push_back(3); });
  });
  e.at(Time::ns(5), [&] { order.push_back(2); });
  e.at(Time::ns(9), [&] { order.push_back(6); });
  std::vector<Time> times;
  while (!e.idle()) {
    e.step();
    times.push_back(e.now());
  }
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(times.back(), Time::ns(9));
  EXPECT_EQ(e.events_processed(), 6u);  // the deferred callback counts as an event

  // Deferred with nothing else pending: the engine is not idle, the next time is now, peek shows it.
  Engine lone;
  std::vector<int> lone_order;
  Deferred ld{&lone, &lone_order};
  lone.defer({&Deferred::run, &ld, 8});
  EXPECT_FALSE(lone.idle());
  EXPECT_EQ(lone.next_time(), Time::zero());
  EXPECT_EQ(lone.peek().fn, &Deferred::run);
  lone.step();
  EXPECT_EQ(lone_order, (std::vector<int>{8}));
  lone.step();
  EXPECT_EQ(lone_order, (std::vector<int>{8, 5}));
  EXPECT_TRUE(lone.idle());
}

TEST(Engine, CeilNsByIntegerConversionIsTheLibraryCeiling) {
  // ceil_ns's inline path against ceil_ns_exact (std::ceil): whole numbers of nanoseconds and their
  // neighbours a few ulps and the tolerance away, 1e6 bytes at 1e9 bytes/s (1'000'000 ns, not
  // 1'000'001), zero, negatives, values around 2^52 where the inline path hands over and up to 9e18
  // (int64's range; a duration beyond it is out of the model's), -infinity and NaN, and a million
  // random magnitudes from 1e-3 to 1e18.
  EXPECT_EQ(ceil_ns(1e6 * 1e9 / 1e9), Time::ns(1'000'000));
  EXPECT_EQ(ceil_ns(2.5), Time::ns(3));
  EXPECT_EQ(ceil_ns(0.0), Time::zero());
  std::vector<double> values = {0.0,
                                -0.0,
                                -1.0,
                                -1e-300,
                                1e-300,
                                1e-6,
                                1.000001,
                                0x1p52,
                                0x1p52 - 1,
                                0x1p52 + 2,
                                0x1p53,
                                9e18,
                                -std::numeric_limits<double>::infinity(),
                                std::numeric_limits<double>::quiet_NaN()};
  for (double whole = 1; whole < 1e17; whole *= 3.7) {
    const double w = std::floor(whole);
    for (double v : {w, w + 1e-6, w - 1e-6, w + 2e-6, std::nextafter(w, 0.0), std::nextafter(w, 1e300)})
      values.push_back(v);
  }
  std::mt19937_64 rng(5);
  for (int i = 0; i < 1'000'000; ++i)
    values.push_back(std::pow(10.0, std::uniform_real_distribution<double>(-3, 18)(rng)));
  for (const double v : values)
    ASSERT_EQ(ceil_ns(v), ceil_ns_exact(v)) << std::hexfloat << v;
}

TEST(Engine, SchedulingInThePastIsABug) {
  Engine e;
  e.at(Time::ns(10), [] {});
  e.step();
  EXPECT_THROW(e.at(Time::ns(5), [] {}), InternalError);
}

}  // namespace
}  // namespace bagua::netsim
