// The simulator's semantics: data movement and matching, streams and events, errors and deadlocks,
// validation, statistics, trace output and determinism. Exact times use the cluster of hosts_spec():
// a host-to-host route has L = 1000 ns and B = 1e9 B/s, so one lone flow of S bytes takes 1000 + S ns.
#include "netsim/simulation.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/collectives/nccl_flow.h"
#include "tests/netsim/support.h"

namespace bagua::netsim {
namespace {

template <class T>
BufferView view(std::vector<T>& v) {
  return BufferView::of(std::span<T>(v));
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

// ---------------------------------------------------------------------------------------------------
// Messages

TEST(Simulation, DataArrivesWhetherTheReceiveIsPostedBeforeOrAfterArrival) {
  // Rank 0 sends 12 bytes twice to rank 1 (tags 0 and 1), both at 0: they enter transfer at 1000 ns and
  // share host 0's NIC up-link and host 1's down-link at 5e8 B/s each: 12 / 5e8 s = 24 ns; both arrive
  // at 1024 ns.
  // Tag 0's receive is posted first (copied at arrival); tag 1's at 5000 ns, after arrival (stashed and
  // copied at posting, completing at once). The sender overwrites its buffer once its sends completed:
  // the stash must hold the old values.
  Simulation(hosts_spec(2)).run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    if (t.rank() == 0) {
      std::vector<int32_t> a{1, 2, 3}, b{4, 5, 6};
      auto s0 = t.isend(view(a), 1, 0);
      auto s1 = t.isend(view(b), 1, 1);
      s0->wait();
      s1->wait();
      EXPECT_EQ(ctx.clock().now(), Time::ns(1024));
      std::fill(b.begin(), b.end(), -1);
    } else {
      std::vector<int32_t> x(3, 0), y(3, 0);
      t.recv(view(x), 0, 0);
      EXPECT_EQ(ctx.clock().now(), Time::ns(1024));
      EXPECT_EQ(x, (std::vector<int32_t>{1, 2, 3}));
      ctx.clock().sleep(Time::ns(5000 - 1024));
      t.recv(view(y), 0, 1);
      EXPECT_EQ(ctx.clock().now(), Time::ns(5000));  // max(posted, arrival)
      EXPECT_EQ(y, (std::vector<int32_t>{4, 5, 6}));
    }
  });
}

TEST(Simulation, SendingToSelfCompletesAtOnce) {
  Simulation(hosts_spec(1)).run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    std::vector<double> out{3.5, -1}, in(2, 0);
    auto r = t.irecv(view(in), 0, 9);
    t.send(view(out), 0, 9);
    EXPECT_TRUE(r->test());
    EXPECT_EQ(in, out);
    // And the other order: sent first, received later.
    out = {7, 8};
    t.send(view(out), 0, 9);
    t.recv(view(in), 0, 9);
    EXPECT_EQ(in, out);
    EXPECT_EQ(ctx.clock().now(), Time::zero());
  });
}

TEST(Simulation, MessagesWithOneKeyMatchInOrderAndTagsKeepThemApart) {
  Simulation(hosts_spec(2)).run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    if (t.rank() == 0) {
      std::vector<int32_t> a{1}, b{2}, c{3};
      t.send(view(a), 1, 5);
      t.send(view(b), 1, 6);
      t.send(view(c), 1, 5);
    } else {
      std::vector<int32_t> x{0}, y{0}, z{0};
      t.recv(view(y), 0, 6);  // tag 6 first
      t.recv(view(x), 0, 5);
      t.recv(view(z), 0, 5);
      EXPECT_EQ(x[0], 1);
      EXPECT_EQ(y[0], 2);
      EXPECT_EQ(z[0], 3);
    }
  });
}

TEST(Simulation, MetaBuffersMoveNoDataButCostTheirSize) {
  // A meta send of 1 MB into a real buffer: 1'001'000 ns, and the buffer is left as it was.
  Simulation(hosts_spec(2)).run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    if (t.rank() == 0) {
      t.send(meta_bytes(kMB), 1, 0);
    } else {
      std::vector<uint8_t> in(kMB, 7);
      t.recv(view(in), 0, 0);
      EXPECT_EQ(ctx.clock().now(), Time::ns(1'001'000));
      EXPECT_TRUE(std::all_of(in.begin(), in.end(), [](uint8_t v) { return v == 7; }));
    }
  });
}

TEST(Simulation, ReceiveSizeMustEqualSendSize) {
  const std::string what = message_of([] {
    Simulation(hosts_spec(2)).run([&](RankContext& ctx) {
      Transport& t = ctx.transport();
      if (t.rank() == 0)
        t.send(meta_bytes(8), 1, 3);
      else
        t.recv(meta_bytes(4), 0, 3);
    });
  });
  EXPECT_NE(what.find("receive of 4 bytes at rank 1"), std::string::npos) << what;
  EXPECT_NE(what.find("send of 8 bytes from rank 0"), std::string::npos) << what;
}

TEST(Simulation, TopologyIsVisibleThroughHostOf) {
  Simulation(hosts_spec(3, 2)).run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    EXPECT_EQ(t.size(), 6);
    for (int r = 0; r < 6; ++r)
      EXPECT_EQ(t.host_of(r), r / 2);
    EXPECT_FALSE(t.native_allreduce(meta_bytes(4), ReduceOp::kSum));
  });
}

TEST(Simulation, SubgroupMessagesDoNotMatchTheParentsAndRanksAreRenumbered) {
  // World ranks 0..3, two per host. Subgroup {3, 1} (in that order): world 3 is its rank 0, world 1
  // its rank 1; hosts are kept (world 3 and 1 are on hosts 1 and 0).
  // World rank 1 sends 100 to world rank 3 on the world group, then 200 on the subgroup, both tag 7.
  // World rank 3 receives from the subgroup first: it must get 200 (with shared matching it would get
  // the world message, 100, posted first).
  Simulation(hosts_spec(2, 2)).run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    if (t.rank() != 1 && t.rank() != 3) return;
    const std::vector<int> members{3, 1};
    auto g = t.subgroup(members);
    EXPECT_EQ(g->size(), 2);
    EXPECT_EQ(g->rank(), t.rank() == 3 ? 0 : 1);
    EXPECT_EQ(g->host_of(0), 1);
    EXPECT_EQ(g->host_of(1), 0);
    if (t.rank() == 1) {
      std::vector<int32_t> a{100}, b{200};
      t.send(view(a), 3, 7);
      g->send(view(b), 0, 7);
    } else {
      std::vector<int32_t> x{0}, y{0};
      g->recv(view(y), 1, 7);
      t.recv(view(x), 1, 7);
      EXPECT_EQ(y[0], 200);
      EXPECT_EQ(x[0], 100);
    }
  });
}

TEST(Simulation, ASubgroupListingARankTwiceOrOutsideTheGroupIsRefused) {
  // Rank 0 of 3 names its members; each bad list stops the run with the check's message.
  auto refusal = [](std::vector<int> members) {
    return message_of([&] {
      Simulation(hosts_spec(3)).run([&](RankContext& ctx) {
        if (ctx.transport().rank() == 0) ctx.transport().subgroup(members);
      });
    });
  };
  EXPECT_NE(refusal({0, 2, 0}).find("subgroup lists rank 0 twice"), std::string::npos);
  EXPECT_NE(refusal({2, 1, 2}).find("subgroup lists rank 2 twice"), std::string::npos);
  EXPECT_NE(refusal({0, 3}).find("subgroup: rank 3 outside a group of 3"), std::string::npos);
  EXPECT_NE(refusal({1, 2}).find("rank 0 creates a subgroup it is not in"), std::string::npos);
  EXPECT_EQ(refusal({2, 0, 1}), "(no exception)");
}

// ---------------------------------------------------------------------------------------------------
// Clock, streams and events

TEST(Simulation, ComputeChargesTheRooflineAndSleepDoesNot) {
  // Device: 1e12 FLOP/s, 1e11 B/s.
  //   1e9 flops and 1e9 bytes: max(1e9 / 1e12 s, 1e9 / 1e11 s) = max(1 ms, 10 ms) = 10'000'000 ns.
  //   2e10 flops, 1e9 bytes, 0.5 ms profiled: 0.5 ms + max(20 ms, 10 ms) = 20'500'000 ns.
  //   sleep 1 ms: no charge.
  ClusterSpec spec = hosts_spec(1);
  spec.device = {1e12, Bandwidth::bytes_per_second(1e11)};
  Simulation sim(spec);
  sim.run([&](RankContext& ctx) {
    EXPECT_EQ(ctx.clock().compute({1e9, Bytes(1'000'000'000), Time::zero()}), Time::ns(10'000'000));
    EXPECT_EQ(ctx.clock().now(), Time::ns(10'000'000));
    EXPECT_EQ(ctx.clock().compute({2e10, Bytes(1'000'000'000), Time::us(500)}), Time::ns(20'500'000));
    ctx.clock().sleep(Time::ms(1));
    EXPECT_EQ(ctx.clock().now(), Time::ns(31'500'000));
  });
  EXPECT_EQ(sim.rank_stats()[0].compute, Time::ns(30'500'000));
}

TEST(Simulation, ComputeWithoutADeviceModelChargesOnlyTheDuration) {
  // peak_flops = 0 and memory_bandwidth = 0: those terms are 0.
  Simulation(hosts_spec(1)).run([&](RankContext& ctx) {
    EXPECT_EQ(ctx.clock().compute({1e15, Bytes(1'000'000'000), Time::ns(123)}), Time::ns(123));
  });
}

TEST(Simulation, ACommunicationStreamOverlapsComputeOnTheMainFiber) {
  // Rank 0 submits "send 1 MB to rank 1" to a stream at 0 and computes 500 us on its main fiber.
  //   The send completes at 1'001'000 ns (one flow); the compute ends at 500'000 ns, not delayed.
  //   Waiting for the task's event returns at 1'001'000; 100 us more compute ends at 1'101'000 ns.
  //   (Without overlap it would be 1'601'000.)
  Simulation sim(hosts_spec(2));
  const Time end = sim.run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    if (t.rank() == 1) {
      t.recv(meta_bytes(kMB), 0, 0);
      return;
    }
    auto comm = ctx.make_stream("comm");
    Time sent_at;
    EventPtr sent = comm->submit([&] {
      t.send(meta_bytes(kMB), 1, 0);
      sent_at = ctx.clock().now();
    });
    ctx.clock().compute({0, Bytes(0), Time::us(500)});
    EXPECT_EQ(ctx.clock().now(), Time::ns(500'000));
    EXPECT_FALSE(sent->test());
    sent->wait();
    EXPECT_EQ(ctx.clock().now(), Time::ns(1'001'000));
    EXPECT_EQ(sent_at, Time::ns(1'001'000));
    ctx.clock().compute({0, Bytes(0), Time::us(100)});
    EXPECT_EQ(ctx.clock().now(), Time::ns(1'101'000));
  });
  EXPECT_EQ(end, Time::ns(1'101'000));
  EXPECT_EQ(sim.rank_stats()[0].compute, Time::ns(600'000));
  EXPECT_EQ(sim.rank_stats()[0].busy_comm, Time::ns(1'001'000));
  EXPECT_EQ(sim.rank_stats()[1].busy_comm, Time::ns(1'001'000));
}

TEST(Simulation, StreamsRunTasksInOrderAndComputeIndependently) {
  // Stream A: tasks of 300 us and 100 us in order (ends at 400 us); stream B: 200 us; main: 50 us.
  // All start at 0: A's second task starts at 300 us, B ends at 200 us, main at 50 us.
  Simulation sim(hosts_spec(1));
  sim.run([&](RankContext& ctx) {
    auto a = ctx.make_stream("a");
    auto b = ctx.make_stream("b");
    std::vector<std::pair<int, Time>> log;
    a->submit([&] {
      ctx.clock().compute({0, Bytes(0), Time::us(300)});
      log.emplace_back(1, ctx.clock().now());
    });
    EventPtr second = a->submit([&] {
      log.emplace_back(2, ctx.clock().now());
      ctx.clock().compute({0, Bytes(0), Time::us(100)});
    });
    b->submit([&] { ctx.clock().compute({0, Bytes(0), Time::us(200)}); });
    ctx.clock().compute({0, Bytes(0), Time::us(50)});
    EXPECT_EQ(ctx.clock().now(), Time::us(50));
    b->synchronize();
    EXPECT_EQ(ctx.clock().now(), Time::us(200));
    a->synchronize();
    EXPECT_EQ(ctx.clock().now(), Time::us(400));
    EXPECT_TRUE(second->test());
    ASSERT_EQ(log.size(), 2u);
    EXPECT_EQ(log[0], std::make_pair(1, Time::us(300)));
    EXPECT_EQ(log[1], std::make_pair(2, Time::us(300)));
  });
  EXPECT_EQ(sim.rank_stats()[0].compute, Time::us(650));
}

TEST(Simulation, EventsWakeWaitersOnAnyStream) {
  // A stream task waits for an event the main fiber sets after 70 us of compute, then sleeps 5 us.
  Simulation(hosts_spec(1)).run([&](RankContext& ctx) {
    auto s = ctx.make_stream("s");
    EventPtr go = ctx.make_event();
    Time woke;
    s->submit([&] {
      go->wait();
      woke = ctx.clock().now();
      ctx.clock().sleep(Time::us(5));
    });
    ctx.clock().compute({0, Bytes(0), Time::us(70)});
    EXPECT_FALSE(go->test());
    go->set();
    EXPECT_TRUE(go->test());
    s->synchronize();
    EXPECT_EQ(woke, Time::us(70));
    EXPECT_EQ(ctx.clock().now(), Time::us(75));
  });
}

TEST(Simulation, SynchronizeRethrowsATaskFailureOnce) {
  Simulation(hosts_spec(1)).run([&](RankContext& ctx) {
    auto s = ctx.make_stream("s");
    int ran = 0;
    s->submit([] { throw ConfigError("task failed"); });
    s->submit([&] { ++ran; });  // later tasks still run
    EXPECT_THROW(s->synchronize(), ConfigError);
    EXPECT_EQ(ran, 1);
    EXPECT_NO_THROW(s->synchronize());
  });
}

TEST(Simulation, AnUnsynchronizedTaskFailureStopsTheRun) {
  EXPECT_THROW(Simulation(hosts_spec(1)).run([&](RankContext& ctx) {
    auto s = ctx.make_stream("s");
    s->submit([] { throw ConfigError("nobody synchronized"); });
  }),
               ConfigError);
}

TEST(Simulation, TheStreamDestructorRunsWhatIsQueued) {
  int ran = 0;
  Simulation(hosts_spec(1)).run([&](RankContext& ctx) {
    {
      auto s = ctx.make_stream("s");
      for (int i = 0; i < 3; ++i)
        s->submit([&] {
          ctx.clock().sleep(Time::us(1));
          ++ran;
        });
    }
    EXPECT_EQ(ctx.clock().now(), Time::us(3));
  });
  EXPECT_EQ(ran, 3);
}

// ---------------------------------------------------------------------------------------------------
// Errors and deadlocks

struct CountOnDestruction {
  int& count;
  ~CountOnDestruction() { ++count; }
};

TEST(Simulation, ARankThrowingStopsTheRunAndEveryFiberUnwinds) {
  // Rank 1 throws at 3 us; ranks 0 and 2 wait for messages that never come, rank 2 on a stream too.
  // run() rethrows rank 1's ConfigError, and every rank's stack (and the stream's) was unwound.
  int destroyed = 0;
  EXPECT_THROW(Simulation(hosts_spec(3)).run([&](RankContext& ctx) {
    CountOnDestruction guard{destroyed};
    Transport& t = ctx.transport();
    if (t.rank() == 1) {
      ctx.clock().sleep(Time::us(3));
      throw ConfigError("rank 1 is unhappy");
    }
    if (t.rank() == 2) {
      auto s = ctx.make_stream("comm");
      s->submit([&] {
        CountOnDestruction inner{destroyed};
        t.recv(meta_bytes(4), 1, 0);
      });
      s->synchronize();
    }
    t.recv(meta_bytes(4), 1, 0);
  }),
               ConfigError);
  EXPECT_EQ(destroyed, 4);
}

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
// The sanitizers reserve their shadow memory up front and cannot run under a small RLIMIT_AS: this
// test exists in the default build only.

// The process's mapped address space now, bytes (/proc/self/statm's first field, in pages).
uint64_t address_space_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t pages = 0;
  statm >> pages;
  return pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

// With the address space limited to what the process maps now plus 64 MiB, runs 2048 ranks; exits 0
// when run() threw the error that names the cause.
[[noreturn]] void run_out_of_address_space() {
  const rlimit limit{address_space_bytes() + (uint64_t{64} << 20), RLIM_INFINITY};
  if (setrlimit(RLIMIT_AS, &limit) != 0) std::_Exit(2);
  const std::string what = message_of([] {
    Simulation(hosts_spec(2048)).run([](RankContext& ctx) { ctx.clock().sleep(Time::us(1)); });
  });
  std::fprintf(stderr, "%s\n", what.c_str());
  std::_Exit(what.find("ran out of memory") != std::string::npos ? 0 : 1);
}

TEST(SimulationDeathTest, FiberStacksThatCannotBeMappedEndTheRunWithAnError) {
  // Every fiber's stack is 1 MiB of address space, mapped when the fiber first runs: the 2048 ranks'
  // stacks (2 GiB) cannot all be mapped within 64 MiB, and some fiber's creation throws
  // std::bad_alloc inside the engine. run() must unwind the fibers already created and throw an
  // error that says so (before the fix the exception left the engine with the failed fiber still
  // current, and the World's destructor aborted the process: "abort_all from inside a fiber", 134).
  EXPECT_EXIT(run_out_of_address_space(), ::testing::ExitedWithCode(0),
              "the simulation of 2048 ranks ran out of memory at 0 ns with [0-9]+ fibers .*"
              "sysctl vm.max_map_count");
}
#endif

TEST(Simulation, TheFirstFailureBySimulatedTimeIsReportedTiesByRank) {
  // Rank 2 fails at 5 us, rank 1 at 10 us: rank 2's. Ranks 3 and 1 both at 5 us: rank 1's, although
  // rank 3's failure runs first (rank 3 sleeps once from 0; the others sleep 1 us, then the rest, so
  // their final timer is scheduled later and fires after rank 3's at the same time).
  auto run = [](std::vector<int64_t> fail_us) {
    return message_of([&] {
      Simulation(hosts_spec(4)).run([&](RankContext& ctx) {
        const int r = ctx.transport().rank();
        const int64_t at = fail_us[static_cast<size_t>(r)];
        if (at < 0) return;
        if (r == 3 || at == 0) {
          ctx.clock().sleep(Time::ns(at * 1000));
        } else {
          ctx.clock().sleep(Time::us(1));
          ctx.clock().sleep(Time::ns((at - 1) * 1000));
        }
        throw ConfigError("rank " + std::to_string(r));
      });
    });
  };
  EXPECT_EQ(run({-1, 10, 5, -1}), "rank 2");
  EXPECT_EQ(run({-1, 5, -1, 5}), "rank 1");
  EXPECT_EQ(run({-1, -1, -1, 0}), "rank 3");
}

TEST(Simulation, ADeadlockNamesTheBlockedRanksAndWhatTheyWaitFor) {
  // Both ranks receive first: nothing is ever sent.
  std::string what;
  try {
    Simulation(hosts_spec(2)).run([&](RankContext& ctx) {
      Transport& t = ctx.transport();
      ctx.clock().sleep(Time::us(2));
      std::vector<int32_t> x{0};
      t.recv(view(x), 1 - t.rank(), 5);
      t.send(view(x), 1 - t.rank(), 5);
    });
    ADD_FAILURE() << "no deadlock reported";
  } catch (const InternalError& e) {
    what = e.what();
  }
  EXPECT_NE(what.find("deadlock at 2.000 us"), std::string::npos) << what;
  EXPECT_NE(what.find("rank 0 waits for a receive from rank 1 tag 5"), std::string::npos) << what;
  EXPECT_NE(what.find("rank 1 waits for a receive from rank 0 tag 5"), std::string::npos) << what;
}

collectives::FlowCapable& flow_of(RankContext& ctx) {
  auto* flow = dynamic_cast<collectives::FlowCapable*>(&ctx.transport());
  BAGUA_CHECK(flow != nullptr, "the simulator's transport is FlowCapable");
  return *flow;
}

TEST(Simulation, StartTogetherReturnsWhenTheLastRankHasComeAndTakesNoTime) {
  // Three ranks come to a meeting of tag 7 at 0, 300 and 700 ns: all leave at 700. Their second
  // meeting of that tag, rank 0 coming 100 ns later than the others: all leave at 800. A meeting of
  // another tag in between does not mix with them.
  std::vector<Time> first(3), second(3);
  Simulation(hosts_spec(3)).run([&](RankContext& ctx) {
    const int r = ctx.transport().rank();
    ctx.clock().sleep(Time::ns(r == 0 ? 0 : r == 1 ? 300 : 700));
    flow_of(ctx).start_together(7);
    first[static_cast<size_t>(r)] = ctx.clock().now();
    flow_of(ctx).start_together(8);
    if (r == 0) ctx.clock().sleep(Time::ns(100));
    flow_of(ctx).start_together(7);
    second[static_cast<size_t>(r)] = ctx.clock().now();
  });
  EXPECT_EQ(first, std::vector<Time>(3, Time::ns(700)));
  EXPECT_EQ(second, std::vector<Time>(3, Time::ns(800)));
}

TEST(Simulation, AMeetingNobodyElseComesToIsADeadlockNamingIt) {
  std::string what;
  try {
    Simulation(hosts_spec(2)).run([&](RankContext& ctx) {
      if (ctx.transport().rank() == 0) flow_of(ctx).start_together(4);
    });
    ADD_FAILURE() << "no deadlock reported";
  } catch (const InternalError& e) {
    what = e.what();
  }
  EXPECT_NE(what.find("rank 0 waits for the rest of its group at the start of a collective, tag 4"),
            std::string::npos)
      << what;
}

TEST(Simulation, SharingFactorsSplitEachLinkEvenly) {
  // Two hosts of two ranks: 0 -> 2 and 1 -> 3 cross host 0's NIC up-link and host 1's down-link, two
  // transfers each: twice as long as alone. 0 -> 1 stays in the host, on rank 0's device link up, which
  // it shares with 0 -> 2: twice too. 2 -> 0 goes the other way on every link: alone.
  std::vector<double> factors;
  std::vector<double> alone;
  Simulation(hosts_spec(2, 2)).run([&](RankContext& ctx) {
    if (ctx.transport().rank() != 0) return;
    const std::vector<std::pair<int, int>> transfers{{0, 2}, {1, 3}, {0, 1}, {2, 0}};
    factors = flow_of(ctx).sharing_factors(transfers);
    alone = flow_of(ctx).sharing_factors(std::vector<std::pair<int, int>>{{0, 2}});
  });
  EXPECT_EQ(factors, (std::vector<double>{2, 2, 2, 1}));
  EXPECT_EQ(alone, std::vector<double>{1});
}

TEST(Simulation, ADeadlockOnAStreamNamesTheStream) {
  std::string what = message_of([] {
    Simulation(hosts_spec(2)).run([&](RankContext& ctx) {
      if (ctx.transport().rank() == 1) return;
      auto s = ctx.make_stream("comm");
      s->submit([&] { ctx.transport().recv(meta_bytes(1), 1, 3); });
      s->synchronize();
    });
  });
  EXPECT_NE(what.find("rank 0 (stream 'comm') waits for a receive from rank 1 tag 3"),
            std::string::npos)
      << what;
  EXPECT_NE(what.find("rank 0 waits for stream 'comm' to finish"), std::string::npos) << what;
}

TEST(Simulation, InvalidClusterSpecsNameTheField) {
  auto error_of = [](const std::function<void(ClusterSpec&)>& edit) {
    ClusterSpec spec = hosts_spec(4);
    edit(spec);
    return message_of([&] { Simulation sim(spec); });
  };
  EXPECT_EQ(error_of([](ClusterSpec& s) { s.nic.bandwidth = Bandwidth::bytes_per_second(0); }),
            "nic.bandwidth must be > 0, got 0");
  EXPECT_EQ(error_of([](ClusterSpec& s) { s.intra_host.bandwidth = Bandwidth::infinite(); }),
            "intra_host.bandwidth must be finite, got inf");
  EXPECT_EQ(error_of([](ClusterSpec& s) { s.hosts = 0; }), "hosts must be >= 1, got 0");
  EXPECT_EQ(error_of([](ClusterSpec& s) { s.devices_per_host = -2; }),
            "devices_per_host must be >= 1, got -2");
  EXPECT_EQ(error_of([](ClusterSpec& s) { s.nic.latency = Time::ns(-1); }),
            "nic.latency must be >= 0, got -1 ns");
  EXPECT_EQ(error_of([](ClusterSpec& s) {
              s.topology = {"leaf_spine", {{"hosts_per_leaf", int64_t{3}}}};
            }),
            "topology.hosts_per_leaf: must divide hosts (4), got 3");
  EXPECT_EQ(error_of([](ClusterSpec& s) {
              s.topology = {"leaf_spine", {{"hosts_per_leaf", int64_t{2}}, {"oversubscription", 0.0}}};
            }),
            "topology.oversubscription: must be >= 1, got 0");
  EXPECT_EQ(error_of([](ClusterSpec& s) {
              s.topology = {"leaf_spine", {}};
            }),
            "topology.hosts_per_leaf: missing (required)");
  EXPECT_EQ(error_of([](ClusterSpec& s) {
              s.topology = {"ring", {}};
            }),
            "topology.name: unknown topology \"ring\" (known: fat_tree, leaf_spine, rail_optimized, "
            "star, torus)");
  EXPECT_EQ(error_of([](ClusterSpec& s) { s.factors.bandwidth_efficiency = 0; }),
            "factors.bandwidth_efficiency must be in (0, 1], got 0");
  EXPECT_EQ(error_of([](ClusterSpec& s) { s.factors.latency_factor = -1; }),
            "factors.latency_factor must be >= 0, got -1");
  EXPECT_EQ(
      error_of([](ClusterSpec& s) { s.factors.flow_window_cap = Bandwidth::bytes_per_second(0); }),
      "factors.flow_window_cap must be > 0, got 0");
  EXPECT_EQ(error_of([](ClusterSpec& s) { s.device.peak_flops = -1; }),
            "device.peak_flops must be >= 0, got -1");
  // The composition root prefixes its JSON path.
  ClusterSpec spec = hosts_spec(2);
  spec.nic.bandwidth = Bandwidth::bytes_per_second(0);
  EXPECT_EQ(message_of([&] { validate(spec, "cluster."); }),
            "cluster.nic.bandwidth must be > 0, got 0");
  EXPECT_THROW(validate(spec), ConfigError);
}

// ---------------------------------------------------------------------------------------------------
// Statistics, trace, determinism

TEST(Simulation, StatsCountBusyCommunicationAndLinkUtilization) {
  // One flow of 1 MB from rank 0 to 1: both ranks busy 1'001'000 ns; host0.nic.up carried 1e6 bytes,
  // utilization 1e6 / (1e9 B/s * 1.001e-3 s).
  Simulation sim(hosts_spec(2));
  sim.run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    if (t.rank() == 0)
      t.send(meta_bytes(kMB), 1, 0);
    else
      t.recv(meta_bytes(kMB), 0, 0);
  });
  const auto ranks = sim.rank_stats();
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[0].busy_comm, Time::ns(1'001'000));
  EXPECT_EQ(ranks[1].busy_comm, Time::ns(1'001'000));
  const auto links = sim.link_stats();
  // 2 device links per rank, 2 NIC links per host.
  ASSERT_EQ(links.size(), 8u);
  for (const LinkStats& l : links) {
    const bool used = l.name == "host0.dev0.up" || l.name == "host0.nic.up" ||
                      l.name == "host1.nic.down" || l.name == "host1.dev0.down";
    EXPECT_EQ(l.carried.count(), used ? kMB : 0) << l.name;
    if (l.name == "host0.nic.up") {
      EXPECT_DOUBLE_EQ(l.utilization, 1e6 / (1e9 * 1.001e-3));
    }
  }
  EXPECT_GT(sim.events_processed(), 0u);
}

TEST(Simulation, TraceRecordsComputeMessagesAndUserSpans) {
  // Rank 0 computes 2 us then sends 1 MB (2 us .. 1'003 us); rank 1 records a span around its receive.
  SimOptions options;
  options.trace = true;
  Simulation sim(hosts_spec(2), options);
  sim.run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    if (t.rank() == 0) {
      ctx.clock().compute({0, Bytes(0), Time::us(2)});
      t.send(meta_bytes(kMB), 1, 0);
    } else {
      TraceScope scope(ctx, "waiting \"here\"", "user", 2);
      t.recv(meta_bytes(kMB), 0, 0);
    }
  });
  std::ostringstream out;
  sim.write_trace(out);
  const std::string text = out.str();
  const nlohmann::json trace = nlohmann::json::parse(text);
  int compute = 0, sends = 0, recvs = 0, user = 0, names = 0;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "M") {
      if (e.at("name") == "thread_name" && e.at("tid") == 1) {
        EXPECT_EQ(e.at("args").at("name"), "communication");
        ++names;
      }
      continue;
    }
    EXPECT_EQ(e.at("ph"), "X");
    const std::string name = e.at("name");
    if (name == "compute") {
      ++compute;
      EXPECT_EQ(e.at("pid"), 0);
      EXPECT_EQ(e.at("tid"), 0);
      EXPECT_DOUBLE_EQ(e.at("dur").get<double>(), 2.0);
    } else if (name == "send to 1") {
      ++sends;
      EXPECT_EQ(e.at("pid"), 0);
      EXPECT_EQ(e.at("tid"), 1);
      EXPECT_EQ(e.at("args").at("bytes"), kMB);
    } else if (name == "recv from 0") {
      ++recvs;
      EXPECT_EQ(e.at("pid"), 1);
    } else if (name == "waiting \"here\"") {
      ++user;
      EXPECT_EQ(e.at("tid"), 2);
      EXPECT_EQ(e.at("cat"), "user");
    }
  }
  EXPECT_EQ(compute, 1);
  EXPECT_EQ(sends, 1);
  EXPECT_EQ(recvs, 1);
  EXPECT_EQ(user, 1);
  EXPECT_EQ(names, 2);
  // Microseconds with nanosecond precision: the send spans 2 us .. 1'003 us.
  EXPECT_NE(text.find("\"ts\":2.000,\"dur\":1001.000"), std::string::npos) << text;
  // The user span on rank 1: 0 .. 1'003 us.
  EXPECT_NE(text.find("\"ts\":0.000,\"dur\":1003.000"), std::string::npos) << text;
}

struct RandomRun {
  std::vector<Time> finish;  // per rank
  std::string trace;
  uint64_t events;
};

// 16 ranks (4 hosts x 4 devices, star), 200 messages of random size between random ranks (self
// included) with random tags, each rank posting its operations without blocking, with random compute in
// between, then waiting for them all. Everything comes from one seeded generator, drawn before the run;
// each rank posts in message order, so the k-th send and the k-th receive of a (src, dst, tag) key are
// one message.
RandomRun random_run(uint32_t seed) {
  constexpr int kRanks = 16;
  struct Op {
    bool send;
    int peer;
    Tag tag;
    int64_t bytes;
    Time compute_before;
  };
  std::mt19937 gen(seed);
  std::vector<std::vector<Op>> ops(kRanks);
  for (int m = 0; m < 200; ++m) {
    const int src = static_cast<int>(gen() % kRanks);
    const int dst = static_cast<int>(gen() % kRanks);
    const Tag tag = gen() % 3;
    const int64_t bytes = static_cast<int64_t>(gen() % 200'000);
    ops[static_cast<size_t>(src)].push_back({true, dst, tag, bytes, Time::ns(gen() % 20'000)});
    ops[static_cast<size_t>(dst)].push_back({false, src, tag, bytes, Time::ns(gen() % 20'000)});
  }
  ClusterSpec spec = hosts_spec(4, 4);
  spec.intra_host = {Bandwidth::gigabytes_per_second(5), Time::ns(300)};
  spec.device = {1e12, Bandwidth::gigabytes_per_second(100)};
  SimOptions options;
  options.trace = true;
  Simulation sim(spec, options);
  RandomRun out;
  out.finish.resize(kRanks);
  sim.run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    std::vector<RequestPtr> requests;
    std::vector<Buffer> buffers;
    for (const Op& op : ops[static_cast<size_t>(t.rank())]) {
      ctx.clock().compute({0, Bytes(0), op.compute_before});
      buffers.push_back(Buffer::meta(DType::kU8, static_cast<size_t>(op.bytes)));
      requests.push_back(op.send ? t.isend(buffers.back(), op.peer, op.tag)
                                 : t.irecv(buffers.back(), op.peer, op.tag));
    }
    wait_all(requests);
    out.finish[static_cast<size_t>(t.rank())] = ctx.clock().now();
  });
  std::ostringstream trace;
  sim.write_trace(trace);
  out.trace = trace.str();
  out.events = sim.events_processed();
  return out;
}

TEST(Simulation, ARandomPatternRunsBitIdenticallyTwice) {
  const RandomRun a = random_run(2024);
  const RandomRun b = random_run(2024);
  EXPECT_EQ(a.finish, b.finish);
  EXPECT_EQ(a.events, b.events);
  EXPECT_TRUE(a.trace == b.trace) << "trace outputs differ";
  EXPECT_GT(a.trace.size(), 10'000u);
  // A different pattern gives different times: the comparison above can tell runs apart.
  EXPECT_NE(random_run(7).finish, a.finish);
}

}  // namespace
}  // namespace bagua::netsim
