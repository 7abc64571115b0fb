// The watchdog of the real runtimes (runtime/common/watchdog.h) on its own and in the threads runtime:
// a wait longer than the limit ends the run with one line naming the rank, the peer, the operation
// and the bucket; a wait within the limit never does.
#include "runtime/common/watchdog.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/algorithms/tags.h"
#include "core/operation.h"
#include "runtime/threads/world.h"

namespace bagua {
namespace {

using runtime::Watchdog;
using Steady = std::chrono::steady_clock;

double seconds_since(Steady::time_point start) {
  return std::chrono::duration<double>(Steady::now() - start).count();
}

TEST(Operation, TheOutermostScopeNamesTheOperation) {
  EXPECT_EQ(current_operation(), nullptr);
  {
    const OperationScope outer("hierarchical allreduce");
    {
      const OperationScope inner("ring allreduce");  // the leaders' allreduce inside it
      EXPECT_STREQ(current_operation(), "hierarchical allreduce");
    }
    EXPECT_STREQ(current_operation(), "hierarchical allreduce");
  }
  EXPECT_EQ(current_operation(), nullptr);
  // Thread-local: another thread is in no operation.
  const OperationScope here("broadcast");
  const char* there = "unset";
  std::thread([&] { there = current_operation(); }).join();
  EXPECT_EQ(there, nullptr);
}

// Bucket 7 of the gradient channel is tag (1 << 20) | 7 = 1048583 (core/algorithms/tags.h).
TEST(Watchdog, TheLineNamesRankPeerOperationAndBucket) {
  const Watchdog::Wait wait{.rank = 2,
                            .peer = 3,
                            .what = "recv",
                            .tag = tags::bucket(tags::kGradient, 7),
                            .operation = "ring allreduce"};
  EXPECT_EQ(Watchdog::line(wait, Time::ms(5100), Time::s(5)),
            "watchdog: rank 2 waited 5.100 s for rank 3 (limit 5.000 s): recv in ring allreduce, "
            "gradient bucket 7 (tag 1048583)");
  const Watchdog::Wait collective{
      .rank = 0, .what = "MPI_Allreduce", .has_tag = false, .operation = "native allreduce"};
  EXPECT_EQ(Watchdog::line(collective, Time::s(300), Time::s(300)),
            "watchdog: rank 0 waited 300.000 s for the other ranks (limit 300.000 s): MPI_Allreduce in "
            "native allreduce");
  const Watchdog::Wait plain{.rank = 1, .peer = 0, .what = "send", .tag = 1};
  EXPECT_EQ(Watchdog::line(plain, Time::ms(2), Time::ms(1)),
            "watchdog: rank 1 waited 2.000 ms for rank 0 (limit 1.000 ms): send, tag 1");
}

TEST(Watchdog, RefusesALimitOfZero) {
  EXPECT_THROW(Watchdog(Time::zero(), [](const std::string&) {}), ConfigError);
}

// Limit 100 ms, so a period of 10 ms: a wait held for 2 s expires once, between 100 ms and 100 ms plus
// a period after it started (plus scheduling slack on a loaded machine: 1 s), with the line of the
// wait and the operation of the thread that waited.
TEST(Watchdog, AWaitPastTheLimitExpiresOnceWithItsLine) {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> lines;
  double expired_after = 0;
  const auto start = Steady::now();
  Watchdog watchdog(Time::ms(100), [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(mu);
    lines.push_back(line);
    expired_after = seconds_since(start);
    cv.notify_all();
  });
  {
    const OperationScope scope("allgather");
    const Watchdog::Watch watched =
        watchdog.watch({.rank = 1, .peer = 0, .what = "recv", .tag = tags::bucket(tags::kWeights, 2)});
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::seconds(2), [&] { return !lines.empty(); });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // no second expiry comes
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_GE(expired_after, 0.1);
  EXPECT_LT(expired_after, 0.1 + 0.01 + 1.0);
  const std::string expected_start = "watchdog: rank 1 waited ";
  const std::string expected_end =
      " for rank 0 (limit 100.000 ms): recv in allgather, weights bucket 2 (tag 2097154)";
  EXPECT_EQ(lines[0].rfind(expected_start, 0), 0u) << lines[0];
  ASSERT_GE(lines[0].size(), expected_end.size());
  EXPECT_EQ(lines[0].substr(lines[0].size() - expected_end.size()), expected_end) << lines[0];
}

// Many waits, each well within a limit of 300 ms (10 ms each, over 1 s): none expires.
TEST(Watchdog, WaitsWithinTheLimitNeverExpire) {
  std::atomic<int> expiries{0};
  Watchdog watchdog(Time::ms(300), [&](const std::string&) { ++expiries; });
  for (int i = 0; i < 100; ++i) {
    const Watchdog::Watch watched = watchdog.watch({.rank = 0, .peer = 1, .what = "recv", .tag = 0});
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(expiries.load(), 0);
}

// Two ranks as threads, watchdog 200 ms: rank 1 returns without sending (a rank that died), rank 0
// waits for its gradient bucket 3 in an allreduce. The run ends by the limit plus a period (20 ms)
// plus slack (1 s), and throws the watchdog's line naming rank 0, peer 1, the operation and the bucket.
TEST(ThreadsWatchdog, ARankWaitingForAGoneRankEndsTheRunWithOneLine) {
  const auto start = Steady::now();
  std::string error;
  try {
    runtime::threads::ThreadsWorld(2, 1, Time::ms(200)).run([](RankContext& ctx) {
      Transport& t = ctx.transport();
      if (t.rank() == 1) return;
      const OperationScope scope("ring allreduce");
      std::vector<float> in(4);
      t.recv(BufferView::of(std::span(in)), 1, tags::bucket(tags::kGradient, 3));
    });
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  const double elapsed = seconds_since(start);
  EXPECT_GE(elapsed, 0.2);
  EXPECT_LT(elapsed, 0.2 + 0.02 + 1.0);
  const std::string expected_end =
      " for rank 1 (limit 200.000 ms): recv in ring allreduce, gradient bucket 3 (tag 1048579)";
  EXPECT_EQ(error.rfind("watchdog: rank 0 waited ", 0), 0u) << error;
  ASSERT_GE(error.size(), expected_end.size()) << error;
  EXPECT_EQ(error.substr(error.size() - expected_end.size()), expected_end) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

// Three ranks: rank 2 is stuck (asleep past the limit, as a stopped process), ranks 0 and 1 wait for
// it in a subgroup of {0, 2} and in the world. The line names world ranks: whichever wait expires
// first, its peer is rank 2. The sleeper sees the abort in its next wait.
TEST(ThreadsWatchdog, PeersAreNamedInWorldRanksFromASubgroup) {
  std::string error;
  try {
    runtime::threads::ThreadsWorld(3, 1, Time::ms(200)).run([](RankContext& ctx) {
      Transport& t = ctx.transport();
      std::vector<float> x(2);
      const std::vector<int> pair = {0, 2};
      if (t.rank() == 2) {
        const auto sub = t.subgroup(pair);
        std::this_thread::sleep_for(std::chrono::milliseconds(600));
        sub->recv(BufferView::of(std::span(x)), 0, 9);  // throws: the run was aborted
        return;
      }
      if (t.rank() == 0) {
        const auto sub = t.subgroup(pair);
        sub->recv(BufferView::of(std::span(x)), 1, 9);  // rank 1 of the pair is world rank 2
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // rank 0's wait is the oldest
      t.recv(BufferView::of(std::span(x)), 2, 9);
    });
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  EXPECT_EQ(error.rfind("watchdog: rank 0 waited ", 0), 0u) << error;
  EXPECT_NE(error.find(" for rank 2 (limit 200.000 ms): recv, tag 9"), std::string::npos) << error;
}

// One line per job (ExpiryReport): rank 3 stopped; rank 0 waits for it, rank 1 for rank 0, rank 2 for
// rank 1 (the wait-for chain of a ring). Ranks 0 and 2 recorded their waits; rank 1 settles (window
// 1 ms) and prints rank 0's line, the one waiting for rank 3, which has no record; rank 2 settling after
// it prints nothing (the claim is taken).
TEST(ExpiryReport, OneRankPrintsTheLineOfTheRankWaitingForTheCulprit) {
  const std::filesystem::path folder =
      std::filesystem::temp_directory_path() / ("bagua_expiry_report_" + std::to_string(::getpid()));
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder);
  auto record = [&](int rank, int peer, const std::string& line) {
    std::ofstream(folder / ("bagua-watchdog-42." + std::to_string(rank)))
        << std::to_string(peer) + "\n" + line + "\n";
  };
  record(0, 3, "watchdog: rank 0 waited 3 s for rank 3");
  record(2, 1, "watchdog: rank 2 waited 3 s for rank 1");
  const runtime::ExpiryReport report(folder, "42", Time::ms(1));
  EXPECT_EQ(report.settle(1, 0, "watchdog: rank 1 waited 3 s for rank 0"),
            std::optional<std::string>("watchdog: rank 0 waited 3 s for rank 3"));
  EXPECT_EQ(report.settle(2, 1, "watchdog: rank 2 waited 3 s for rank 1"), std::nullopt);
  // Another job's files are its own: job 43 settles alone and prints its own line.
  EXPECT_EQ(runtime::ExpiryReport(folder, "43", Time::ms(1)).settle(1, 0, "job 43"),
            std::optional<std::string>("job 43"));
  std::filesystem::remove_all(folder);
}

// Every recorded peer waits itself (a cycle: 0 for 1, 1 for 0), or waits for a whole group: the
// lowest rank's line. Without a writable folder: the rank's own line.
TEST(ExpiryReport, WithoutARankWaitingForACulpritTheLowestRanksLine) {
  const std::filesystem::path folder =
      std::filesystem::temp_directory_path() / ("bagua_expiry_cycle_" + std::to_string(::getpid()));
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder);
  std::ofstream(folder / "bagua-watchdog-7.0") << "1\nrank 0 for 1\n";
  EXPECT_EQ(runtime::ExpiryReport(folder, "7", Time::ms(1)).settle(1, 0, "rank 1 for 0"),
            std::optional<std::string>("rank 0 for 1"));
  std::filesystem::remove_all(folder);
  EXPECT_EQ(runtime::ExpiryReport(folder / "missing", "7", Time::ms(1)).settle(1, 0, "mine"),
            std::optional<std::string>("mine"));
}

}  // namespace
}  // namespace bagua
