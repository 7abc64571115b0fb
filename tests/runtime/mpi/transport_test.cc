// The MPI transport under mpirun (2 and 4 ranks): point-to-point semantics, subgroups, hosts, meta
// buffers, the native allreduce and concurrent use from two threads of one rank.
#include "runtime/mpi/transport.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <thread>
#include <vector>

#include "core/ops.h"
#include "tests/runtime/mpi/support.h"

namespace bagua {
namespace {

using runtime::mpi::MpiTransport;
using testing::first_mismatch;
using testing::mpi_world;

int right_of(const Transport& t) {
  return (t.rank() + 1) % t.size();
}
int left_of(const Transport& t) {
  return (t.rank() + t.size() - 1) % t.size();
}

TEST(MpiTransport, RingOfMessagesArrivesInOrder) {
  Transport& t = mpi_world().context().transport();
  for (int i = 0; i < 10; ++i) {
    std::vector<int32_t> out{t.rank() * 100 + i};
    std::vector<int32_t> in{-1};
    t.sendrecv(BufferView::of(std::span(out)), right_of(t), BufferView::of(std::span(in)), left_of(t),
               7);
    EXPECT_EQ(in[0], left_of(t) * 100 + i) << "rank " << t.rank() << " message " << i;
  }
}

TEST(MpiTransport, TagsKeepConcurrentOperationsApart) {
  // Large enough (1 MiB) that MPI cannot send eagerly: the receive of tag 2 is posted first, so the
  // send of tag 1 can only complete because matching is per tag.
  Transport& t = mpi_world().context().transport();
  constexpr size_t kCount = 1 << 18;
  if (t.rank() == 0) {
    std::vector<int32_t> a(kCount, 1), b(kCount, 2);
    std::vector<RequestPtr> sends;
    sends.push_back(t.isend(BufferView::of(std::span(a)), 1, /*tag=*/1));
    sends.push_back(t.isend(BufferView::of(std::span(b)), 1, /*tag=*/2));
    wait_all(sends);
  } else if (t.rank() == 1) {
    std::vector<int32_t> x(kCount, 0), y(kCount, 0);
    t.recv(BufferView::of(std::span(y)), 0, 2);
    t.recv(BufferView::of(std::span(x)), 0, 1);
    EXPECT_EQ(x.front(), 1);
    EXPECT_EQ(x.back(), 1);
    EXPECT_EQ(y.front(), 2);
    EXPECT_EQ(y.back(), 2);
  }
}

TEST(MpiTransport, MessagesWithOneTagMatchInPostingOrder) {
  // Rank 0 posts 20 messages on each of two tags, interleaved; rank 1 posts the receives of tag 6
  // before those of tag 5. Within a tag, message i lands in receive i.
  Transport& t = mpi_world().context().transport();
  constexpr int kMessages = 20;
  if (t.rank() == 0) {
    std::vector<int32_t> values(2 * kMessages);
    std::vector<RequestPtr> sends;
    for (int i = 0; i < kMessages; ++i) {
      values[2 * i] = 500 + i;
      values[2 * i + 1] = 600 + i;
      sends.push_back(t.isend(BufferView::of(std::span(values).subspan(2 * i, 1)), 1, 5));
      sends.push_back(t.isend(BufferView::of(std::span(values).subspan(2 * i + 1, 1)), 1, 6));
    }
    wait_all(sends);
  } else if (t.rank() == 1) {
    std::vector<int32_t> five(kMessages, -1), six(kMessages, -1);
    std::vector<RequestPtr> receives;
    for (int i = 0; i < kMessages; ++i)
      receives.push_back(t.irecv(BufferView::of(std::span(six).subspan(i, 1)), 0, 6));
    for (int i = 0; i < kMessages; ++i)
      receives.push_back(t.irecv(BufferView::of(std::span(five).subspan(i, 1)), 0, 5));
    wait_all(receives);
    for (int i = 0; i < kMessages; ++i) {
      EXPECT_EQ(five[i], 500 + i) << "tag 5 message " << i;
      EXPECT_EQ(six[i], 600 + i) << "tag 6 message " << i;
    }
  }
}

TEST(MpiTransport, EmptyAndOddSizedMessages) {
  Transport& t = mpi_world().context().transport();
  for (size_t count : {size_t{0}, size_t{1}, size_t{3}, size_t{1001}}) {
    std::vector<uint8_t> out(count), in(count, 0);
    for (size_t i = 0; i < count; ++i)
      out[i] = static_cast<uint8_t>(t.rank() * 31 + i);
    t.sendrecv(BufferView::of(std::span(out)), right_of(t), BufferView::of(std::span(in)), left_of(t),
               9);
    for (size_t i = 0; i < count; ++i)
      EXPECT_EQ(in[i], static_cast<uint8_t>(left_of(t) * 31 + i))
          << "count " << count << " index " << i;
  }
}

TEST(MpiTransport, TestPollsUntilTheMessageArrives) {
  Transport& t = mpi_world().context().transport();
  std::vector<double> out{t.rank() + 0.5}, in{0};
  RequestPtr receive = t.irecv(BufferView::of(std::span(in)), left_of(t), 11);
  RequestPtr send = t.isend(BufferView::of(std::span(out)), right_of(t), 11);
  while (!receive->test())
    std::this_thread::yield();
  EXPECT_TRUE(receive->test());  // stays complete
  send->wait();
  EXPECT_EQ(in[0], left_of(t) + 0.5);
}

TEST(MpiTransport, HostsAreDetectedOrGivenByRanksPerHost) {
  Transport& detected = mpi_world().context().transport();
  for (int r = 0; r < detected.size(); ++r)
    EXPECT_EQ(detected.host_of(r), 0) << "one machine, rank " << r;

  MpiTransport two_per_host(MPI_COMM_WORLD, /*ranks_per_host=*/2);
  EXPECT_EQ(two_per_host.rank(), detected.rank());
  EXPECT_EQ(two_per_host.size(), detected.size());
  for (int r = 0; r < two_per_host.size(); ++r)
    EXPECT_EQ(two_per_host.host_of(r), r / 2);
  const HostLayout layout = host_layout(two_per_host);
  EXPECT_EQ(layout.my_host, detected.rank() / 2);
  EXPECT_EQ(layout.local_rank, detected.rank() % 2);
}

TEST(MpiTransport, SubgroupRenumbersAndKeepsHosts) {
  MpiTransport t(MPI_COMM_WORLD, /*ranks_per_host=*/2);
  // Two subgroups, even and odd world ranks, each listed in descending order: a member's new number is
  // its position in the list.
  std::vector<int> mine;
  for (int r = t.size() - 1; r >= 0; --r)
    if (r % 2 == t.rank() % 2) mine.push_back(r);
  auto g = t.subgroup(mine);
  const int n = static_cast<int>(mine.size());
  EXPECT_EQ(g->size(), n);
  const int position = static_cast<int>(std::find(mine.begin(), mine.end(), t.rank()) - mine.begin());
  EXPECT_EQ(g->rank(), position);
  for (int i = 0; i < n; ++i)
    EXPECT_EQ(g->host_of(i), mine[i] / 2) << "subgroup rank " << i;

  std::vector<int32_t> out{t.rank()}, in{-1};
  g->sendrecv(BufferView::of(std::span(out)), right_of(*g), BufferView::of(std::span(in)), left_of(*g),
              0);
  EXPECT_EQ(in[0], mine[static_cast<size_t>(left_of(*g))]);

  // Nested: a subgroup of a subgroup, here the first member alone.
  if (g->rank() == 0) {
    std::vector<int> first{0};
    auto alone = g->subgroup(first);
    EXPECT_EQ(alone->size(), 1);
    EXPECT_EQ(alone->rank(), 0);
    std::vector<int32_t> self_out{42}, self_in{0};
    alone->sendrecv(BufferView::of(std::span(self_out)), 0, BufferView::of(std::span(self_in)), 0, 1);
    EXPECT_EQ(self_in[0], 42);
  }
}

TEST(MpiTransport, SubgroupOfSomeRanksLeavesOthersOut) {
  // Only the last and the first rank build a group, listed last first; the others do not call.
  MpiTransport t(MPI_COMM_WORLD);
  const int last = t.size() - 1;
  if (t.rank() == 0 || t.rank() == last) {
    std::vector<int> pair{last, 0};
    auto g = t.subgroup(pair);
    EXPECT_EQ(g->size(), 2);
    EXPECT_EQ(g->rank(), t.rank() == last ? 0 : 1);
    std::vector<int32_t> out{t.rank()}, in{-1};
    const int other = 1 - g->rank();
    g->sendrecv(BufferView::of(std::span(out)), other, BufferView::of(std::span(in)), other, 3);
    EXPECT_EQ(in[0], t.rank() == last ? 0 : last);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(MpiTransport, MetaSendPutsItsFullSizeOnTheWire) {
  MpiTransport t(MPI_COMM_WORLD);
  constexpr size_t kCount = 1000;  // f32: 4000 bytes
  if (t.rank() == 0) {
    t.send(Buffer::meta(DType::kF32, kCount), 1, 3);
  } else if (t.rank() == 1) {
    // Look at the message MPI delivers, on the transport's own communicator.
    MPI_Status status;
    MPI_Probe(0, 3, t.comm(), &status);
    int bytes = -1;
    MPI_Get_count(&status, MPI_BYTE, &bytes);
    EXPECT_EQ(bytes, 4000);
    std::vector<uint8_t> sink(static_cast<size_t>(bytes));
    MPI_Recv(sink.data(), bytes, MPI_BYTE, 0, 3, t.comm(), MPI_STATUS_IGNORE);
  }
}

TEST(MpiTransport, MetaReceiveTakesAFullSizedMessage) {
  MpiTransport t(MPI_COMM_WORLD);
  if (t.rank() == 0) {
    std::vector<double> real(250, 1.5);  // 2000 bytes, sent by plain MPI
    MPI_Send(real.data(), 2000, MPI_BYTE, 1, 4, t.comm());
  } else if (t.rank() == 1) {
    t.recv(Buffer::meta(DType::kF64, 250), 0, 4);  // completes only once all 2000 bytes have arrived
    SUCCEED();
  }
}

TEST(MpiTransport, MetaRingsOfManySizesRunConcurrently) {
  // Several meta exchanges in flight at once, each on its own scratch (1 B to 8 MiB).
  Transport& t = mpi_world().context().transport();
  std::vector<Buffer> outs, ins;
  std::vector<RequestPtr> requests;
  for (size_t count = 1; count <= (size_t{8} << 20); count *= 16) {
    outs.push_back(Buffer::meta(DType::kU8, count));
    ins.push_back(Buffer::meta(DType::kU8, count));
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    requests.push_back(t.irecv(ins[i], left_of(t), static_cast<Tag>(100 + i)));
    requests.push_back(t.isend(outs[i], right_of(t), static_cast<Tag>(100 + i)));
  }
  wait_all(requests);
  for (auto& r : requests)
    EXPECT_TRUE(r->test());
}

TEST(MpiTransport, ShortMessageFailsTheReceive) {
  // A receive naming 44 bytes for a 40-byte send is a bug in the caller, caught when it completes.
  MpiTransport t(MPI_COMM_WORLD);
  if (t.rank() == 0) {
    t.send(Buffer::meta(DType::kF32, 10), 1, 0);
  } else if (t.rank() == 1) {
    Buffer longer = Buffer::host(DType::kF32, 11);
    EXPECT_THROW(t.recv(longer, 0, 0), InternalError);
  }
}

// A device space for the error test: nothing is ever allocated or copied in it.
class FakeDeviceSpace final : public Space {
 public:
  Memory memory() const override { return Memory::kDevice; }
  std::string name() const override { return "fake device"; }
  void* allocate(size_t) const override { return nullptr; }
  void deallocate(void*) const override {}
  void copy(const BufferView&, const BufferView&) const override {}
  void reduce(const BufferView&, const BufferView&, ReduceOp) const override {}
  void scale(const BufferView&, double) const override {}
  void axpy(const BufferView&, double, const BufferView&) const override {}
  void fill(const BufferView&, double) const override {}
};

TEST(MpiTransport, DeviceBuffersAndTagsBeyondTheBoundAreRefused) {
  Transport& t = mpi_world().context().transport();
  const FakeDeviceSpace device;
  float slot = 0;
  const BufferView on_device(&slot, 1, DType::kF32, &device);
  EXPECT_THROW(t.isend(on_device, right_of(t), 0), ConfigError);
  EXPECT_THROW(t.irecv(on_device, left_of(t), 0), ConfigError);
  EXPECT_THROW(t.native_allreduce(on_device, ReduceOp::kSum), ConfigError);

  auto& mpi = dynamic_cast<MpiTransport&>(t);
  int* ub = nullptr;
  int found = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found);
  EXPECT_EQ(mpi.max_tag(), static_cast<Tag>(*ub));
  std::vector<int32_t> one{1};
  if (mpi.max_tag() < UINT32_MAX) {
    EXPECT_THROW(t.isend(BufferView::of(std::span(one)), right_of(t), mpi.max_tag() + 1),
                 InternalError);
  }
  EXPECT_THROW(t.isend(BufferView::of(std::span(one)), t.size(), 0), InternalError);
}

TEST(MpiTransport, NativeAllreduceMatchesClosedForms) {
  Transport& t = mpi_world().context().transport();
  const int p = t.size();
  const int r = t.rank();
  constexpr size_t kCount = 1001;

  // f32 sum: rank r holds r + 1 + i, so the sum is P(P+1)/2 + P i (exact in float at these sizes).
  Buffer f = Buffer::host(DType::kF32, kCount);
  for (size_t i = 0; i < kCount; ++i)
    f.as<float>()[i] = static_cast<float>(r + 1 + static_cast<int>(i));
  EXPECT_TRUE(t.native_allreduce(f, ReduceOp::kSum));
  EXPECT_EQ(first_mismatch(f.as<float>(),
                           [&](size_t i) { return p * (p + 1) / 2 + p * static_cast<int>(i); }),
            "");

  // f64 min: rank r holds i - r, the minimum is i - (P-1).
  Buffer d = Buffer::host(DType::kF64, kCount);
  for (size_t i = 0; i < kCount; ++i)
    d.as<double>()[i] = static_cast<double>(i) - r;
  EXPECT_TRUE(t.native_allreduce(d, ReduceOp::kMin));
  EXPECT_EQ(first_mismatch(d.as<double>(), [&](size_t i) { return static_cast<double>(i) - (p - 1); }),
            "");

  // i32 max: rank r holds r i, the maximum is (P-1) i.
  Buffer n = Buffer::host(DType::kI32, kCount);
  for (size_t i = 0; i < kCount; ++i)
    n.as<int32_t>()[i] = r * static_cast<int32_t>(i);
  EXPECT_TRUE(t.native_allreduce(n, ReduceOp::kMax));
  EXPECT_EQ(
      first_mismatch(n.as<int32_t>(), [&](size_t i) { return (p - 1) * static_cast<int32_t>(i); }), "");

  // i64 sum beyond 32 bits: rank r holds 2^40 + r, the sum is P 2^40 + P(P-1)/2.
  Buffer w = Buffer::host(DType::kI64, 3);
  for (int64_t& v : w.as<int64_t>())
    v = (int64_t{1} << 40) + r;
  EXPECT_TRUE(t.native_allreduce(w, ReduceOp::kSum));
  EXPECT_EQ(
      first_mismatch(w.as<int64_t>(), [&](size_t) { return p * (int64_t{1} << 40) + p * (p - 1) / 2; }),
      "");

  // Meta: real bytes are reduced on scratch; dtypes MPI has no reduction for here are declined.
  EXPECT_TRUE(t.native_allreduce(Buffer::meta(DType::kF32, 1 << 20), ReduceOp::kSum));
  EXPECT_FALSE(t.native_allreduce(Buffer::host(DType::kF16, 4), ReduceOp::kSum));
}

TEST(MpiTransport, TwoThreadsOfOneRankCommunicateConcurrently) {
  // Each rank runs two rings at once, one per thread, on different tags and sizes; every message
  // carries (sender, thread, round) so that a crossed message would be seen.
  Transport& t = mpi_world().context().transport();
  constexpr int kRounds = 200;
  auto ring = [&t](int thread, size_t count, int* errors) {
    std::vector<int32_t> out(count), in(count);
    for (int round = 0; round < kRounds; ++round) {
      std::fill(out.begin(), out.end(), t.rank() * 1000000 + thread * 10000 + round);
      t.sendrecv(BufferView::of(std::span(out)), right_of(t), BufferView::of(std::span(in)), left_of(t),
                 static_cast<Tag>(20 + thread));
      const int32_t expected = left_of(t) * 1000000 + thread * 10000 + round;
      if (in.front() != expected || in.back() != expected) ++*errors;
    }
  };
  int errors_a = 0, errors_b = 0;
  std::thread a(ring, 0, 1, &errors_a);
  std::thread b(ring, 1, 70000, &errors_b);  // 280 KB: beyond the eager limit
  a.join();
  b.join();
  EXPECT_EQ(errors_a, 0);
  EXPECT_EQ(errors_b, 0);
}

TEST(MpiTransport, CommunicationStreamRunsBesideTheMainThread) {
  RankContext& ctx = mpi_world().context();
  Transport& t = ctx.transport();
  auto comm = ctx.make_stream("comm");
  std::vector<int32_t> stream_out{t.rank()}, stream_in{-1};
  EventPtr done = comm->submit([&] {
    t.sendrecv(BufferView::of(std::span(stream_out)), right_of(t), BufferView::of(std::span(stream_in)),
               left_of(t), 30);
  });
  std::vector<int32_t> main_out{-t.rank()}, main_in{1};
  t.sendrecv(BufferView::of(std::span(main_out)), left_of(t), BufferView::of(std::span(main_in)),
             right_of(t), 31);
  done->wait();
  comm->synchronize();
  EXPECT_EQ(stream_in[0], left_of(t));
  EXPECT_EQ(main_in[0], -right_of(t));
}

TEST(MpiTransport, DroppedRequestsStillComplete) {
  // A send whose handle is dropped still delivers; a receive dropped unmatched is cancelled when its
  // transport goes away.
  // `out` outlives the transport, whose destruction waits for the dropped send that reads it.
  std::vector<int32_t> out(100000, mpi_world().rank()), in(100000, -1);
  {
    MpiTransport t(MPI_COMM_WORLD);
    t.isend(BufferView::of(std::span(out)), right_of(t), 1);     // dropped at once
    t.isend(Buffer::meta(DType::kF32, 100000), right_of(t), 2);  // dropped, on scratch
    t.irecv(Buffer::meta(DType::kF32, 5), left_of(t), 77);       // never matched
    t.recv(BufferView::of(std::span(in)), left_of(t), 1);
    t.recv(Buffer::meta(DType::kF32, 100000), left_of(t), 2);
    EXPECT_EQ(in.front(), left_of(t));
    EXPECT_EQ(in.back(), left_of(t));
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(MpiWorld, ProvidesTheProcessRankAndAClock) {
  runtime::mpi::MpiWorld& world = mpi_world();
  int rank = -1, size = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EXPECT_EQ(world.rank(), rank);
  EXPECT_EQ(world.size(), size);
  EXPECT_TRUE(runtime::mpi::MpiWorld::launched_by_mpirun());
  int ran = 0;
  world.run([&](RankContext& ctx) {
    ++ran;
    EXPECT_EQ(ctx.transport().rank(), rank);
    const Time before = ctx.clock().now();
    EXPECT_GE(before, Time::zero());  // the origin was taken at the world's start
    EXPECT_GE(ctx.clock().now(), before);
    EXPECT_EQ(ctx.space().memory(), Memory::kHost);
    EventPtr e = ctx.make_event();
    EXPECT_FALSE(e->test());
    e->set();
    EXPECT_TRUE(e->test());
  });
  EXPECT_EQ(ran, 1);
}

}  // namespace
}  // namespace bagua
