#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "core/ops.h"
#include "runtime/threads/world.h"

namespace bagua {
namespace {

TEST(Threads, RingOfMessagesArrivesInOrder) {
  constexpr int kRanks = 5;
  runtime::threads::ThreadsWorld(kRanks).run([](RankContext& ctx) {
    Transport& t = ctx.transport();
    const int right = (t.rank() + 1) % t.size();
    const int left = (t.rank() + t.size() - 1) % t.size();
    for (int i = 0; i < 10; ++i) {
      std::vector<int32_t> out{t.rank() * 100 + i};
      std::vector<int32_t> in{-1};
      t.sendrecv(BufferView::of(std::span(out)), right, BufferView::of(std::span(in)), left, 7);
      EXPECT_EQ(in[0], left * 100 + i) << "rank " << t.rank() << " message " << i;
    }
  });
}

TEST(Threads, TagsKeepConcurrentOperationsApart) {
  runtime::threads::ThreadsWorld(2).run([](RankContext& ctx) {
    Transport& t = ctx.transport();
    std::vector<int32_t> a{1}, b{2};
    if (t.rank() == 0) {
      t.send(BufferView::of(std::span(a)), 1, /*tag=*/1);
      t.send(BufferView::of(std::span(b)), 1, /*tag=*/2);
    } else {
      std::vector<int32_t> x{0}, y{0};
      t.recv(BufferView::of(std::span(y)), 0, 2);  // receive tag 2 first
      t.recv(BufferView::of(std::span(x)), 0, 1);
      EXPECT_EQ(x[0], 1);
      EXPECT_EQ(y[0], 2);
    }
  });
}

TEST(Threads, SubgroupRenumbersAndHostsAreKept) {
  runtime::threads::ThreadsWorld(6, /*ranks_per_host=*/2).run([](RankContext& ctx) {
    Transport& t = ctx.transport();
    EXPECT_EQ(t.host_of(t.rank()), t.rank() / 2);
    std::vector<int> odd{1, 3, 5};
    std::vector<int> even{0, 2, 4};
    auto g = t.subgroup(t.rank() % 2 ? std::span<const int>(odd) : std::span<const int>(even));
    EXPECT_EQ(g->size(), 3);
    EXPECT_EQ(g->rank(), t.rank() / 2);
    EXPECT_EQ(g->host_of(g->rank()), t.rank() / 2);
    std::vector<int32_t> out{t.rank()}, in{-1};
    const int right = (g->rank() + 1) % 3, left = (g->rank() + 2) % 3;
    g->sendrecv(BufferView::of(std::span(out)), right, BufferView::of(std::span(in)), left, 0);
    EXPECT_EQ(in[0], (t.rank() % 2) + 2 * left);
  });
}

TEST(Threads, AFailingRankAbortsTheOthers) {
  EXPECT_THROW(runtime::threads::ThreadsWorld(3).run([](RankContext& ctx) {
    if (ctx.transport().rank() == 1) throw ConfigError("rank 1 is unhappy");
    std::vector<int32_t> in{0};
    ctx.transport().recv(BufferView::of(std::span(in)), 1, 0);  // never sent
  }),
               ConfigError);
}

TEST(Threads, StreamRunsTasksInOrderAndRethrows) {
  runtime::threads::ThreadsWorld(1).run([](RankContext& ctx) {
    auto s = ctx.make_stream("comm");
    std::vector<int> order;
    for (int i = 0; i < 20; ++i)
      s->submit([&order, i] { order.push_back(i); });
    s->synchronize();
    std::vector<int> expected(20);
    std::iota(expected.begin(), expected.end(), 0);
    EXPECT_EQ(order, expected);
    s->submit([] { throw ConfigError("task failed"); });
    EXPECT_THROW(s->synchronize(), ConfigError);
  });
}

TEST(Threads, MetaSendCostsSizeButMovesNothing) {
  runtime::threads::ThreadsWorld(2).run([](RankContext& ctx) {
    Transport& t = ctx.transport();
    Buffer meta = Buffer::meta(DType::kF32, 1000);
    if (t.rank() == 0) {
      t.send(meta, 1, 0);
    } else {
      Buffer real = Buffer::host(DType::kF32, 1000);
      fill(real, 3.0);
      t.recv(real, 0, 0);
      EXPECT_EQ(real.as<float>()[999], 3.0f);  // untouched
    }
  });
}

TEST(Threads, SizeMismatchFailsTheRun) {
  // A receive naming 44 bytes for a 40-byte send is a bug in the caller, caught when they match.
  EXPECT_THROW(runtime::threads::ThreadsWorld(2).run([](RankContext& ctx) {
    Transport& t = ctx.transport();
    if (t.rank() == 0) {
      t.send(Buffer::meta(DType::kF32, 10), 1, 0);
    } else {
      Buffer small = Buffer::host(DType::kF32, 11);
      t.recv(small, 0, 0);
    }
  }),
               InternalError);
}

}  // namespace
}  // namespace bagua
