// NCCL's collectives at flow granularity (core/collectives/nccl_flow.h): the closed form on a tiny
// uniform ring worked by hand, and the flow model against the slice-level one.
//
// The star (nccl_sim_time_test.cc's): hosts of `devices` ranks, NIC links of B = 100 Gbit/s = 12.5
// bytes per ns and 1 us each way (a route between hosts: L = 2000 ns), device links of 1 PB/s and no
// latency. A message of m bytes between two hosts alone takes L + ceil(m / B).
#include "core/collectives/nccl_flow.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/collectives/nccl.h"
#include "core/ops.h"
#include "netsim/simulation.h"
#include "tests/support/worlds.h"

namespace bagua::collectives {
namespace {

netsim::ClusterSpec star(int hosts, int devices_per_host = 1, Time nic_latency = Time::us(1),
                         CollectiveGranularity g = CollectiveGranularity::kSlice) {
  netsim::ClusterSpec spec = testing::timing_star(hosts, devices_per_host, nic_latency);
  spec.collective_granularity = g;
  return spec;
}

netsim::ClusterSpec flow(netsim::ClusterSpec spec) {
  spec.collective_granularity = CollectiveGranularity::kFlow;
  return spec;
}

Time simulate(const netsim::ClusterSpec& spec, const std::function<void(Transport&)>& body) {
  netsim::Simulation simulation(spec);
  return simulation.run([&](RankContext& ctx) { body(ctx.transport()); });
}

// The double tree these tests time: two channels, so two parts, one per tree, in slices of one step
// (runTreeUpDown's ProtoSimple<1, 1>).
void tree_of_two_parts(Transport& tr, const BufferView& data) {
  PipelineOptions options;
  options.channels = 2;
  options.slice_steps = 1;
  double_tree_allreduce(tr, data, ReduceOp::kSum, 1, options);
}

double relative_error(Time flow_time, Time slice_time) {
  return std::abs(flow_time.seconds() - slice_time.seconds()) / slice_time.seconds();
}

TEST(NcclFlow, GranularityNames) {
  EXPECT_EQ(to_string(CollectiveGranularity::kSlice), "slice");
  EXPECT_EQ(to_string(CollectiveGranularity::kFlow), "flow");
}

TEST(NcclFlow, TinyUniformRingBandwidthBound) {
  // P = 4 hosts of one rank, an allreduce of S = 8'000'000 B (2'000'000 floats) on one channel. The
  // chunk c = S / P = 2'000'000 B; the slice s = 2 steps of 512 KiB = 1'048'576 B, so n = 2 slices
  // per chunk, W = 8 / 2 = 4 in flight, m = min(n, W) = 2: the burst is the whole chunk. A hop: alpha
  // = L = 2'000 ns, the burst 2'000'000 / 12.5 = 160'000 ns. Each rank sends V = 2 S - c_r - c_{r+1}
  // = 12'000'000 B to its right, one flow per NIC link each way: L + V / B = 2'000 + 960'000 =
  // 962'000 ns. The chain: K = 2 (P - 1) = 6 hops of 162'000 ns, no slices after the burst:
  // 972'000 ns. The window does not bind (alpha = 2'000 <= (W - 1) tau = 3 x 83'886): V / B =
  // 960'000 ns. The flow model's time is the largest, the chain's: 972'000 ns.
  const Buffer data = Buffer::meta(DType::kF32, 2'000'000);
  auto body = [&](Transport& tr) { pipelined_ring_allreduce(tr, data, ReduceOp::kSum, 1); };
  const Time flow_time = simulate(flow(star(4)), body);
  EXPECT_EQ(flow_time.nanoseconds(), 972'000);
  // The slice-level ring: its step's two slices (1'048'576 and 951'424 B) share the link and land
  // 7'772 ns apart, so that it comes within 6 ns of the chain (972'006 ns).
  const Time slice_time = simulate(star(4), body);
  EXPECT_LT(relative_error(flow_time, slice_time), 0.001);
}

TEST(NcclFlow, TinyUniformRingLatencyBound) {
  // The same ring with a 1 ms NIC latency (L = 2 ms): the chain 6 x (2'000'000 + 160'000) =
  // 12'960'000 ns; the window binds (alpha > 3 tau) and adds alpha / W = 500'000 ns per slice: 12 x
  // 500'000 + 960'000 = 6'960'000 ns; the transfers 2'960'000 ns: the chain's.
  const Buffer data = Buffer::meta(DType::kF32, 2'000'000);
  auto body = [&](Transport& tr) { pipelined_ring_allreduce(tr, data, ReduceOp::kSum, 1); };
  const Time flow_time = simulate(flow(star(4, 1, Time::ms(1))), body);
  EXPECT_EQ(flow_time.nanoseconds(), 12'960'000);
  const Time slice_time = simulate(star(4, 1, Time::ms(1)), body);
  EXPECT_LT(relative_error(flow_time, slice_time), 0.001);
}

TEST(NcclFlow, TheWindowBindsAtHighLatency) {
  // 4 hosts, 1 ms NIC latency, 64 MiB on one channel: c = 16 MiB, n = 16 slices of 1 MiB, W = 4. The
  // chain: 6 x (2'000'000 + 4 MiB / 12.5 = 335'544) + 12 slices x (500'000 + 83'886) = 21'019'896
  // ns (about); the window: 96 slices x 500'000 + 96 MiB / 12.5 = 48'000'000 + 8'053'064 =
  // 56'053'064 ns: the window's, within a nanosecond or two of rounding. The slice-level ring moves
  // in bursts of W slices every alpha + W tau: the same.
  const Buffer data = Buffer::meta(DType::kF32, size_t{16} << 20);
  auto body = [&](Transport& tr) { pipelined_ring_allreduce(tr, data, ReduceOp::kSum, 1); };
  const Time flow_time = simulate(flow(star(4, 1, Time::ms(1))), body);
  EXPECT_NEAR(static_cast<double>(flow_time.nanoseconds()), 56'053'064.0, 2.0);
  const Time slice_time = simulate(star(4, 1, Time::ms(1)), body);
  EXPECT_LT(relative_error(flow_time, slice_time), 0.01);
}

TEST(NcclFlow, AnOrderedStreamForwardsItsFirstSliceAlone) {
  // A broadcast from rank 0 on the star of 4 hosts, the transport's streams ordered (paper_tcp's
  // transport.ordered): 4 MiB on one channel in slices of one step, 512 KiB (BROADCAST_SLICESTEPS =
  // 1), n = 8 slices, W = 8. A hop: alpha = 2'000 ns, tau = 524'288 / 12.5 = 41'943 ns. On shared
  // links the 8 slices sent at once land together, each hop a burst of 8 tau; on an ordered stream
  // they follow one another, so the first lands after alpha + tau and is forwarded at once: the last
  // rank (K = 3 hops) has the first slice after 3 x (2'000 + 41'943) = 131'829 ns and the other seven
  // 7 x 41'943 = 293'601 ns later (the stream's rate): 425'430 ns. The window does not bind (the
  // oldest slice frees its slot alpha + tau after it left, less than W tau); the transfers, one flow
  // of 4 MiB per hop from the start, end at 2'000 + 335'544 ns. The slice-level broadcast: the same.
  const Buffer data = Buffer::meta(DType::kF32, size_t{1} << 20);
  auto body = [&](Transport& tr) { pipelined_broadcast(tr, data, 0, 1); };
  netsim::ClusterSpec spec = star(4);
  spec.transport.ordered = true;
  const Time flow_time = simulate(flow(spec), body);
  EXPECT_EQ(flow_time.nanoseconds(), 425'430);
  const Time slice_time = simulate(spec, body);
  EXPECT_LT(relative_error(flow_time, slice_time), 0.001) << slice_time.nanoseconds();
}

TEST(NcclFlow, TheDoubleTreeForwardsSliceBySlice) {
  // The double tree on the star of 4 hosts of 8 ranks (NVLink-like device links, 150 GB/s and 1 us):
  // 16 MiB in 2 parts of 8 MiB, slices of 512 KiB (runTreeUpDown's ProtoSimple<1, 1>): n = 16 per
  // part, W = 8. ncclGetBtree over 4 nodes: tree 0 is 0 <- 2 <- {1, 3}, tree 1 its mirror 3 <- 1 <-
  // {2, 0}, each host's ranks a chain below its head (the host's rank 0 in tree 0, its rank 7 in
  // tree 1): the deepest way up is 7 hops within a host and 2 between hosts, the way down to the
  // last rank of host 1 in tree 0 2 and 7 more. A hop within a host: alpha = 2'000 ns and one slice
  // alone, 524'288 / 150 = 3'495 ns; between hosts: alpha = 4'000 ns, tau = 524'288 / 12.5 = 41'943
  // ns. The first slice's way: 14 x 5'495 + 4 x 45'943 = 260'702 ns. Then the part's 16 slices
  // through the busiest hop, a host's NIC: a host inner in one tree and a leaf in the other sends
  // four streams over it (parent and two children, and its parent in the other tree), each slice
  // taking 4 tau there, and the window adds alpha / W = 500 ns per slice (the slices sent together
  // land together): 16 x 500 + 8 MiB x 4 / 12.5 = 8'000 + 2'684'355, less the first slice's own
  // 41'943 counted on its way: 2'650'412 ns. In all 2'911'114 ns (a pipeline takes the sum of its
  // stages and n - 1 times the slowest); the transfers (4 x 8 MiB over the busiest NIC, from the
  // start: 4'000 + 2'684'355 ns) and the window (8'000 + 2'684'355 ns) are shorter. The slice-level
  // tree: 2'991'936 ns (-2.7 %). The form before charged every hop a burst of W slices sent at once
  // (8 tau between hosts): 3'119'821 ns here (+4.3 %), and +40 to +60 % at 64 and 128 ranks of
  // paper_tcp (10 MiB, 4 and 8 such hops, each 8 tau at the 9.6 GB/s host ceiling).
  //
  // The slice-level tree runs each tree's up and down passes as streams of their own (NCCL's
  // runTreeSplit), whose first W slices to a peer leave at once: on links shared max-min they land
  // together, so each hop of the first slice's way costs a burst, which the flow form (slice by slice)
  // does not charge: 3'515'308 ns, flow -17.2 %. On an ordered transport, where one peer's slices move
  // one after another as on NCCL's connections (FIFO), the bursts are gone: slice 2'863'221 ns, flow
  // 2'903'115 ns (+1.4 %). The slice level of the one stream per rank that served both trees in one
  // order, 2'991'936 ns, was within 2.7 % only by its serialization of the four streams.
  const Buffer data = Buffer::meta(DType::kF32, size_t{4} << 20);
  auto body = [&](Transport& tr) { tree_of_two_parts(tr, data); };
  netsim::ClusterSpec spec = star(4, 8);
  spec.intra_host = {Bandwidth::gigabytes_per_second(150), Time::us(1)};
  const Time flow_time = simulate(flow(spec), body);
  EXPECT_EQ(flow_time.nanoseconds(), 2'911'114);
  const Time slice_time = simulate(spec, body);
  EXPECT_NEAR(relative_error(flow_time, slice_time), 0.172, 0.005) << slice_time.nanoseconds();
  spec.transport.ordered = true;
  const Time ordered_flow = simulate(flow(spec), body);
  const Time ordered_slice = simulate(spec, body);
  EXPECT_LT(relative_error(ordered_flow, ordered_slice), 0.02) << ordered_slice.nanoseconds();
}

TEST(NcclFlow, TheDoubleTreeOnANicPerRank) {
  // The tree of TheDoubleTreeForwardsSliceBySlice on a rail-optimized cluster (a DGX SuperPOD's: each
  // rank its own NIC, of the star's 100 Gbit/s and 1 us, on its rail's leaf): the same hops (a route
  // between hosts crosses the device link, the NIC up and down and the device link, alpha = 4'000 ns;
  // within a host the two device links, 2'000 ns) and the same first slice's way, 260'702 ns. But the
  // busiest NIC is no longer a host's, shared by its two heads (four streams), but the head's own in the
  // tree where its host is inner: parent and two children, three streams (the other head, a leaf of the
  // other tree, has its own NIC). The part's 16 slices through it: 16 x 500 + 8 MiB x 3 / 12.5 =
  // 8'000 + 2'013'266, less the first slice's 41'943: 1'979'323 ns, in all 2'240'025 ns. With four
  // streams charged there, as the form before this one did whatever the NICs, the tree came out +25 %
  // against the slice level at 16 DGX H100 systems (GPT-2 XL's 41 MB buckets: 1'979 us, the slice
  // level 1'561).
  const Buffer data = Buffer::meta(DType::kF32, size_t{4} << 20);
  auto body = [&](Transport& tr) { tree_of_two_parts(tr, data); };
  netsim::ClusterSpec spec = star(4, 8);
  spec.intra_host = {Bandwidth::gigabytes_per_second(150), Time::us(1)};
  spec.topology = {"rail_optimized", {{"hosts_per_leaf", ParamValue(int64_t{4})}}};
  EXPECT_EQ(simulate(flow(spec), body).nanoseconds(), 2'240'025);
  // On an ordered transport (the DGX presets' IB queue pairs): flow 2'232'025 ns, the slice level
  // 2'319'979 (-3.8 %).
  spec.transport.ordered = true;
  const Time ordered_flow = simulate(flow(spec), body);
  const Time ordered_slice = simulate(spec, body);
  EXPECT_LT(relative_error(ordered_flow, ordered_slice), 0.05)
      << ordered_flow.nanoseconds() << " " << ordered_slice.nanoseconds();
}

TEST(NcclFlow, TheLastRankToStartHoldsEveryRank) {
  // The ring of TinyUniformRingBandwidthBound (4 hosts of one rank, 8'000'000 B, one channel) on an
  // ordered transport, rank 3 starting it 1 ms after the others. Its terms: the chain 6 hops of
  // alpha + one slice alone, 2'000 + 83'886, and the rest of the last step's chunk at the stream's
  // rate, 160'000 - 83'886: 591'432 ns; the window (W = 4 slices in flight cover alpha) the 12 chunks'
  // 6 x 2'000'000 B to the right at the link's rate, 960'000 ns; the transfers 2'000 + 960'000. The
  // ring reduces every rank's data into every rank's result, so no rank's pipeline runs before rank 3
  // has come: every rank starts its terms then (FlowCapable::start_together), and ranks 1 and 2 end
  // at 1'000'000 + 960'000 = 1'960'000 ns; ranks 3 and 0 when rank 3's transfer to rank 0, posted at
  // 1 ms, lands: 1'962'000. The slice level: 1'962'006 for ranks 3 and 0, 1'887'892 and 1'813'778
  // for ranks 1 and 2 (their last slices come round earlier). Without the meeting, rank 1, whose
  // transfer from rank 0 lands at 962'000 ns, ended then, a millisecond early; such spreads grew from
  // call to call (the tree's ranks end apart, their ways down differ, and every call after added its
  // own: GPT-2 XL on 16 DGX H100 systems came out +22 % against the slice level). On links shared
  // max-min the slice level pays more for a late rank (its neighbours' early slices go out as
  // bursts: 2'772'006 ns here), which the flow form does not follow (nccl_flow.h, "What it drops").
  const Buffer data = Buffer::meta(DType::kF32, 2'000'000);
  auto ends = [&](const netsim::ClusterSpec& spec) {
    std::vector<int64_t> at(4);
    netsim::Simulation simulation(spec);
    simulation.run([&](RankContext& ctx) {
      if (ctx.transport().rank() == 3) ctx.clock().sleep(Time::ms(1));
      pipelined_ring_allreduce(ctx.transport(), data, ReduceOp::kSum, 1);
      at[static_cast<size_t>(ctx.transport().rank())] = ctx.clock().now().nanoseconds();
    });
    return at;
  };
  netsim::ClusterSpec spec = star(4);
  spec.transport.ordered = true;
  const std::vector<int64_t> flow_ends = ends(flow(spec));
  EXPECT_EQ(flow_ends, (std::vector<int64_t>{1'962'000, 1'960'000, 1'960'000, 1'962'000}));
  const std::vector<int64_t> slice_ends = ends(spec);
  for (size_t r = 0; r < 4; ++r)
    EXPECT_LT(std::abs(static_cast<double>(flow_ends[r] - slice_ends[r])) /
                  static_cast<double>(slice_ends[r]),
              0.09)
        << "rank " << r << ": slice " << slice_ends[r];
}

TEST(NcclFlow, TheDoubleTreeOnHostsOfOneTwoAndEightRanks) {
  // The same 16 MiB tree on 4 hosts of 1, 2 and 8 ranks. The trees' streams are independent (each
  // tree's up and down passes on their own), so where the slice level's single stream per rank had a
  // rank heading one tree wait there while its sends in the other stalled (flow -18 % at one rank per
  // host, -10 % at two), the two now agree within 7 % on links shared max-min (the bursts above) and
  // within 2.5 % on an ordered transport.
  const Buffer data = Buffer::meta(DType::kF32, size_t{4} << 20);
  auto body = [&](Transport& tr) { tree_of_two_parts(tr, data); };
  for (const bool ordered : {false, true})
    for (const int per_host : {1, 2}) {
      netsim::ClusterSpec spec = star(4, per_host);
      spec.intra_host = {Bandwidth::gigabytes_per_second(150), Time::us(1)};
      spec.transport.ordered = ordered;
      const Time slice_time = simulate(spec, body);
      const Time flow_time = simulate(flow(spec), body);
      std::printf("double tree 16 MiB, 4 hosts of %d, %s: slice %.1f us, flow %.1f us, %+.1f %%\n",
                  per_host, ordered ? "ordered" : "shared", slice_time.microseconds(),
                  flow_time.microseconds(), 100 * (flow_time.seconds() / slice_time.seconds() - 1));
      // Measured: shared -6.8 % (1) and -8.2 % (2); ordered -2.5 % and +1.9 %.
      EXPECT_LT(relative_error(flow_time, slice_time), ordered ? 0.03 : 0.09)
          << per_host << (ordered ? " ordered" : " shared");
    }
}

TEST(NcclFlow, OnSharedLinksTheWindowGoesInBursts) {
  // Back-to-back ring allreduces of 64 MiB on the star of 4 hosts with 20 us NIC links (alpha =
  // 40'000 ns), one channel: chunk 16 MiB, n = 16 slices of 1 MiB, tau = 83'886 ns, W = 4, 6 steps:
  // 96 slices to the right neighbour, V = 96 MiB. W tau covers alpha, so a window that slid would
  // keep the link busy (V / b = 8'053'064 ns per call). But the W slices in flight share the link
  // max-min and land together, so once they go in bursts they stay in bursts, of W every alpha +
  // W tau: alpha / W = 10'000 ns more per slice, 9'013'064 ns per call. A first call from a
  // synchronized start is faster in the slice-level model (its sends are spread by the data's
  // arrival until the window fills); the calls after it pay the bursts, as the buckets of a
  // communication-bound training step do.
  const Buffer data = Buffer::meta(DType::kF32, size_t{16} << 20);
  auto run = [&](const netsim::ClusterSpec& spec, int calls) {
    return simulate(spec, [&](Transport& tr) {
      for (int i = 0; i < calls; ++i)
        pipelined_ring_allreduce(tr, data, ReduceOp::kSum, 1 + i);
    });
  };
  const netsim::ClusterSpec spec = star(4, 1, Time::us(20));
  const Time flow_one = run(flow(spec), 1);
  EXPECT_NEAR(static_cast<double>(flow_one.nanoseconds()), 9'013'064.0, 2.0);
  // The second and third calls of three.
  const Time slice_later = Time::ns((run(spec, 3) - run(spec, 1)).nanoseconds() / 2);
  const Time flow_later = Time::ns((run(flow(spec), 3) - flow_one).nanoseconds() / 2);
  EXPECT_LT(relative_error(flow_later, slice_later), 0.01) << slice_later.nanoseconds();
}

TEST(NcclFlow, LLCarriesItsLines) {
  // P = 4 hosts of one rank, an allreduce of S = 80'000 B (20'000 f32) on one channel under LL: chunks
  // c = 20'000 B, one slice each (LL slices hold 32 KiB), 40'000 B on the wire. Each rank sends V = 6
  // chunks' lines, 240'000 B: L + V / B = 2'000 + 19'200 = 21'200 ns. The chain: K = 6 hops of
  // alpha + a chunk's lines, 2'000 + 3'200: 31'200 ns; the window does not bind (W = 8). So 31'200
  // ns, the slice-level ring's too (each step's slice alone on its links). Under Simple: 6 x (2'000 +
  // 1'600) = 21'600 ns.
  const Buffer data = Buffer::meta(DType::kF32, 20'000);
  PipelineOptions ll;
  ll.protocol = NcclProtocol::kLL;
  ll.step = kLLStepSize;
  ll.slice_steps = 1;
  auto body = [&](Transport& tr) { pipelined_ring_allreduce(tr, data, ReduceOp::kSum, 1, ll); };
  EXPECT_EQ(simulate(flow(star(4)), body).nanoseconds(), 31'200);
  EXPECT_EQ(simulate(star(4), body).nanoseconds(), 31'200);
  auto simple = [&](Transport& tr) { pipelined_ring_allreduce(tr, data, ReduceOp::kSum, 1); };
  EXPECT_EQ(simulate(flow(star(4)), simple).nanoseconds(), 21'600);
}

TEST(NcclFlow, MaterializedBuffersMoveAtSliceLevel) {
  // A buffer that holds data (a control value beside meta weights, asynchronous averaging's stop flag)
  // must arrive, so at flow granularity it moves at slice level: the same sums, at the same instants as
  // on the slice-level cluster, for the pipelined ring and the double tree. (A workload whose buffers
  // hold data is refused at flow granularity before it runs: tests/experiments, runner_test.cc.)
  const std::vector<std::pair<const char*, std::function<void(Transport&, const BufferView&)>>> runs = {
      {"ring allreduce",
       [](Transport& tr, const BufferView& d) { pipelined_ring_allreduce(tr, d, ReduceOp::kSum, 1); }},
      {"double tree", tree_of_two_parts}};
  for (const auto& [name, run] : runs) {
    Time at[2];
    for (int g = 0; g < 2; ++g) {
      const netsim::ClusterSpec spec = g == 0 ? star(3) : flow(star(3));
      at[g] = simulate(spec, [&](Transport& tr) {
        Buffer data = Buffer::host(DType::kF32, 1000);
        fill(data, tr.rank() + 1.0);
        run(tr, data.view());
        for (float v : data.as<float>())
          ASSERT_EQ(v, 6.0f) << name << ", rank " << tr.rank();
      });
    }
    EXPECT_EQ(at[1], at[0]) << name;
    EXPECT_GT(at[0], Time::zero()) << name;
  }
}

// The flow model against the slice-level one on a cluster of `hosts` x 8 ranks (NVLink-like 150 GB/s
// and 1 us inside a host), for every collective it carries.
struct Case {
  const char* name;
  std::function<void(Transport&, const BufferView&)> run;
};

const Case kCases[] = {
    {"ring allreduce",
     [](Transport& tr, const BufferView& d) { pipelined_ring_allreduce(tr, d, ReduceOp::kSum, 1); }},
    {"reduce-scatter",
     [](Transport& tr, const BufferView& d) { pipelined_reduce_scatter(tr, d, ReduceOp::kSum, 1); }},
    {"allgather", [](Transport& tr, const BufferView& d) { pipelined_allgather(tr, d, 1); }},
    {"broadcast", [](Transport& tr, const BufferView& d) { pipelined_broadcast(tr, d, 3, 1); }},
    {"reduce",
     [](Transport& tr, const BufferView& d) { pipelined_reduce(tr, d, 5, ReduceOp::kSum, 1); }},
    {"double tree", tree_of_two_parts}};

TEST(NcclFlow, AgreesWithTheSliceModelAt32Ranks) {
  for (const Time latency : {Time::us(5), Time::ms(1)}) {
    for (const int64_t bytes : {int64_t{10} << 20, int64_t{256} << 20}) {
      netsim::ClusterSpec spec = star(4, 8, latency);
      spec.intra_host = {Bandwidth::gigabytes_per_second(150), Time::us(1)};
      const Buffer data = Buffer::meta(DType::kF32, static_cast<size_t>(bytes / 4));
      for (const Case& c : kCases) {
        const std::string name = c.name;
        const bool ring = name == "ring allreduce" || name == "reduce-scatter" || name == "allgather";
        const bool chain = name == "broadcast" || name == "reduce";
        // The rings and the tree: the second and third of three calls back to back (the first, from
        // a start where every rank begins at once, can be faster: OnSharedLinksTheWindowGoesInBursts).
        // Broadcast and reduce: one call (calls of one root back to back overlap, each rank starting
        // the next as soon as its part of this one is done, which the flow model does not follow: it
        // charges each its whole chain).
        auto measure = [&](const netsim::ClusterSpec& at) {
          auto calls = [&](int k) {
            return simulate(at, [&](Transport& tr) {
              for (int i = 0; i < k; ++i)
                c.run(tr, data.view());
            });
          };
          if (chain) return calls(1);
          return Time::ns((calls(3) - calls(1)).nanoseconds() / 2);
        };
        const Time slice_time = measure(spec);
        const Time flow_time = measure(flow(spec));
        std::printf(
            "%-15s %4lld MiB, NIC latency %8.1f us: slice %12.1f us, flow %12.1f us, %+.1f %%\n",
            c.name, static_cast<long long>(bytes >> 20), latency.microseconds(),
            slice_time.microseconds(), flow_time.microseconds(),
            100 * (flow_time.seconds() / slice_time.seconds() - 1));
        // Measured (this test's lines): the rings within 3.0 %, broadcast and reduce within 6.6 %, the
        // double tree -25.6 % and -2.4 % at 5 us, -1.4 % and +0.8 % at 1 ms. Its trees and passes
        // run concurrently at the slice level (double_tree.cc), so that at 1 ms the up and down passes
        // overlap as the flow form takes them (it was +14.3 % and +5.5 % while one stream per rank
        // served both); at 5 us and 10 MiB (10 slices per part, W = 8) each hop's first slices leave
        // as a burst that shares the links max-min, which the flow form's slice-by-slice pipeline does
        // not charge (TheDoubleTreeForwardsSliceBySlice: on an ordered transport the two agree).
        EXPECT_LT(relative_error(flow_time, slice_time), ring ? 0.04 : chain ? 0.10 : 0.27) << c.name;
      }
    }
  }
}

}  // namespace
}  // namespace bagua::collectives
