// NcclTransport: ring steps on device, host and meta buffers, many operations in flight at once, the
// two lanes used by two threads of a rank at the same time, subgroups, and ncclAllReduce. Every test
// runs on every rank of the job (1 rank alone, 2 under mpirun), with closed-form expected values.
#include "runtime/mpi/transport.h"

#include <mpi.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "core/collectives/collectives.h"
#include "tests/runtime/nccl/support.h"

namespace bagua {
namespace {

using testing::first_mismatch;
using testing::NcclTest;
using testing::on_host;

int mod(int a, int n) {
  return ((a % n) + n) % n;
}

// Rank r's message at index i: r * 1000003 + i (distinct for every rank and index).
std::vector<int32_t> message(int rank, size_t count) {
  std::vector<int32_t> v(count);
  for (size_t i = 0; i < count; ++i)
    v[i] = rank * 1000003 + static_cast<int32_t>(i);
  return v;
}

const std::vector<size_t> kCounts = {1, 1003, size_t{1} << 20};  // up to 4 MiB per message

TEST_F(NcclTest, RingStepOnDeviceBuffers) {
  Transport& t = context().transport();
  const int right = mod(t.rank() + 1, t.size());
  const int left = mod(t.rank() - 1, t.size());
  for (size_t count : kCounts) {
    Buffer out = on_device(message(t.rank(), count));
    Buffer in = on_device(std::vector<int32_t>(count, -1));
    t.sendrecv(out, right, in, left, /*tag=*/1);
    EXPECT_EQ(first_mismatch(on_host<int32_t>(in),
                             [&](size_t i) { return left * 1000003 + static_cast<int32_t>(i); }),
              "")
        << "count " << count << " P=" << t.size();
  }
}

TEST_F(NcclTest, HostBuffersAreStagedAndTestPollsToCompletion) {
  Transport& t = context().transport();
  const int right = mod(t.rank() + 1, t.size());
  const int left = mod(t.rank() - 1, t.size());
  for (size_t count : kCounts) {
    std::vector<int32_t> out = message(t.rank(), count);
    std::vector<int32_t> in(count, -1);
    RequestPtr r = t.irecv(BufferView::of(std::span<int32_t>(in)), left, 2);
    RequestPtr s = t.isend(BufferView::of(std::span<int32_t>(out)), right, 2);
    out.assign(count, -7);  // a host send's bytes were taken at isend
    while (!r->test()) {
    }
    s->wait();
    EXPECT_TRUE(r->test());  // stays complete
    EXPECT_EQ(first_mismatch(in, [&](size_t i) { return left * 1000003 + static_cast<int32_t>(i); }),
              "")
        << "count " << count;
  }
}

TEST_F(NcclTest, MetaAndEmptyBuffersCompleteWithoutData) {
  Transport& t = context().transport();
  const int right = mod(t.rank() + 1, t.size());
  const int left = mod(t.rank() - 1, t.size());
  // Meta: full-size messages from and into scratch; growing sizes make the scratch grow while earlier
  // groups may still use the old one.
  for (size_t count : {size_t{10}, size_t{1} << 16, size_t{1} << 22})
    t.sendrecv(Buffer::meta(DType::kF32, count), right, Buffer::meta(DType::kF32, count), left, 3);
  // Empty: complete at once, nothing sent.
  Buffer none(device(), DType::kF32, 0);
  RequestPtr s = t.isend(none, right, 4);
  RequestPtr r = t.irecv(none, left, 4);
  EXPECT_TRUE(s->test());
  EXPECT_TRUE(r->test());
}

TEST_F(NcclTest, EveryPairAtOnceInOneGroup) {
  // Each rank posts a receive from every rank (itself included) and a send to every rank, then waits
  // for all: one group per rank, matched per pair in posting order — two messages per pair, in order.
  Transport& t = context().transport();
  const int p = t.size();
  constexpr size_t kCount = 257;
  std::vector<Buffer> first, second;
  std::vector<RequestPtr> requests;
  for (int peer = 0; peer < p; ++peer) {
    first.push_back(on_device(std::vector<int32_t>(kCount, -1)));
    second.push_back(on_device(std::vector<int32_t>(kCount, -1)));
    requests.push_back(t.irecv(first.back(), peer, 5));
    requests.push_back(t.irecv(second.back(), peer, 5));
  }
  std::vector<Buffer> outgoing;
  for (int peer = 0; peer < p; ++peer) {
    outgoing.push_back(on_device(message(t.rank() * 100 + peer, kCount)));  // first message to `peer`
    outgoing.push_back(on_device(message(t.rank() * 100 + peer + 50, kCount)));  // second
    requests.push_back(t.isend(outgoing[outgoing.size() - 2], peer, 5));
    requests.push_back(t.isend(outgoing.back(), peer, 5));
  }
  wait_all(requests);
  for (int peer = 0; peer < p; ++peer) {
    const int32_t base = (peer * 100 + t.rank()) * 1000003;
    EXPECT_EQ(first_mismatch(on_host<int32_t>(first[static_cast<size_t>(peer)]),
                             [&](size_t i) { return base + static_cast<int32_t>(i); }),
              "")
        << "first message from " << peer;
    EXPECT_EQ(first_mismatch(on_host<int32_t>(second[static_cast<size_t>(peer)]),
                             [&](size_t i) { return base + 50 * 1000003 + static_cast<int32_t>(i); }),
              "")
        << "second message from " << peer;
  }
}

// Rank r contributes (r + 1) * w(i), w(i) = i % 13 + 1: the sum over P ranks is P(P+1)/2 * w(i).
std::vector<int32_t> contribution(int rank, size_t count, int32_t factor = 1) {
  std::vector<int32_t> v(count);
  for (size_t i = 0; i < count; ++i)
    v[i] = factor * (rank + 1) * static_cast<int32_t>(i % 13 + 1);
  return v;
}
int32_t summed(int p, size_t i, int32_t factor = 1) {
  return factor * p * (p + 1) / 2 * static_cast<int32_t>(i % 13 + 1);
}

TEST_F(NcclTest, TwoThreadsOfARankCommunicateAtOnceOnTheirOwnLanes) {
  // The compute thread (lane 0) and a stream's thread (lane 1) run ring allreduces at the same time, on
  // different data, several rounds each; neither disturbs the other.
  Transport& t = context().transport();
  constexpr size_t kCount = 100003;
  constexpr int kRounds = 5;
  std::unique_ptr<Stream> comm = context().make_stream("communication");
  std::vector<Buffer> background;
  for (int round = 0; round < kRounds; ++round)
    background.push_back(on_device(contribution(t.rank(), kCount, 1000 + round)));
  for (int round = 0; round < kRounds; ++round)
    comm->submit([&t, &background, round] {
      collectives::ring_allreduce(t, background[static_cast<size_t>(round)], ReduceOp::kSum, 7);
    });
  for (int round = 0; round < kRounds; ++round) {
    Buffer data = on_device(contribution(t.rank(), kCount, round + 1));
    collectives::ring_allreduce(t, data, ReduceOp::kSum, 6);
    EXPECT_EQ(first_mismatch(on_host<int32_t>(data),
                             [&](size_t i) { return summed(t.size(), i, round + 1); }),
              "")
        << "compute thread, round " << round;
  }
  comm->synchronize();
  for (int round = 0; round < kRounds; ++round)
    EXPECT_EQ(first_mismatch(on_host<int32_t>(background[static_cast<size_t>(round)]),
                             [&](size_t i) { return summed(t.size(), i, 1000 + round); }),
              "")
        << "communication thread, round " << round;
}

TEST_F(NcclTest, ASecondStreamAtOnceIsRefusedWhenMade) {
  // Lane 1 carries one stream's operations in posting order: a second stream alive at the same time is
  // a ConfigError naming both, and once the first is destroyed another may be made.
  std::unique_ptr<Stream> first = context().make_stream("communication");
  try {
    std::unique_ptr<Stream> second = context().make_stream("byteps reduce");
    ADD_FAILURE() << "a second stream was made while \"communication\" was alive";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("\"byteps reduce\""), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("\"communication\""), std::string::npos) << e.what();
  }
  first.reset();
  std::unique_ptr<Stream> again = context().make_stream("communication");
  EXPECT_EQ(again->name(), "communication");
}

TEST_F(NcclTest, SubgroupsRenumberTheirMembers) {
  // The group of every rank in reverse order (rank r is member P - 1 - r), and the group of all ranks
  // but the last. A ring allreduce in each, then a message from member 0 to the last member.
  Transport& world_transport = context().transport();
  const int p = world_transport.size();
  std::vector<int> reversed(static_cast<size_t>(p));
  std::iota(reversed.rbegin(), reversed.rend(), 0);
  std::vector<std::vector<int>> lists = {reversed};
  if (p > 1) {
    std::vector<int> most(static_cast<size_t>(p - 1));
    std::iota(most.begin(), most.end(), 0);
    lists.push_back(most);
  }
  for (const std::vector<int>& list : lists) {
    const auto place = std::find(list.begin(), list.end(), world_transport.rank());
    if (place == list.end()) continue;  // not a member: the members do not wait for this rank
    std::unique_ptr<Transport> group = world_transport.subgroup(list);
    EXPECT_EQ(group->rank(), static_cast<int>(place - list.begin()));
    EXPECT_EQ(group->size(), static_cast<int>(list.size()));
    EXPECT_EQ(group->host_of(group->rank()), world_transport.host_of(world_transport.rank()));
    Buffer data = on_device(contribution(group->rank(), 1003));
    collectives::ring_allreduce(*group, data, ReduceOp::kSum, 8);
    EXPECT_EQ(
        first_mismatch(on_host<int32_t>(data), [&](size_t i) { return summed(group->size(), i); }), "");
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

template <class T>
void check_native_allreduce(Transport& t, const Space& device, ReduceOp op, size_t count) {
  // Rank r holds (r + 1) * w(i): sum P(P+1)/2 w(i), min w(i), max P w(i) — exact in every dtype.
  const int p = t.size();
  auto expected = [&](size_t i) -> T {
    const T w = static_cast<T>(i % 13 + 1);
    switch (op) {
      case ReduceOp::kSum:
        return static_cast<T>(p * (p + 1) / 2) * w;
      case ReduceOp::kMin:
        return w;
      case ReduceOp::kMax:
        return static_cast<T>(p) * w;
    }
    return T(0);
  };
  std::vector<T> host(count);
  for (size_t i = 0; i < count; ++i)
    host[i] = static_cast<T>(t.rank() + 1) * static_cast<T>(i % 13 + 1);
  Buffer data(device, dtype_of<T>(), count);
  copy(data, BufferView::of(std::span<T>(host)));
  EXPECT_TRUE(t.native_allreduce(data, op));
  EXPECT_EQ(first_mismatch(on_host<T>(data), expected), "")
      << "device " << to_string(dtype_of<T>()) << " " << to_string(op) << " count " << count;
  // The same from host memory (staged).
  EXPECT_TRUE(t.native_allreduce(BufferView::of(std::span<T>(host)), op));
  EXPECT_EQ(first_mismatch(host, expected), "")
      << "host " << to_string(dtype_of<T>()) << " " << to_string(op) << " count " << count;
}

TEST_F(NcclTest, NativeAllreduceMatchesClosedForm) {
  Transport& t = context().transport();
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax}) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{1003}, size_t{1} << 18}) {
      check_native_allreduce<float>(t, device(), op, count);
      check_native_allreduce<double>(t, device(), op, count);
      check_native_allreduce<int32_t>(t, device(), op, count);
      check_native_allreduce<int64_t>(t, device(), op, count);
    }
  }
  EXPECT_TRUE(t.native_allreduce(Buffer::meta(DType::kF32, 1 << 20), ReduceOp::kSum));
  Buffer halves(device(), DType::kF16, 8);
  EXPECT_FALSE(t.native_allreduce(halves, ReduceOp::kSum));  // no f16 reduction in this runtime
}

TEST_F(NcclTest, HostOfAgreesWithMpi) {
  Transport& t = context().transport();
  runtime::mpi::MpiTransport mpi(MPI_COMM_WORLD);
  for (int r = 0; r < t.size(); ++r)
    EXPECT_EQ(t.host_of(r), mpi.host_of(r)) << "rank " << r;
}

}  // namespace
}  // namespace bagua
