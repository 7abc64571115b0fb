// Exact simulated times of FIFO transfer per connection (TransportModel::ordered, netsim/network.h
// "connection"): the messages from one world rank to another are one byte stream, each message's
// transfer phase starting at max(the end of its latency phase, the end of the previous message's
// transfer phase on that connection). Worked out by hand on the cluster of support.h: hosts with NIC
// links of 1 GB/s and 0.5 us, a host-to-host route of L = 1000 ns and B = 1e9 B/s.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "netsim/simulation.h"
#include "tests/netsim/support.h"

namespace bagua::netsim {
namespace {

struct Post {
  int src;
  int dst;
  int64_t bytes;
};

// When each message's send and receive completed: every rank posts its sends and receives, all at
// time 0 (message i has tag i), then waits for them in `order` (default: posting order), recording the
// time each wait returns. That is the completion time as long as, on each rank, the messages complete
// in that order, which each test's order is chosen for (a message completing earlier than one before it
// in the order would be recorded late, and its test would fail).
struct Times {
  std::vector<Time> sent;
  std::vector<Time> received;
};

Times run_posts(const ClusterSpec& spec, const std::vector<Post>& posts,
                std::vector<size_t> order = {}) {
  if (order.empty())
    for (size_t i = 0; i < posts.size(); ++i)
      order.push_back(i);
  Times out;
  out.sent.resize(posts.size());
  out.received.resize(posts.size());
  Simulation(spec).run([&](RankContext& ctx) {
    Transport& t = ctx.transport();
    std::vector<RequestPtr> sends(posts.size());
    std::vector<RequestPtr> receives(posts.size());
    for (size_t i = 0; i < posts.size(); ++i) {
      const Post& p = posts[i];
      if (p.src == t.rank()) sends[i] = t.isend(meta_bytes(p.bytes), p.dst, static_cast<Tag>(i));
      if (p.dst == t.rank()) receives[i] = t.irecv(meta_bytes(p.bytes), p.src, static_cast<Tag>(i));
    }
    for (size_t i : order) {
      if (receives[i]) {
        receives[i]->wait();
        out.received[i] = ctx.clock().now();
      }
      if (sends[i]) {
        sends[i]->wait();
        out.sent[i] = ctx.clock().now();
      }
    }
  });
  return out;
}

ClusterSpec ordered(ClusterSpec spec) {
  spec.transport.ordered = true;
  return spec;
}

TEST(OrderedTransfer, OffByDefault) {
  EXPECT_FALSE(TransportModel().ordered);
  EXPECT_FALSE(TransportModel::mpi().ordered);
  EXPECT_FALSE(TransportModel::nccl().ordered);
}

TEST(OrderedTransfer, TwoMessagesToOnePeerLeaveOneAfterTheOther) {
  // Two 1 MB messages from rank 0 to rank 1, posted at 0. Shared (off): two flows at 0.5 GB/s each
  // from L: both land at L + 1e6 / 5e8 s = 1000 + 2'000'000 = 2'001'000 ns. Ordered: the first alone
  // at 1 GB/s lands at L + 1 ms = 1'001'000 ns; the second's latency ended at 1000 ns, its transfer
  // starts at 1'001'000 and lands at 2'001'000 ns.
  const std::vector<Post> posts = {{0, 1, kMB}, {0, 1, kMB}};
  const Times shared = run_posts(hosts_spec(2), posts);
  EXPECT_EQ(shared.received[0], Time::ns(2'001'000));
  EXPECT_EQ(shared.received[1], Time::ns(2'001'000));
  const Times fifo = run_posts(ordered(hosts_spec(2)), posts);
  EXPECT_EQ(fifo.received[0], Time::ns(1'001'000));
  EXPECT_EQ(fifo.received[1], Time::ns(2'001'000));
  // alpha-beta: each send completes when its bytes have landed.
  EXPECT_EQ(fifo.sent[0], Time::ns(1'001'000));
  EXPECT_EQ(fifo.sent[1], Time::ns(2'001'000));
}

TEST(OrderedTransfer, WithinAHostTheSameRuleApplies) {
  // One host of two devices, device links 1 GB/s and 0.5 us: the route dev0.up + dev1.down is
  // L = 1000 ns, B = 1e9 B/s, as between hosts. Ordered: 1'001'000 and 2'001'000 ns.
  ClusterSpec spec = hosts_spec(1, 2);
  spec.intra_host = {Bandwidth::gigabytes_per_second(1), Time::ns(500)};
  const Times fifo = run_posts(ordered(spec), {{0, 1, kMB}, {0, 1, kMB}});
  EXPECT_EQ(fifo.received[0], Time::ns(1'001'000));
  EXPECT_EQ(fifo.received[1], Time::ns(2'001'000));
}

TEST(OrderedTransfer, TheWindowCapsTheConnectionNotEachMessage) {
  // L = 100 us (NIC links of 50 us), a 64 KiB TCP window: W / 2L = 65'536 / 2e-4 s = 3.2768e8 B/s per
  // flow. Two 1 MB messages at once. Shared: each flow capped at 3.2768e8 (together 6.55e8 < B), so
  // the two windows double the pair's rate: both land at L + ceil(1e6 / 3.2768e8 s) =
  // 100'000 + 3'051'758 = 3'151'758 ns. Ordered: the first at 3'151'758 ns, the second then moves at
  // the window rate too: 3'151'758 + 3'051'758 = 6'203'516 ns, which is one message of 2 MB at the
  // window rate: L + ceil(2e6 / 3.2768e8 s) = 100'000 + ceil(6'103'515.6) = 6'203'516 ns.
  ClusterSpec spec = hosts_spec(2);
  spec.nic.latency = Time::us(50);
  spec.factors.tcp_window = Bytes(65'536);
  const std::vector<Post> posts = {{0, 1, kMB}, {0, 1, kMB}};
  const Times shared = run_posts(spec, posts);
  EXPECT_EQ(shared.received[0], Time::ns(3'151'758));
  EXPECT_EQ(shared.received[1], Time::ns(3'151'758));
  const Times fifo = run_posts(ordered(spec), posts);
  EXPECT_EQ(fifo.received[0], Time::ns(3'151'758));
  EXPECT_EQ(fifo.received[1], Time::ns(6'203'516));
  EXPECT_EQ(fifo.received[1], lone_transfer_time(spec, 0, 1, Bytes(2 * kMB)));
}

TEST(OrderedTransfer, MessagesToTwoPeersStillShareTheNicByMaxMin) {
  // Three hosts; rank 0 sends 1 MB to rank 1, 1 MB to rank 1 again and 1 MB to rank 2, at 0. Ordered:
  // connections (0, 1) and (0, 2) each have one flow in transfer, sharing rank 0's NIC up-link max-min:
  // 0.5 GB/s each, landing at L + 2 ms = 2'001'000 ns; then the second message to rank 1 is alone:
  // 2'001'000 + 1'000'000 = 3'001'000 ns. Shared: three flows at 1/3 GB/s: all at
  // 1000 + 3'000'000 = 3'001'000 ns.
  // Waited for in the order 0, 2, 1 (rank 0's sends complete in that order).
  const std::vector<Post> posts = {{0, 1, kMB}, {0, 1, kMB}, {0, 2, kMB}};
  const Times fifo = run_posts(ordered(hosts_spec(3)), posts, {0, 2, 1});
  EXPECT_EQ(fifo.sent[0], Time::ns(2'001'000));
  EXPECT_EQ(fifo.sent[2], Time::ns(2'001'000));
  EXPECT_EQ(fifo.sent[1], Time::ns(3'001'000));
  EXPECT_EQ(fifo.received[0], Time::ns(2'001'000));
  EXPECT_EQ(fifo.received[1], Time::ns(3'001'000));
  EXPECT_EQ(fifo.received[2], Time::ns(2'001'000));
  const Times shared = run_posts(hosts_spec(3), posts, {0, 2, 1});
  for (Time t : shared.received)
    EXPECT_EQ(t, Time::ns(3'001'000));
  // Two peers, one message each: the same max-min share with the option on or off: 2'001'000 ns.
  const Times two = run_posts(ordered(hosts_spec(3)), {{0, 1, kMB}, {0, 2, kMB}});
  EXPECT_EQ(two.received[0], Time::ns(2'001'000));
  EXPECT_EQ(two.received[1], Time::ns(2'001'000));
}

TEST(OrderedTransfer, TheConnectionIsTheOrderedPairOfRanks) {
  // Rank 0 -> 1 and rank 1 -> 0 are two connections (full-duplex links): both land at
  // L + 1 ms = 1'001'000 ns. Rank 0 -> 1 in two groups (the world and a subgroup of {0, 1}): one
  // connection, so 1'001'000 and 2'001'000 ns.
  const Times both_ways = run_posts(ordered(hosts_spec(2)), {{0, 1, kMB}, {1, 0, kMB}});
  EXPECT_EQ(both_ways.received[0], Time::ns(1'001'000));
  EXPECT_EQ(both_ways.received[1], Time::ns(1'001'000));
  std::vector<Time> landed(2);
  Simulation(ordered(hosts_spec(2))).run([&](RankContext& ctx) {
    Transport& world = ctx.transport();
    const std::vector<int> members = {0, 1};
    std::unique_ptr<Transport> group = world.subgroup(members);
    if (world.rank() == 0) {
      RequestPtr a = world.isend(meta_bytes(kMB), 1, 0);
      RequestPtr b = group->isend(meta_bytes(kMB), 1, 0);
      a->wait();
      landed[0] = ctx.clock().now();
      b->wait();
      landed[1] = ctx.clock().now();
    } else {
      RequestPtr a = world.irecv(meta_bytes(kMB), 0, 0);
      RequestPtr b = group->irecv(meta_bytes(kMB), 0, 0);
      a->wait();
      b->wait();
    }
  });
  EXPECT_EQ(landed[0], Time::ns(1'001'000));
  EXPECT_EQ(landed[1], Time::ns(2'001'000));
}

TEST(OrderedTransfer, AnEmptyMessageArrivesInItsTurn) {
  // 1 MB then 0 B from rank 0 to rank 1, at 0. Shared: the empty message lands after its latency,
  // L = 1000 ns, before the 1 MB (1'001'000 ns). Ordered: behind the 1 MB, at 1'001'000 ns.
  // Waited for in the order 1, 0 (shared, the empty one lands first).
  const std::vector<Post> posts = {{0, 1, kMB}, {0, 1, 0}};
  const Times shared = run_posts(hosts_spec(2), posts, {1, 0});
  EXPECT_EQ(shared.received[1], Time::ns(1000));
  EXPECT_EQ(shared.received[0], Time::ns(1'001'000));
  const Times fifo = run_posts(ordered(hosts_spec(2)), posts, {1, 0});
  EXPECT_EQ(fifo.received[1], Time::ns(1'001'000));
  EXPECT_EQ(fifo.received[0], Time::ns(1'001'000));
}

TEST(OrderedTransfer, EagerSendsCompleteAtOnceAndTheirBytesLandInOrder) {
  // The mpi model, two 1 KiB messages (eager: <= 64 KiB) at 0: both sends complete at 0. Ordered:
  // the first lands at L + 1024 = 2024 ns, the second at 2024 + 1024 = 3048 ns. Shared: both at
  // L + 2048 / 1e9 s = 3048 ns.
  ClusterSpec spec = hosts_spec(2);
  spec.transport = TransportModel::mpi();
  const std::vector<Post> posts = {{0, 1, 1024}, {0, 1, 1024}};
  const Times fifo = run_posts(ordered(spec), posts);
  EXPECT_EQ(fifo.sent[0], Time::zero());
  EXPECT_EQ(fifo.sent[1], Time::zero());
  EXPECT_EQ(fifo.received[0], Time::ns(2024));
  EXPECT_EQ(fifo.received[1], Time::ns(3048));
  const Times shared = run_posts(spec, posts);
  EXPECT_EQ(shared.received[0], Time::ns(3048));
  EXPECT_EQ(shared.received[1], Time::ns(3048));
}

TEST(OrderedTransfer, CreditSlotsPipelineBehindTheStream) {
  // The nccl model with 2 slots of 1 MB; three 1 MB messages from rank 0 to rank 1 at 0, receives
  // posted at 0. Messages 0 and 1 take the slots, their sends complete at 0; message 2 waits.
  // Ordered: message 0 lands at 1'001'000 ns, its receive frees a slot: message 2 takes it (its send
  // completes, buffered, at 1'001'000) and starts; its latency ends at 1'002'000 while message 1
  // transfers (1'001'000 to 2'001'000); it then transfers, landing at 3'001'000 ns. Shared: messages 0
  // and 1 land together at 2'001'000 ns; message 2 starts then: 2'001'000 + 1000 + 1'000'000 =
  // 3'002'000 ns.
  ClusterSpec spec = hosts_spec(2);
  spec.transport = TransportModel::nccl();
  spec.transport.slots = 2;
  spec.transport.slot_bytes = Bytes(kMB);
  const std::vector<Post> posts = {{0, 1, kMB}, {0, 1, kMB}, {0, 1, kMB}};
  const Times fifo = run_posts(ordered(spec), posts);
  EXPECT_EQ(fifo.sent[0], Time::zero());
  EXPECT_EQ(fifo.sent[1], Time::zero());
  EXPECT_EQ(fifo.sent[2], Time::ns(1'001'000));
  EXPECT_EQ(fifo.received[0], Time::ns(1'001'000));
  EXPECT_EQ(fifo.received[1], Time::ns(2'001'000));
  EXPECT_EQ(fifo.received[2], Time::ns(3'001'000));
  const Times shared = run_posts(spec, posts);
  EXPECT_EQ(shared.sent[2], Time::ns(2'001'000));
  EXPECT_EQ(shared.received[0], Time::ns(2'001'000));
  EXPECT_EQ(shared.received[1], Time::ns(2'001'000));
  EXPECT_EQ(shared.received[2], Time::ns(3'002'000));
}

// Many messages of random sizes between random pairs of 4 ranks on 2 hosts (so within and between
// hosts), the TCP window and a host ceiling on: several connections, several queued flows each.
std::vector<Post> random_posts(uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Post> posts;
  for (int i = 0; i < 200; ++i) {
    const int src = static_cast<int>(rng() % 4);
    const int dst = static_cast<int>((static_cast<uint32_t>(src) + 1 + rng() % 3) % 4);
    posts.push_back({src, dst, static_cast<int64_t>(rng() % 3 == 0 ? 0 : rng() % 2'000'000)});
  }
  return posts;
}

TEST(OrderedTransfer, IsDeterministic) {
  ClusterSpec spec = hosts_spec(2, 2);
  spec.intra_host = {Bandwidth::gigabytes_per_second(4), Time::ns(200)};
  spec.factors.tcp_window = Bytes(262'144);
  spec.factors.host_bandwidth_ceiling = Bandwidth::bytes_per_second(7e8);
  const std::vector<Post> posts = random_posts(7);
  const Times a = run_posts(ordered(spec), posts);
  const Times b = run_posts(ordered(spec), posts);
  EXPECT_EQ(a.received, b.received);
  EXPECT_EQ(a.sent, b.sent);
  // The option changes the run: the same messages, each its own flow, finish at other times.
  EXPECT_NE(run_posts(spec, posts).received, a.received);
}

}  // namespace
}  // namespace bagua::netsim
