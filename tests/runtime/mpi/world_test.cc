// MpiWorld::run when a rank fails (runtime/mpi/world.h): every rank returns from the run with the same
// failure, the ranks that waited for the failed one are released by the abort (runtime/mpi/abort.h)
// instead of waiting forever, and the next run on the same world works with no message of the failed
// run left over.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/trainer/trainer.h"
#include "tests/runtime/mpi/support.h"

namespace bagua {
namespace {

using testing::mpi_world;

// The outcome of one run on this rank: the exception's type and text.
struct Caught {
  std::string type;  // "none", "config", "diverged", "runtime"
  std::string what;
  int64_t iteration = -1;
};

Caught run_catching(const std::function<void(RankContext&)>& body) {
  try {
    mpi_world().run(body);
  } catch (const ConfigError& e) {
    return {"config", e.what()};
  } catch (const Diverged& e) {
    return {"diverged", e.what(), e.iteration()};
  } catch (const std::runtime_error& e) {
    return {"runtime", e.what()};
  }
  return {"none", ""};
}

// Rank 0 sends rank 1 the value 1 on tag 5, which rank 1 never receives: rank 1 throws at once. Every
// other rank waits for a message from rank 1 that never comes. Then every rank throws "rank 1: boom",
// and a second run in which rank 0 sends 2 on tag 5 delivers 2 (the first run's 1 stays on the old
// communicator).
TEST(MpiWorldFailure, ARankThatThrowsReleasesTheRanksWaitingForItAndTheNextRunIsClean) {
  const int size = mpi_world().size();
  if (size < 2) GTEST_SKIP() << "needs 2 ranks";
  const Caught first = run_catching([](RankContext& ctx) {
    Transport& t = ctx.transport();
    if (t.rank() == 1) throw std::runtime_error("boom");
    if (t.rank() == 0) {
      std::vector<int32_t> one{1};
      t.send(BufferView::of(std::span(one)), 1, 5);
    }
    std::vector<int32_t> never(1);
    t.recv(BufferView::of(std::span(never)), 1, 6);
  });
  EXPECT_EQ(first.type, "runtime");
  EXPECT_EQ(first.what, "rank 1: boom");

  std::vector<int32_t> got{-1};
  const Caught second = run_catching([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    if (t.rank() == 0) {
      std::vector<int32_t> two{2};
      t.send(BufferView::of(std::span(two)), 1, 5);
    } else if (t.rank() == 1) {
      t.recv(BufferView::of(std::span(got)), 0, 5);
    }
  });
  EXPECT_EQ(second.type, "none") << second.what;
  if (mpi_world().rank() == 1) {
    EXPECT_EQ(got[0], 2);
  }
}

// Two ranks diverge: the last at iteration 7, rank 0 at iteration 9 (rank 0's comes later: the
// earliest divergence wins, whatever the rank). The others wait for rank 0. Every rank throws the last
// rank's Diverged, with its message and iteration.
TEST(MpiWorldFailure, EveryRankThrowsTheEarliestDivergence) {
  const int size = mpi_world().size();
  if (size < 2) GTEST_SKIP() << "needs 2 ranks";
  const int last = size - 1;
  const Caught caught = run_catching([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    if (t.rank() == last)
      throw Diverged(last, 7, "full loss", -std::numeric_limits<double>::infinity());
    if (t.rank() == 0) throw Diverged(0, 9, "loss", std::nan(""));
    std::vector<float> never(4);
    t.recv(BufferView::of(std::span(never)), 0, 1);
  });
  EXPECT_EQ(caught.type, "diverged");
  EXPECT_EQ(caught.what, "diverged: full loss -inf at iteration 7 on rank " + std::to_string(last));
  EXPECT_EQ(caught.iteration, 7);
}

// A config error of one rank only (the others return): every rank throws it as a ConfigError; then a
// run in which every rank succeeds throws nothing.
TEST(MpiWorldFailure, AConfigErrorOfOneRankIsEveryRanksConfigError) {
  const int size = mpi_world().size();
  const int last = size - 1;
  const Caught caught = run_catching([&](RankContext& ctx) {
    if (ctx.transport().rank() == last) throw ConfigError("algorithm.x: bad on this rank");
  });
  EXPECT_EQ(caught.type, "config");
  EXPECT_EQ(caught.what, "algorithm.x: bad on this rank");
  EXPECT_EQ(run_catching([](RankContext&) {}).type, "none");
}

// The links a config states reach the transport of the next runs and the subgroups made in them
// (World::set_link_hint), so that NCCL's tuner on this runtime reads them as the simulator's does;
// none is reported before one is set, nor after it is cleared.
TEST(MpiWorldLinkHint, TheLinksSetForARunAreTheTransportsAndItsSubgroups) {
  LinkHint hint{Bandwidth::gigabytes_per_second(150), Time::us(1), Bandwidth::bits_per_second(100e6),
                Time::us(50)};
  hint.compute_capability = 90;
  hint.nic_near_device = false;
  std::optional<LinkHint> before, seen, in_subgroup, after;
  mpi_world().run([&](RankContext& ctx) { before = ctx.transport().link_hint(); });
  mpi_world().set_link_hint(hint);
  mpi_world().run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    seen = t.link_hint();
    const std::vector<int> everyone = [&] {
      std::vector<int> all(static_cast<size_t>(t.size()));
      for (int r = 0; r < t.size(); ++r)
        all[static_cast<size_t>(r)] = r;
      return all;
    }();
    in_subgroup = t.subgroup(everyone)->link_hint();
  });
  mpi_world().set_link_hint(std::nullopt);
  mpi_world().run([&](RankContext& ctx) { after = ctx.transport().link_hint(); });
  EXPECT_FALSE(before.has_value());
  EXPECT_FALSE(after.has_value());
  for (const std::optional<LinkHint>& h : {seen, in_subgroup}) {
    ASSERT_TRUE(h.has_value());
    EXPECT_EQ(h->inter_host.bytes_per_second(), hint.inter_host.bytes_per_second());
    EXPECT_EQ(h->inter_host_latency, hint.inter_host_latency);
    EXPECT_EQ(h->intra_host.bytes_per_second(), hint.intra_host.bytes_per_second());
    EXPECT_EQ(h->intra_host_latency, hint.intra_host_latency);
    EXPECT_EQ(h->compute_capability, 90);
    EXPECT_FALSE(h->nic_near_device);
  }
}

}  // namespace
}  // namespace bagua
