// The baselines (ddp, horovod, byteps): their bucketing, fusion and partitioning against the systems'
// documented behaviour, the messages they really send, exactness against gradient_allreduce, and one
// simulated iteration worked out by hand.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/algorithms/byteps.h"
#include "core/algorithms/ddp.h"
#include "core/algorithms/horovod.h"
#include "core/algorithms/tags.h"
#include "core/services.h"
#include "netsim/simulation.h"
#include "tests/core/algorithms/harness.h"

namespace bagua::testing {
namespace {

// ---- Recording what is sent -----------------------------------------------------------------------

// Every send of a rank's transport and of its subgroups: (group, sender, destination, tag) -> bytes
// (sender and destination are the group's ranks; group 0 is the world, subgroups are numbered as the
// rank makes them).
struct Sent {
  int group = 0;
  int src = 0;
  int dst = 0;
  Tag tag = 0;
  auto operator<=>(const Sent&) const = default;
};
class MessageLog {
 public:
  void add(const Sent& key, int64_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    bytes_[key] += bytes;
    ++messages_[key.tag];
  }
  int64_t bytes(const Sent& key) const {
    auto it = bytes_.find(key);
    return it == bytes_.end() ? 0 : it->second;
  }
  // Bytes sent by rank `src` of `group` with `tag`, to any destination.
  int64_t sent_by(int src, Tag tag, int group = 0) const {
    int64_t sum = 0;
    for (const auto& [k, b] : bytes_)
      if (k.group == group && k.src == src && k.tag == tag) sum += b;
    return sum;
  }
  // Messages sent with `tag`, by every rank in every group.
  int64_t messages_with(Tag tag) const {
    auto it = messages_.find(tag);
    return it == messages_.end() ? 0 : it->second;
  }

 private:
  std::mutex mu_;
  std::map<Sent, int64_t> bytes_;
  std::map<Tag, int64_t> messages_;
};

class LoggingTransport final : public Transport {
 public:
  LoggingTransport(std::unique_ptr<Transport> owned, Transport& inner, MessageLog& log, int group)
      : owned_(std::move(owned)), inner_(inner), log_(log), group_(group) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  int host_of(int rank) const override { return inner_.host_of(rank); }
  RequestPtr isend(const BufferView& data, int dst, Tag tag) override {
    log_.add({group_, inner_.rank(), dst, tag}, data.bytes().count());
    return inner_.isend(data, dst, tag);
  }
  RequestPtr irecv(const BufferView& data, int src, Tag tag) override {
    return inner_.irecv(data, src, tag);
  }
  std::unique_ptr<Transport> make_subgroup(std::span<const int> ranks) override {
    std::unique_ptr<Transport> sub = inner_.subgroup(ranks);
    Transport& ref = *sub;
    return std::make_unique<LoggingTransport>(std::move(sub), ref, log_, ++subgroups_ + 1000 * group_);
  }
  std::optional<LinkHint> link_hint() const override { return inner_.link_hint(); }

 private:
  std::unique_ptr<Transport> owned_;
  Transport& inner_;
  MessageLog& log_;
  int group_;
  int subgroups_ = 0;
};

class LoggingContext final : public ForwardingContext {
 public:
  LoggingContext(RankContext& inner, MessageLog& log)
      : ForwardingContext(inner), transport_(nullptr, inner.transport(), log, 0) {}
  Transport& transport() override { return transport_; }

 private:
  LoggingTransport transport_;
};

// A profile-like model on meta buffers: layers of the given sizes, each with the given forward and
// backward durations.
class TimedMetaModel final : public Model {
 public:
  TimedMetaModel(const std::vector<size_t>& sizes, const std::vector<Time>& forward,
                 const std::vector<Time>& backward)
      : layers_(contiguous_layers(sizes, "layer", Time::zero(), Time::zero())),
        n_(std::accumulate(sizes.begin(), sizes.end(), size_t{0})) {
    for (size_t l = 0; l < layers_.size(); ++l) {
      layers_[l].forward.duration = forward[l];
      layers_[l].backward.duration = backward[l];
    }
  }
  const std::vector<Layer>& layers() const override { return layers_; }
  size_t num_params() const override { return n_; }
  bool materialized() const override { return false; }
  void init_weights(const BufferView&) const override {}
  double forward_backward(const BufferView&, const BufferView&, int64_t,
                          const std::function<void(int)>& ready) override {
    all_layers_ready(static_cast<int>(layers_.size()), ready);
    return std::nan("");
  }

 private:
  std::vector<Layer> layers_;
  size_t n_;
};

// The bytes these tests count are each system's payload, which NCCL's Simple protocol puts on the wire
// as it is: an algorithm that takes "protocol" runs Simple unless the test names another (NCCL's own
// choice, the default, may pick LL or LL128 for a small bucket, whose lines add their flags: the
// nccl_protocol tests count those).
std::unique_ptr<Algorithm> make(const Registries& reg, const std::string& name,
                                std::map<std::string, ParamValue> params = {}) {
  const auto& entry = reg.algorithms.at(name);
  const auto allreduce = params.find("allreduce");
  const bool nccl = allreduce == params.end() || std::get<std::string>(allreduce->second) == "nccl";
  if (entry.schema.find("protocol") != nullptr && params.count("protocol") == 0 && nccl)
    params["protocol"] = std::string("simple");
  return reg.algorithms.create(name, Params(entry.schema, params), reg.deps());
}

struct Logged {
  MessageLog log;
  std::vector<TrainResult> train;
};

// Trains `name` for `iterations` on a meta model of `sizes` (every layer 50 us forward, 100 us
// backward) on the uniform simulated cluster of run_ranks, recording every send.
std::unique_ptr<Logged> run_logged(const std::string& name,
                                   const std::map<std::string, ParamValue>& params, int ranks,
                                   int per_host, const std::vector<size_t>& sizes,
                                   int64_t iterations = 1) {
  Registries reg;
  auto out = std::make_unique<Logged>();
  out->train.resize(static_cast<size_t>(ranks));
  std::mutex mu;
  run_ranks(
      Backend::kSim, ranks,
      [&](RankContext& inner) {
        LoggingContext ctx(inner, out->log);
        TimedMetaModel model(sizes, std::vector<Time>(sizes.size(), Time::us(50)),
                             std::vector<Time>(sizes.size(), Time::us(100)));
        Params sgd_params(sgd_schema(), {{"lr", 0.1}});
        std::unique_ptr<Optimizer> sgd =
            make_sgd(sgd_params, model.num_params(), Buffer::meta(DType::kF32, 1));
        std::unique_ptr<Algorithm> algorithm = make(reg, name, params);
        TrainOptions options;
        options.iterations = iterations;
        TrainResult r = train(ctx, model, *sgd, *algorithm, options);
        std::lock_guard<std::mutex> lock(mu);
        out->train[static_cast<size_t>(inner.transport().rank())] = std::move(r);
      },
      per_host);
  return out;
}

Tag gradient(int index) {
  return tags::bucket(tags::kGradient, index);
}

// ---- DDP ------------------------------------------------------------------------------------------

// Forward layer sizes (float32 elements): 2'000'000, 3'000'000, 4'000'000, 100'000, 200'000, 50'000.
// DDP's buckets, in backward order (compute_bucket_assignment_by_size with limits [1 MiB, 25 MiB]):
//   bucket 0: layer 5 (200'000 B) + layer 4 (800'000 B) = 1'000'000 B < 1'048'576, + layer 3
//             (400'000 B) = 1'400'000 B >= 1 MiB: closed, the first bucket
//   bucket 1: layer 2 (16'000'000 B) < 26'214'400, + layer 1 (12'000'000 B) = 28'000'000 B >= 25 MiB:
//             closed (a bucket overshoots its limit by its last layer, as PyTorch's do)
//   bucket 2: layer 0 (8'000'000 B), the rest
const std::vector<size_t> kDdpSizes{2'000'000, 3'000'000, 4'000'000, 100'000, 200'000, 50'000};

TEST(Ddp, BucketsAsPyTorchFirstOneMebibyteThenTwentyFive) {
  Registries reg;
  const std::unique_ptr<Algorithm> ddp = make(reg, "ddp");
  const std::vector<Bucket> buckets =
      ddp->buckets(contiguous_layers(kDdpSizes, "l", Time::zero(), Time::zero()), Bytes(10 << 20));
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[0].layers, (std::vector<int>{5, 4, 3}));
  EXPECT_EQ(buckets[0].count * 4, 1'400'000u);
  EXPECT_EQ(buckets[1].layers, (std::vector<int>{2, 1}));
  EXPECT_EQ(buckets[1].count * 4, 28'000'000u);
  EXPECT_EQ(buckets[2].layers, (std::vector<int>{0}));
  EXPECT_EQ(buckets[2].count * 4, 8'000'000u);
  // The trainer's budget (Bagua's bucket size) is not DDP's: the same buckets for any budget.
  EXPECT_EQ(
      ddp->buckets(contiguous_layers(kDdpSizes, "l", Time::zero(), Time::zero()), Bytes(0)).size(), 3u);
  // Other limits through the parameters: bucket_cap_mb 1, first bucket 0 bytes.
  const std::unique_ptr<Algorithm> small =
      make(reg, "ddp", {{"bucket_cap_mb", int64_t{1}}, {"first_bucket_bytes", int64_t{0}}});
  // 0 bytes: the first layer alone closes bucket 0; then every layer >= 1 MiB alone, except 100'000
  // + ... : layer 4 (800'000 B) + layer 3 (400'000 B) >= 1 MiB.
  const std::vector<Bucket> b =
      small->buckets(contiguous_layers(kDdpSizes, "l", Time::zero(), Time::zero()), Bytes(0));
  ASSERT_EQ(b.size(), 5u);
  EXPECT_EQ(b[0].layers, (std::vector<int>{5}));
  EXPECT_EQ(b[1].layers, (std::vector<int>{4, 3}));
}

TEST(Ddp, EachBucketIsOneAllreduceOfItsBytesOrOfItsSixteenBitOrLowRankCopy) {
  // Two ranks: an allreduce (NCCL's pipelined ring) sends 2 (P - 1) / P S = S bytes from each rank.
  {
    const auto r = run_logged("ddp", {}, 2, 1, kDdpSizes);
    for (int rank = 0; rank < 2; ++rank) {
      EXPECT_EQ(r->log.sent_by(rank, gradient(0)), 1'400'000);
      EXPECT_EQ(r->log.sent_by(rank, gradient(1)), 28'000'000);
      EXPECT_EQ(r->log.sent_by(rank, gradient(2)), 8'000'000);
    }
  }
  // fp16 and bf16 hooks: 2 bytes per element.
  for (const std::string hook : {"fp16", "bf16"}) {
    const auto r = run_logged("ddp", {{"comm_hook", hook}}, 2, 1, kDdpSizes);
    EXPECT_EQ(r->log.sent_by(0, gradient(0)), 700'000) << hook;
    EXPECT_EQ(r->log.sent_by(0, gradient(1)), 14'000'000) << hook;
    EXPECT_EQ(r->log.sent_by(1, gradient(2)), 4'000'000) << hook;
  }
  // PowerSGD, rank 1, from the first iteration: each layer a side x side matrix with side =
  // ceil(sqrt(count)): 50'000 -> 224, 200'000 -> 448, 100'000 -> 317, 4'000'000 -> 2000,
  // 3'000'000 -> 1733, 2'000'000 -> 1415; every one compressed (2 side x 2 < count). P and Q of a
  // bucket hold sum(side) floats each: bucket 0 (224 + 448 + 317) x 4 = 3956 B, bucket 1 (2000 +
  // 1733) x 4 = 14'932 B, bucket 2 1415 x 4 = 5660 B; nothing goes uncompressed.
  {
    const auto r =
        run_logged("ddp", {{"comm_hook", std::string("powersgd")}, {"powersgd_start_iter", int64_t{0}}},
                   2, 1, kDdpSizes);
    const auto p = [](int b) { return tags::bucket(tags::kCompressed, 2 * b); };
    const auto q = [](int b) { return tags::bucket(tags::kCompressed, 2 * b + 1); };
    for (int rank = 0; rank < 2; ++rank) {
      EXPECT_EQ(r->log.sent_by(rank, p(0)), 3956);
      EXPECT_EQ(r->log.sent_by(rank, q(0)), 3956);
      EXPECT_EQ(r->log.sent_by(rank, p(1)), 14'932);
      EXPECT_EQ(r->log.sent_by(rank, q(1)), 14'932);
      EXPECT_EQ(r->log.sent_by(rank, p(2)), 5660);
      EXPECT_EQ(r->log.sent_by(rank, q(2)), 5660);
      for (int b = 0; b < 3; ++b)
        EXPECT_EQ(r->log.sent_by(rank, gradient(b)), 0) << b;
    }
  }
  // Before start_iter PowerSGD is the vanilla allreduce: iteration 0 of 2 with start 1 sends bucket
  // 1's 28'000'000 B once, then its factors.
  {
    const auto r =
        run_logged("ddp", {{"comm_hook", std::string("powersgd")}, {"powersgd_start_iter", int64_t{1}}},
                   2, 1, kDdpSizes, 2);
    EXPECT_EQ(r->log.sent_by(0, gradient(1)), 28'000'000);
    EXPECT_EQ(r->log.sent_by(0, tags::bucket(tags::kCompressed, 2)), 14'932);
  }
}

TEST(Ddp, PowerSgdLeavesSmallLayersUncompressedAsShouldCompressSays) {
  // _should_compress: (rows + cols) r' x min_compression_rate < count. A 10'000-element layer
  // (side 100): 200 x 2 = 400 < 10'000, compressed; a 64-element one (side 8): 16 x 2 = 32 < 64,
  // compressed; a 30-element one (side 6): 12 x 2 = 24 < 30 compressed, but at rate 3, 36 >= 30:
  // not; rank 8 on side 6: r' = min(6, 8) = 6.
  PowerSgdOptions o;
  Layer l;
  l.count = 10'000;
  EXPECT_EQ(powersgd_layer(l, 0, o).side, 100u);
  EXPECT_TRUE(powersgd_layer(l, 0, o).compressed);
  l.count = 30;
  EXPECT_EQ(powersgd_layer(l, 0, o).side, 6u);
  EXPECT_TRUE(powersgd_layer(l, 0, o).compressed);
  o.min_compression_rate = 3;
  EXPECT_FALSE(powersgd_layer(l, 0, o).compressed);
  o.rank = 8;
  EXPECT_EQ(powersgd_layer(l, 0, o).rank, 6u);
  // Uncompressed layers travel together at full precision: layers of 30 and 10'000 elements with
  // rate 3 on two ranks: the 30 go as 120 B on the gradient tag, the 10'000 as P and Q of 400 B.
  const auto r = run_logged("ddp",
                            {{"comm_hook", std::string("powersgd")},
                             {"powersgd_start_iter", int64_t{0}},
                             {"powersgd_min_compression_rate", 3.0}},
                            2, 1, {30, 10'000});
  EXPECT_EQ(r->log.sent_by(0, gradient(0)), 120);
  EXPECT_EQ(r->log.sent_by(0, tags::bucket(tags::kCompressed, 0)), 400);
  EXPECT_EQ(r->log.sent_by(0, tags::bucket(tags::kCompressed, 1)), 400);
}

// Two hosts of two GPUs on a star, every link 1 GB/s (1 byte per ns); a device link 1 us, a NIC link
// 5 us, so a message between hosts crosses device up, NIC up, NIC down, device down: 12 us, and one
// inside a host 2 us. The model: layer 0 of 750'000 floats (3'000'000 B), layer 1 of 262'144 floats
// (1 MiB); forward 100 us each; backward 200 us (layer 1), then 2000 us (layer 0).
// DDP's buckets: bucket 0 = layer 1 (1 MiB >= the first limit), bucket 1 = layer 0. Allreduce: the
// bulk-synchronous ring (`allreduce` ring), 2 (P - 1) = 6 steps of S / 4 bytes. In each step every rank
// has exactly one message between hosts (its send or its receive: 1 -> 2 and 3 -> 0), every message on
// links of its own, so a step takes 12 us + S / 4 at 1 byte per ns:
//   bucket 0: 6 x (12 + 262.144) us = 1644.864 us, from 400 us (forward 200 + layer 1's backward 200):
//             done at 2044.864 us, before layer 0's backward ends at 2400 us
//   bucket 1: 6 x (12 + 750) us = 4572 us, from 2400 us: done at 6972 us
// The SGD step is all but free (the device's memory bandwidth is made huge; the roofline's time is
// rounded up to 1 ns), so an iteration takes 6.972 ms + 1 ns, every iteration alike.
TEST(Ddp, SimulatedIterationOnTwoHostsOfTwoGpusIsWorkedOutByHand) {
  netsim::ClusterSpec spec;
  spec.hosts = 2;
  spec.devices_per_host = 2;
  spec.intra_host = {Bandwidth::gigabytes_per_second(1), Time::us(1)};
  spec.nic = {Bandwidth::gigabytes_per_second(1), Time::us(5)};
  spec.device = {1e18, Bandwidth::gigabytes_per_second(1e12)};
  Registries reg;
  std::vector<TrainResult> results(4);
  std::mutex mu;
  netsim::Simulation(spec).run([&](RankContext& ctx) {
    TimedMetaModel model({750'000, 262'144}, {Time::us(100), Time::us(100)},
                         {Time::us(2000), Time::us(200)});
    Params sgd_params(sgd_schema(), {{"lr", 0.1}});
    std::unique_ptr<Optimizer> sgd =
        make_sgd(sgd_params, model.num_params(), Buffer::meta(DType::kF32, 1));
    std::unique_ptr<Algorithm> ddp = make(reg, "ddp", {{"allreduce", std::string("ring")}});
    TrainOptions options;
    options.iterations = 3;
    TrainResult r = train(ctx, model, *sgd, *ddp, options);
    std::lock_guard<std::mutex> lock(mu);
    results[static_cast<size_t>(ctx.transport().rank())] = std::move(r);
  });
  for (const TrainResult& r : results)
    for (const IterationRecord& it : r.iterations) {
      EXPECT_EQ((it.end - it.begin).nanoseconds(), 6'972'001)
          << "rank " << r.rank << " it " << it.iteration;
      EXPECT_EQ(it.compute.nanoseconds(), 2'400'001) << "rank " << r.rank;
    }
}

// ---- Horovod --------------------------------------------------------------------------------------

TEST(Horovod, FusionPacksReadyTensorsInOrderUpToTheThreshold) {
  // Tensors of 40, 40, 100, 20, 30 and 200 bytes, threshold 100 (FuseResponses: a tensor joins while
  // the group's bytes stay <= threshold): {40, 40} (+ 100 would be 180), {100}, {20, 30}, {200} alone
  // (larger than the threshold, it still goes).
  const std::vector<Bucket> tensors = make_buckets(
      contiguous_layers({50, 30, 5, 25, 10, 10}, "t", Time::zero(), Time::zero()), Bytes(0));
  // Backward order: bytes 40, 40, 100, 20, 120, 200.
  ASSERT_EQ(tensors.size(), 6u);
  EXPECT_EQ(fuse_tensors(tensors, 0, 6, Bytes(100)),
            (std::vector<FusedGroup>{{0, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 6}}));
  // Threshold 0 (fusion off): one tensor per allreduce; a large one: all together.
  EXPECT_EQ(fuse_tensors(tensors, 0, 3, Bytes(0)), (std::vector<FusedGroup>{{0, 1}, {1, 2}, {2, 3}}));
  EXPECT_EQ(fuse_tensors(tensors, 1, 6, Bytes(1 << 20)), (std::vector<FusedGroup>{{1, 6}}));
}

TEST(Horovod, OneCycleFusesTheTensorsThatBecameReadyOnEveryRankSinceTheLast) {
  // Two ranks, 4 layers of 1000 floats (4000 B), 50 us forward and 100 us backward each, cycle 0.25 ms,
  // a fast network (10 GB/s, 1 us: a cycle's negotiation and allreduces take a few us).
  //   t = 200 us forward done; 300 us tensor 0 (layer 3) ready: the first cycle starts at once, agrees
  //   on 1 tensor: allreduce {0}.
  //   400, 500 us: tensors 1, 2 ready; the next cycle at 300 + 250 = 550 us agrees on 3: allreduce
  //   {1, 2} fused (8000 B).
  //   600 us: tensor 3; the cycle at 800 us: allreduce {3}.
  // Three cycles (three negotiations), and the fused group is sent under the tag of its first tensor.
  const auto r = run_logged("horovod", {{"cycle_time_ms", 0.25}}, 2, 1, {1000, 1000, 1000, 1000});
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(r->log.sent_by(rank, gradient(0)), 4000);
    EXPECT_EQ(r->log.sent_by(rank, gradient(1)), 8000);
    EXPECT_EQ(r->log.sent_by(rank, gradient(2)), 0);
    EXPECT_EQ(r->log.sent_by(rank, gradient(3)), 4000);
  }
  // The last allreduce starts at the 800 us cycle: the iteration ends after it.
  for (const TrainResult& t : r->train) {
    EXPECT_GT(t.iterations[0].end, Time::us(800));
    EXPECT_LT(t.iterations[0].end, Time::us(850));
  }
  // With a cycle of 1 ms (the default) the second cycle, at 1.3 ms, finds every tensor ready: {1, 2, 3}.
  const auto slow = run_logged("horovod", {}, 2, 1, {1000, 1000, 1000, 1000});
  EXPECT_EQ(slow->log.sent_by(0, gradient(0)), 4000);
  EXPECT_EQ(slow->log.sent_by(0, gradient(1)), 12'000);
  EXPECT_EQ(slow->log.sent_by(0, gradient(3)), 0);
  // Three negotiations against two: the negotiation's messages in the ratio 3 : 2.
  const int64_t fast_control = r->log.messages_with(tags::bucket(tags::kControl, 0));
  const int64_t slow_control = slow->log.messages_with(tags::bucket(tags::kControl, 0));
  EXPECT_GT(slow_control, 0);
  EXPECT_EQ(2 * fast_control, 3 * slow_control);
}

TEST(Horovod, TheNegotiationRunsOnTheControllersAllreduce) {
  // Eight ranks on eight hosts, the model and cycle of the test above: three cycles, three
  // negotiations of one int64 (8 B) each. Under the MPI controller (the default) it is MPI_Allreduce
  // as Open MPI 4.1 runs 8 B on 8 ranks, recursive doubling: log2 8 = 3 exchanges per rank, 8 x 3 =
  // 24 messages per negotiation, 72 in all. Under Gloo's, its ring: a reduce-scatter and an allgather
  // of 7 steps each, one message per rank and step (the empty chunks too), 8 x 14 = 112 per
  // negotiation, 336 in all. The same tensors are agreed either way: the same gradient messages.
  const std::vector<size_t> sizes{1000, 1000, 1000, 1000};
  const auto mpi = run_logged("horovod", {{"cycle_time_ms", 0.25}}, 8, 1, sizes);
  const auto gloo =
      run_logged("horovod", {{"cycle_time_ms", 0.25}, {"controller", std::string("gloo")}}, 8, 1, sizes);
  EXPECT_EQ(mpi->log.messages_with(tags::bucket(tags::kControl, 0)), 72);
  EXPECT_EQ(gloo->log.messages_with(tags::bucket(tags::kControl, 0)), 336);
  for (int rank = 0; rank < 8; ++rank)
    for (int t = 0; t < 4; ++t)
      EXPECT_EQ(mpi->log.sent_by(rank, gradient(t)), gloo->log.sent_by(rank, gradient(t)))
          << "rank " << rank << ", tensor " << t;
}

TEST(Horovod, HierarchicalReduceScattersInsideAHostAndAllreducesChunksAcrossHosts) {
  // Two hosts of two ranks, one tensor of 1000 floats (4000 B), fused alone. Inside a host (subgroup
  // 1, the host's ranks) the reduce-scatter sends a 2000 B chunk and the allgather another: 4000 B per
  // rank, logged per (group rank, destination) for both hosts together: 8000 B. Across hosts (subgroup
  // 2, this local rank on both hosts) each rank allreduces its 2000 B chunk with its peer: 2000 B (two
  // ranks: 2 (2 - 1) / 2 x 2000). Nothing goes on the world group but the negotiation.
  const auto r = run_logged("horovod", {{"hierarchical", true}}, 4, 2, {1000});
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(r->log.bytes({1, rank, 1 - rank, gradient(0)}), 8000) << rank;
  }
  int64_t cross = 0;
  for (int rank = 0; rank < 2; ++rank)
    cross += r->log.bytes({2, rank, 1 - rank, gradient(0)});
  EXPECT_EQ(cross, 4 * 2000);  // the four ranks' 2000 B each, logged per (sender, destination)
  EXPECT_EQ(r->log.sent_by(0, gradient(0)), 0);
}

// ---- BytePS ---------------------------------------------------------------------------------------

TEST(Byteps, PartitionsOfFourMillionBytesGoToServersByDjb2) {
  // BYTEPS_PARTITION_BYTES 4'096'000 on hosts of 2: aligned to 8 x 2 = 16 bytes, already: 1'024'000
  // floats. 4'096'001 rounds up to 4'096'016 B = 1'024'004 floats.
  EXPECT_EQ(byteps_partition_elements(4'096'000, 2), 1'024'000u);
  EXPECT_EQ(byteps_partition_elements(4'096'001, 2), 1'024'004u);
  // djb2 over the decimal digits: "0" -> 5381 x 33 + '0' (48) = 177'621; "1" -> 177'622; "2" ->
  // 177'623. "65536" -> 5381 x 33 + '6' = 177'627; x 33 + '5' = 5'861'744; x 33 + '5' = 193'437'605;
  // x 33 + '3' = 6'383'441'016; x 33 + '6' = 210'653'553'582.
  EXPECT_EQ(byteps_djb2(0), 177'621u);
  EXPECT_EQ(byteps_djb2(2), 177'623u);
  EXPECT_EQ(byteps_djb2(65536), 210'653'553'582u);
  // Tensor 0 of 2'500'000 floats (10'000'000 B): partitions of 4'096'000, 4'096'000 and 1'808'000 B,
  // keys 0, 1, 2, on 2 servers: 177'621 % 2 = 1, 0, 1.
  EXPECT_EQ(byteps_partitions(0, 2'500'000, 1'024'000, 2),
            (std::vector<BytepsPartition>{
                {0, 1'024'000, 0, 1}, {1'024'000, 1'024'000, 1, 0}, {2'048'000, 452'000, 2, 1}}));
  // Tensor 1's first key is 1 << 16 = 65536: server 210'653'553'582 % 2 = 0.
  EXPECT_EQ(byteps_partitions(1, 10, 1'024'000, 2).front().server, 0);
}

TEST(Byteps, EachHostPushesItsPartitionsToTheirServersAndPullsTheSums) {
  // Two hosts of one GPU (so no intra-host traffic; the local roots' group is subgroup 2, numbered by
  // host): forward layers of 2'500'000 and 1000 floats.
  // Tensor (bucket) 0 is layer 1, key 65536, one partition of 4000 B on server 0: host 1 pushes it to
  // host 0 and pulls the sum back. Tensor 1 is layer 0, keys 0, 1, 2 as above: host 0 pushes keys 0
  // and 2 (4'096'000 + 1'808'000 = 5'904'000 B) to server 1 and host 1 pushes key 1 (4'096'000 B) to
  // server 0; each server answers with the sums of what it received.
  const auto r = run_logged("byteps", {}, 2, 1, {2'500'000, 1000});
  const Tag pull0 = tags::bucket(tags::kPull, 0);
  const Tag pull1 = tags::bucket(tags::kPull, 1);
  const int leaders = 2;
  EXPECT_EQ(r->log.sent_by(1, gradient(0), leaders), 4000);
  EXPECT_EQ(r->log.sent_by(0, gradient(0), leaders), 0);
  EXPECT_EQ(r->log.sent_by(0, pull0, leaders), 4000);
  EXPECT_EQ(r->log.sent_by(1, pull0, leaders), 0);
  EXPECT_EQ(r->log.sent_by(0, gradient(1), leaders), 5'904'000);
  EXPECT_EQ(r->log.sent_by(1, gradient(1), leaders), 4'096'000);
  EXPECT_EQ(r->log.sent_by(1, pull1, leaders), 5'904'000);
  EXPECT_EQ(r->log.sent_by(0, pull1, leaders), 4'096'000);
}

TEST(Byteps, LocalRootsAloneTalkToServersAfterAnIntraHostReduce) {
  // Two hosts of two GPUs, one tensor of 1000 floats (key 0, server 1): only the local roots (world
  // ranks 0 and 2) send on the leaders' group; the second rank of each host sends its 4000 B to its
  // root once (the reduce) and nothing else, the root broadcasts 4000 B back. Subgroups: 1 = the
  // host's ranks (logged per group rank, both hosts together: 2 x 4000 B), 2 = the local roots.
  const auto r = run_logged("byteps", {}, 4, 2, {1000});
  EXPECT_EQ(r->log.bytes({1, 1, 0, gradient(0)}), 8000);
  EXPECT_EQ(r->log.bytes({1, 0, 1, gradient(0)}), 8000);
  EXPECT_EQ(r->log.bytes({2, 0, 1, gradient(0)}), 4000);  // host 0 pushes to server 1
  const int64_t push = r->log.bytes({2, 0, 1, gradient(0)}) + r->log.bytes({2, 1, 0, gradient(0)});
  const int64_t pull = r->log.bytes({2, 0, 1, tags::bucket(tags::kPull, 0)}) +
                       r->log.bytes({2, 1, 0, tags::bucket(tags::kPull, 0)});
  EXPECT_EQ(push, 4000);  // the one partition, from the host whose server it is not
  EXPECT_EQ(pull, 4000);
}

// Servers on CPU hosts, worked out by hand. Two worker hosts of one GPU and two CPU hosts on a star,
// every link 1 GB/s (1 byte per ns); a device link 1 us, a NIC link 5 us (the CPU hosts' too), so a
// message between two hosts crosses device up, NIC up, NIC down, device down: 12 us. One layer of
// 2'000'000 floats (8'000'000 B), forward 100 us, backward 200 us; partition_bytes 4'000'000 (a
// multiple of 8 x 1 already): partitions key 0 (floats 0 .. 999'999) and key 1 (the rest), 4'000'000 B
// each; djb2: 177'621 % 2 = 1 and 177'622 % 2 = 0, so key 0 is served by CPU host 1, key 1 by CPU host 0.
// The tensor is ready at 300 us; a host of one GPU has no intra-host reduce or broadcast.
//   push  each root sends both partitions at once: its device link and NIC up carry 2 flows, each CPU
//         host's NIC down and device link down carry 2 (one from each root): every flow gets 0.5 GB/s,
//         12 us + 4'000'000 B / 0.5 B per ns = 8'012 us, all in at 8'312 us
//   sum   on the server, not charged here (the CPUs' memory bandwidth left 0: not modelled; the case
//         below charges it)
//   pull  each server sends its sum to both roots, 2 flows per link again: 8'012 us, back at 16'324 us
// The SGD step costs 1 ns (the huge memory bandwidth, as in the DDP case above): 16.324 ms + 1 ns per
// iteration, every iteration alike. Colocated, for comparison: each host pushes the one partition its
// peer serves over a NIC of its own, 12 + 4'000 us, and pulls as much back: 300 + 2 x 4'012 us =
// 8.324 ms + 1 ns. (Two hosts and one tensor, so no pipelining of push and pull: the two placements'
// ideal costs, max(M / B, n M / (k B)) and 2 (n - 1) M / (n B) in byteps.h, are both M / B here, and
// the CPU servers' unoverlapped push and pull double it.)
TEST(Byteps, ServersOnCpuHostsIterationIsWorkedOutByHand) {
  netsim::ClusterSpec spec;
  spec.hosts = 2;
  spec.devices_per_host = 1;
  spec.intra_host = {Bandwidth::gigabytes_per_second(1), Time::us(1)};
  spec.nic = {Bandwidth::gigabytes_per_second(1), Time::us(5)};
  spec.device = {1e18, Bandwidth::gigabytes_per_second(1e12)};
  Registries reg;
  for (const std::string servers : {"cpu_hosts", "colocated"}) {
    spec.cpu_hosts =
        servers == "cpu_hosts" ? netsim::CpuHostsSpec{2, spec.nic, {}} : netsim::CpuHostsSpec{};
    std::vector<TrainResult> results(2);
    int served = 0;
    std::mutex mu;
    const std::map<std::string, ParamValue> params{{"servers", servers},
                                                   {"partition_bytes", int64_t{4'000'000}}};
    netsim::Simulation(spec).run([&](RankContext& ctx) {
      TimedMetaModel model({2'000'000}, {Time::us(100)}, {Time::us(200)});
      std::unique_ptr<Algorithm> byteps = make(reg, "byteps", params);
      TrainOptions options;
      options.iterations = 3;
      if (ctx.transport().rank() >= 2) {
        serve(ctx, 2, model, *byteps, options);
        std::lock_guard<std::mutex> lock(mu);
        ++served;
        return;
      }
      std::optional<WorkerContext> worker;
      if (spec.cpu_hosts.count > 0) worker.emplace(ctx, 2);
      RankContext& rank_ctx = worker ? *worker : ctx;
      Params sgd_params(sgd_schema(), {{"lr", 0.1}});
      std::unique_ptr<Optimizer> sgd =
          make_sgd(sgd_params, model.num_params(), Buffer::meta(DType::kF32, 1));
      TrainResult r = train(rank_ctx, model, *sgd, *byteps, options);
      std::lock_guard<std::mutex> lock(mu);
      results[static_cast<size_t>(rank_ctx.transport().rank())] = std::move(r);
    });
    EXPECT_EQ(served, spec.cpu_hosts.count);
    const int64_t want = servers == "cpu_hosts" ? 16'324'001 : 8'324'001;
    for (const TrainResult& r : results) {
      ASSERT_EQ(r.iterations.size(), 3u);
      for (const IterationRecord& it : r.iterations)
        EXPECT_EQ((it.end - it.begin).nanoseconds(), want)
            << servers << " rank " << r.rank << " it " << it.iteration;
    }
  }
}

// The servers' sums charged at the CPU's memory bandwidth, worked out by hand. Two worker hosts of one
// GPU and one CPU host on a star, every link 1 GB/s (1 byte per ns), a device link 1 us, a NIC link
// 5 us: 12 us between two hosts. One layer of 1'000'000 floats (B = 4'000'000 bytes), forward 100 us,
// backward 200 us, partition_bytes 4'000'000: one partition (key 0), ready at 300 us. Every CPU sums
// at 10 GB/s (10 bytes per ns). h = 2 copies: the first copied into the store, 2 B = 8'000'000 bytes
// through memory, 800 us; the second summed into it, 3 B = 12'000'000 bytes, 1'200 us.
//   push  both roots at once into the CPU host: its NIC down and device link down carry 2 flows,
//         0.5 GB/s each: 12 + 8'000 us, both in at 8'312 us
//   sum   copy 8'312 .. 9'112 us, sum 9'112 .. 10'312 us: (3 h - 1) B / 10 GB/s = 2'000 us
//   pull  the sum to both roots, 2 flows on the CPU host's links again: 8'012 us, back at 18'324 us
// The SGD step costs 1 ns: 18.324 ms + 1 ns per iteration (16.324 ms + 1 ns without the sum's cost).
// Colocated: djb2(0) % 2 = 1, host 1 serves the partition. Its engine copies its own copy at once
// (300 .. 1'100 us); host 0's push crosses links of its own, 12 + 4'000 us, in at 4'312 us; summed by
// 5'512 us; the answer back to host 0, 4'012 us: 9'524 us, host 1 done when its answer has landed too:
// 9.524 ms + 1 ns for both (8.324 ms + 1 ns without).
TEST(Byteps, ServersSumAtTheCpuMemoryBandwidthWorkedOutByHand) {
  netsim::ClusterSpec spec;
  spec.hosts = 2;
  spec.devices_per_host = 1;
  spec.intra_host = {Bandwidth::gigabytes_per_second(1), Time::us(1)};
  spec.nic = {Bandwidth::gigabytes_per_second(1), Time::us(5)};
  spec.device = {1e18, Bandwidth::gigabytes_per_second(1e12)};
  const netsim::DeviceSpec cpu{0, Bandwidth::gigabytes_per_second(10)};
  spec.cpu = cpu;
  Registries reg;
  for (const std::string servers : {"cpu_hosts", "colocated"}) {
    spec.cpu_hosts =
        servers == "cpu_hosts" ? netsim::CpuHostsSpec{1, spec.nic, cpu} : netsim::CpuHostsSpec{};
    std::vector<TrainResult> results(2);
    const std::map<std::string, ParamValue> params{{"servers", servers},
                                                   {"partition_bytes", int64_t{4'000'000}}};
    std::mutex mu;
    netsim::Simulation simulation(spec);
    simulation.run([&](RankContext& ctx) {
      TimedMetaModel model({1'000'000}, {Time::us(100)}, {Time::us(200)});
      std::unique_ptr<Algorithm> byteps = make(reg, "byteps", params);
      TrainOptions options;
      options.iterations = 3;
      if (ctx.transport().rank() >= 2) {
        serve(ctx, 2, model, *byteps, options);
        return;
      }
      std::optional<WorkerContext> worker;
      if (spec.cpu_hosts.count > 0) worker.emplace(ctx, 2);
      RankContext& rank_ctx = worker ? *worker : ctx;
      Params sgd_params(sgd_schema(), {{"lr", 0.1}});
      std::unique_ptr<Optimizer> sgd =
          make_sgd(sgd_params, model.num_params(), Buffer::meta(DType::kF32, 1));
      TrainResult r = train(rank_ctx, model, *sgd, *byteps, options);
      std::lock_guard<std::mutex> lock(mu);
      results[static_cast<size_t>(rank_ctx.transport().rank())] = std::move(r);
    });
    const int64_t want = servers == "cpu_hosts" ? 18'324'001 : 9'524'001;
    for (const TrainResult& r : results) {
      ASSERT_EQ(r.iterations.size(), 3u);
      for (const IterationRecord& it : r.iterations)
        EXPECT_EQ((it.end - it.begin).nanoseconds(), want)
            << servers << " rank " << r.rank << " it " << it.iteration;
    }
    // The server's CPU time, 3 iterations of 2'000 us: the CPU host's, or colocated host 1's beside its
    // workers' own compute (3 x 300 us of forward and backward, 3 SGD steps of 1 ns).
    const std::vector<RankStats> stats = simulation.rank_stats();
    const int64_t worker = 3 * (300'000 + 1);
    if (servers == "cpu_hosts") {
      EXPECT_EQ(stats.at(2).compute.nanoseconds(), 3 * 2'000'000);
      EXPECT_EQ(stats.at(1).compute.nanoseconds(), worker);
    } else {
      EXPECT_EQ(stats.at(1).compute.nanoseconds(), worker + 3 * 2'000'000);
    }
    EXPECT_EQ(stats.at(0).compute.nanoseconds(), worker);
  }
}

TEST(Byteps, ServerWorkIsACopyThenSumsThroughMemory) {
  // COPY_FIRST reads and writes each byte; SUM_RECV reads two and writes one; on the host's CPU.
  EXPECT_EQ(byteps_server_work(Bytes(1000), true).memory.count(), 2000);
  EXPECT_EQ(byteps_server_work(Bytes(1000), false).memory.count(), 3000);
  EXPECT_EQ(byteps_server_work(Bytes(1000), false).processor, Processor::kHostCpu);
  EXPECT_EQ(byteps_server_work(Bytes(1000), false).flops, 0);
}

TEST(Byteps, ServersOnCpuHostsNeedTheCluster) {
  // servers "cpu_hosts" in a world without service ranks: init names the parameter.
  Registries reg;
  RunSpec spec;
  spec.algorithm = "byteps";
  spec.params = {{"servers", std::string("cpu_hosts")}};
  try {
    run_algorithm(Backend::kSim, reg, spec);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "algorithm.servers: \"cpu_hosts\" needs CPU hosts to run the servers on "
              "(cluster.cpu_hosts)");
  }
  EXPECT_TRUE(make(reg, "byteps", {{"servers", std::string("cpu_hosts")}})->uses_service_ranks());
  EXPECT_FALSE(make(reg, "byteps")->uses_service_ranks());
}

// ---- Exactness ------------------------------------------------------------------------------------

TEST(Exactness, BaselinesGiveGradientAllreducesModel) {
  // On two ranks every element's sum is a + b whatever the order, and DDP's division before the sum is
  // by 2, exact in binary: ddp (no hook), horovod (no compression) and byteps give gradient_allreduce's
  // weights bit for bit. On 3 and 4 ranks the summation order differs (NCCL's ring chunks, fused
  // groups, a server's host order) and DDP divides before summing: the same model to float rounding.
  Registries reg;
  for (const auto& [name, params] :
       std::vector<std::pair<std::string, std::map<std::string, ParamValue>>>{
           {"ddp", {}},
           {"ddp", {{"allreduce", std::string("ring")}}},
           {"horovod", {{"cycle_time_ms", 0.0}}},
           {"horovod", {{"hierarchical", true}, {"cycle_time_ms", 0.0}}},
           {"byteps", {}},
           {"byteps", {{"partition_bytes", int64_t{8}}}}}) {
    for (Backend backend : all_backends())
      for (int ranks : {1, 2, 3, 4}) {
        RunSpec spec;
        spec.ranks = ranks;
        spec.per_host = ranks % 2 == 0 ? 2 : 1;
        spec.iterations = 5;
        spec.algorithm = "gradient_allreduce";
        const RunResult reference = run_algorithm(backend, reg, spec);
        spec.algorithm = name;
        spec.params = params;
        const RunResult r = run_algorithm(backend, reg, spec);
        for (int rank = 0; rank < ranks; ++rank)
          for (size_t i = 0; i < 16; ++i) {
            const float got = r.weights[static_cast<size_t>(rank)][i];
            const float want = reference.weights[static_cast<size_t>(rank)][i];
            if (ranks <= 2)
              ASSERT_EQ(got, want) << name << " " << to_string(backend) << " " << ranks << " ranks"
                                   << " rank " << rank << " i " << i;
            else
              ASSERT_NEAR(got, want, 1e-6 * std::max(1.0f, std::fabs(want)))
                  << name << " " << to_string(backend) << " " << ranks << " ranks"
                  << " rank " << rank << " i " << i;
          }
      }
  }
}

TEST(Exactness, SixteenBitHooksRoundTheAverageToSixteenBits) {
  // fp16 and bf16: each weight after one step of lr 1 from 0 is minus the average gradient, whose
  // elements (r - i / 10 ... averaged) pass through 16 bits: within half an ulp of fp16 (2^-11
  // relative) per addition and cast for fp16, 2^-8 for bf16, with at most P additions and 2 casts.
  Registries reg;
  for (const auto& [hook, ulp] :
       std::vector<std::pair<std::string, double>>{{"fp16", 0x1p-11}, {"bf16", 0x1p-8}})
    for (int ranks : {2, 3, 4}) {
      RunSpec spec;
      spec.algorithm = "ddp";
      spec.params = {{"comm_hook", hook}};
      spec.ranks = ranks;
      spec.iterations = 1;
      spec.lr = 1.0;
      const RunResult r = run_algorithm(Backend::kSim, reg, spec);
      bool inexact = false;
      for (size_t i = 0; i < 16; ++i) {
        const double want = QuadraticModel::mean_target(ranks, i);  // w = 0 - 1 x (0 - tbar)
        const double got = r.weights[0][i];
        EXPECT_NEAR(got, want, (ranks + 2) * ulp * std::fabs(want) + 1e-7) << hook << " i " << i;
        inexact = inexact || got != static_cast<float>(want);
      }
      EXPECT_TRUE(inexact) << hook << ": no element was rounded, so no 16-bit arithmetic happened";
    }
}

}  // namespace
}  // namespace bagua::testing
