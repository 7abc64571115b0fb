// The two-level collectives give the flat collectives' closed-form results on uniform, uneven and
// interleaved host layouts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/collectives/collectives.h"
#include "core/ops.h"
#include "tests/core/collectives/expect.h"
#include "tests/support/worlds.h"

namespace bagua::collectives {
namespace {

// Apart from the same-named helpers of test_collectives's other files: the sanitizer presets
// compile several files of a program as one (CMAKE_UNITY_BUILD, CMakePresets.json).
namespace hierarchical_test {

using testing::Backend;
using testing::contribution;
using testing::describe;
using testing::expect_elements;
using testing::fill_contribution;
using testing::reduced;

// A world of `ranks` ranks, `ranks_per_host` per host; the collectives run on the subgroup `members` of
// it when that is not empty (the way to get uneven or interleaved layouts on a simulated cluster, whose
// hosts all hold the same number of ranks).
struct Layout {
  Backend backend;
  int ranks;
  int ranks_per_host;
  std::vector<int> members;
  std::string name;
};

std::vector<Layout> layouts() {
  std::vector<Layout> all;
  for (Backend b : testing::all_backends()) {
    const std::string prefix = testing::to_string(b) + "_";
    all.push_back({b, 1, 1, {}, prefix + "1x1"});
    all.push_back({b, 3, 1, {}, prefix + "3x1"});
    all.push_back({b, 4, 2, {}, prefix + "2x2"});
    all.push_back({b, 6, 3, {}, prefix + "2x3"});
    all.push_back({b, 8, 2, {}, prefix + "4x2"});
    all.push_back({b, 8, 4, {}, prefix + "2x4"});
    all.push_back({b, 16, 4, {}, prefix + "4x4"});
    all.push_back({b, 24, 8, {}, prefix + "3x8"});
    // Hosts {0, 1}, {2, 3}, {4}.
    all.push_back({b, 6, 2, {0, 1, 2, 3, 4}, prefix + "uneven_2_2_1"});
    // Hosts {0, 2}, {1, 3}: a host's ranks are not consecutive.
    all.push_back({b, 4, 2, {0, 2, 1, 3}, prefix + "interleaved_2x2"});
    // World hosts {0, 1, 2}, {3, 4, 5}; the group is world ranks 5, 0, 3, 1: hosts {1, 3}, {0, 2}.
    all.push_back({b, 6, 3, {5, 0, 3, 1}, prefix + "shuffled_2x2"});
    if (b == Backend::kThreads) {
      // A threads world may leave its last host short.
      all.push_back({b, 8, 3, {}, prefix + "uneven_3_3_2"});
      all.push_back({b, 7, 4, {}, prefix + "uneven_4_3"});
    }
  }
  return all;
}

class Hierarchical : public ::testing::TestWithParam<Layout> {
 protected:
  // Runs `body` on the layout's group with groups built for it.
  void run(const std::function<void(Transport&, HierarchicalGroups&)>& body) {
    const Layout& layout = GetParam();
    testing::run_ranks(
        layout.backend, layout.ranks,
        [&](RankContext& ctx) {
          Transport& world = ctx.transport();
          std::unique_ptr<Transport> group;
          if (!layout.members.empty()) {
            if (std::find(layout.members.begin(), layout.members.end(), world.rank()) ==
                layout.members.end())
              return;
            group = world.subgroup(layout.members);
          }
          Transport& t = group ? *group : world;
          HierarchicalGroups groups(t);
          body(t, groups);
        },
        layout.ranks_per_host);
  }
};

constexpr AllreduceAlgo kAlgos[] = {AllreduceAlgo::kRing, AllreduceAlgo::kTree,
                                    AllreduceAlgo::kHalvingDoubling, AllreduceAlgo::kNative};

// The intra-host phases every way: binomial trees; chains of 4 KiB segments (several segments for
// the largest element counts, one for the others); chains of 12 B (3 elements of 4 B, 1 of 8 B), for
// element counts up to 100 only, to keep the number of messages small; NCCL's pipelined chains
// (IntraHostAlgo::kNccl) on 3 channels of 4 KiB slices (up to 8 in flight per peer and channel:
// several slices per channel for the largest counts, a channel left empty for counts 0 to 2), on 2
// channels of 12 B slices, and with NCCL's slice (512 KiB) and tuned channel count.
struct IntraHostCase {
  std::string name;
  IntraHostOptions options;
  size_t max_count;
};
const std::vector<IntraHostCase>& intra_host_cases() {
  static const std::vector<IntraHostCase> cases{
      {"binomial", {IntraHostAlgo::kBinomial, Bytes(4096)}, SIZE_MAX},
      {"chain 4 KiB", {IntraHostAlgo::kChain, Bytes(4096)}, SIZE_MAX},
      {"chain 12 B", {IntraHostAlgo::kChain, Bytes(12)}, 100},
      {"nccl 4 KiB x 3", {IntraHostAlgo::kNccl, Bytes(4096), 3}, SIZE_MAX},
      {"nccl 12 B x 2", {IntraHostAlgo::kNccl, Bytes(12), 2}, 100},
      {"nccl tuned", {IntraHostAlgo::kNccl}, SIZE_MAX},
  };
  return cases;
}

TEST_P(Hierarchical, GroupsFollowTheHostLayout) {
  run([](Transport& t, HierarchicalGroups& groups) {
    const HostLayout layout = host_layout(t);
    const std::vector<int>& mine = layout.hosts[static_cast<size_t>(layout.my_host)];
    EXPECT_EQ(groups.intra->size(), static_cast<int>(mine.size()));
    EXPECT_EQ(groups.is_leader(), t.rank() == mine.front());
    if (groups.is_leader()) {
      EXPECT_EQ(groups.leaders->size(), static_cast<int>(layout.hosts.size()));
      EXPECT_EQ(groups.leaders->rank(), layout.my_host);
    }
    EXPECT_EQ(groups.world_size, t.size());
    EXPECT_EQ(groups.world_rank, t.rank());
  });
}

TEST_P(Hierarchical, AllreduceMatchesTheFlatResult) {
  run([](Transport& t, HierarchicalGroups& groups) {
    Tag tag = 100;
    for (const IntraHostCase& c : intra_host_cases()) {
      groups.intra_host = c.options;
      for (size_t count : testing::element_counts(t.size()))
        for (DType dtype : {DType::kF32, DType::kI32})
          for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax})
            for (AllreduceAlgo algo : kAlgos) {
              if (count > c.max_count) continue;
              const Buffer data = Buffer::host(dtype, count);
              fill_contribution(data, t.rank(), t.size());
              hierarchical_allreduce(groups, data, op, ++tag, algo);
              expect_elements(
                  data, 0, count, [&](size_t i) { return reduced(op, t.size(), i); }, t.rank(),
                  describe("hierarchical allreduce " + to_string(algo) + " " + to_string(op), dtype,
                           count, "intra-host " + c.name));
            }
    }
  });
}

TEST_P(Hierarchical, AllreduceAverage) {
  run([](Transport& t, HierarchicalGroups& groups) {
    const size_t count = 1000 * static_cast<size_t>(t.size()) + 3;
    for (const IntraHostCase& c : intra_host_cases()) {
      if (count > c.max_count) continue;
      groups.intra_host = c.options;
      const Buffer data = Buffer::host(DType::kF64, count);
      fill_contribution(data, t.rank(), t.size());
      hierarchical_allreduce_average(groups, data, 1);
      expect_elements(
          data, 0, count, [&](size_t i) { return reduced(ReduceOp::kSum, t.size(), i) / t.size(); },
          t.rank(), describe("hierarchical allreduce_average", DType::kF64, count, c.name), 1e-15);
    }
    const Buffer integers = Buffer::host(DType::kI64, 3);
    EXPECT_THROW(hierarchical_allreduce_average(groups, integers, 2), ConfigError);
  });
}

TEST_P(Hierarchical, ReduceScatterLeavesChunkROnRankR) {
  run([](Transport& t, HierarchicalGroups& groups) {
    for (const IntraHostCase& c : intra_host_cases()) {
      groups.intra_host = c.options;
      for (size_t count : testing::element_counts(t.size()))
        for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin}) {
          if (count > c.max_count) continue;
          const Buffer data = Buffer::host(DType::kF32, count);
          fill_contribution(data, t.rank(), t.size());
          hierarchical_reduce_scatter(groups, data, op, 3);
          const ChunkRange mine = chunk_range(count, t.size(), t.rank());
          expect_elements(
              data, mine.offset, mine.end(), [&](size_t i) { return reduced(op, t.size(), i); },
              t.rank(),
              describe("hierarchical reduce_scatter " + to_string(op), DType::kF32, count, c.name));
        }
    }
  });
}

TEST_P(Hierarchical, AllgatherGathersEveryRanksChunk) {
  run([](Transport& t, HierarchicalGroups& groups) {
    for (const IntraHostCase& c : intra_host_cases()) {
      groups.intra_host = c.options;
      for (size_t count : testing::element_counts(t.size())) {
        if (count > c.max_count) continue;
        const Buffer data = Buffer::host(DType::kI32, count);
        fill(data, -1);
        const ChunkRange mine = chunk_range(count, t.size(), t.rank());
        for (size_t i = mine.offset; i < mine.end(); ++i)
          testing::set_element(data, i, contribution(t.rank(), t.size(), i));
        hierarchical_allgather(groups, data, 4);
        for (int chunk = 0; chunk < t.size(); ++chunk) {
          const ChunkRange theirs = chunk_range(count, t.size(), chunk);
          expect_elements(
              data, theirs.offset, theirs.end(),
              [&](size_t i) { return contribution(chunk, t.size(), i); }, t.rank(),
              describe("hierarchical allgather", DType::kI32, count,
                       c.name + ", chunk " + std::to_string(chunk)));
        }
      }
    }
  });
}

TEST_P(Hierarchical, BroadcastFromEveryRoot) {
  run([](Transport& t, HierarchicalGroups& groups) {
    for (const IntraHostCase& c : intra_host_cases()) {
      groups.intra_host = c.options;
      const size_t count = std::min<size_t>(1000 * static_cast<size_t>(t.size()) + 3, c.max_count);
      for (int root = 0; root < t.size(); ++root) {
        const Buffer data = Buffer::host(DType::kF32, count);
        if (t.rank() == root) {
          fill_contribution(data, root, t.size());
        } else {
          fill(data, -1);
        }
        hierarchical_broadcast(groups, data, root, 5);
        expect_elements(
            data, 0, count, [&](size_t i) { return contribution(root, t.size(), i); }, t.rank(),
            describe("hierarchical broadcast", DType::kF32, count,
                     c.name + ", root " + std::to_string(root)));
      }
    }
    const Buffer data = Buffer::host(DType::kF32, 1);
    EXPECT_THROW(hierarchical_broadcast(groups, data, t.size(), 6), ConfigError);
  });
}

TEST_P(Hierarchical, IntraHostPhasesAlone) {
  // intra_host_reduce leaves the host's reduction on its leader; intra_host_broadcast hands the
  // leader's data to the host. With rank r contributing contribution(r), host h's reduction is the sum
  // over its ranks.
  run([](Transport& t, HierarchicalGroups& groups) {
    const HostLayout layout = host_layout(t);
    const std::vector<int>& mine = layout.hosts[static_cast<size_t>(layout.my_host)];
    const size_t count = 1000 * static_cast<size_t>(t.size()) + 3;
    auto host_sum = [&](size_t i) {
      double sum = 0;
      for (int r : mine)
        sum += contribution(r, t.size(), i);
      return sum;
    };
    for (const IntraHostCase& c : intra_host_cases()) {
      groups.intra_host = c.options;
      const size_t n = std::min(count, c.max_count);
      const Buffer data = Buffer::host(DType::kF64, n);
      fill_contribution(data, t.rank(), t.size());
      intra_host_reduce(groups, data, ReduceOp::kSum, 12);
      if (groups.is_leader())
        expect_elements(data, 0, n, host_sum, t.rank(),
                        describe("intra_host_reduce", DType::kF64, n, c.name));
      if (!groups.is_leader()) fill(data, -1);
      intra_host_broadcast(groups, data, 13);
      expect_elements(data, 0, n, host_sum, t.rank(),
                      describe("intra_host_broadcast", DType::kF64, n, c.name));
    }
  });
}

TEST(HierarchicalGroups, RejectSegmentsOfNoBytes) {
  testing::run_ranks(Backend::kThreads, 2, [](RankContext& ctx) {
    const IntraHostOptions empty{IntraHostAlgo::kChain, Bytes(0)};
    const IntraHostOptions negative{IntraHostAlgo::kAuto, Bytes(-4)};
    const IntraHostOptions no_channels{IntraHostAlgo::kNccl, Bytes(4096), -1};
    EXPECT_THROW(HierarchicalGroups(ctx.transport(), no_channels), ConfigError);
    EXPECT_THROW(HierarchicalGroups(ctx.transport(), empty), ConfigError);
    EXPECT_THROW(HierarchicalGroups(ctx.transport(), negative), ConfigError);
  });
}

TEST_P(Hierarchical, MetaBuffersRunEveryCollective) {
  run([](Transport& t, HierarchicalGroups& groups) {
    const Buffer data = Buffer::meta(DType::kF32, 1000 * static_cast<size_t>(t.size()) + 3);
    for (AllreduceAlgo algo : kAlgos)
      hierarchical_allreduce(groups, data, ReduceOp::kSum, 7, algo);
    hierarchical_allreduce_average(groups, data, 8);
    hierarchical_reduce_scatter(groups, data, ReduceOp::kSum, 9);
    hierarchical_allgather(groups, data, 10);
    hierarchical_broadcast(groups, data, t.size() - 1, 11);
    for (const IntraHostOptions& options : {IntraHostOptions{IntraHostAlgo::kChain, Bytes(400)},
                                            IntraHostOptions{IntraHostAlgo::kNccl, Bytes(400), 2}}) {
      groups.intra_host = options;
      hierarchical_allreduce(groups, data, ReduceOp::kSum, 12);
      hierarchical_reduce_scatter(groups, data, ReduceOp::kSum, 13);
      hierarchical_allgather(groups, data, 14);
      hierarchical_broadcast(groups, data, 0, 15);
    }
    EXPECT_EQ(data.view().data(), nullptr);
  });
}

INSTANTIATE_TEST_SUITE_P(Layouts, Hierarchical, ::testing::ValuesIn(layouts()),
                         [](const ::testing::TestParamInfo<Layout>& info) { return info.param.name; });

}  // namespace hierarchical_test
}  // namespace
}  // namespace bagua::collectives
