// Every collective of core/collectives over the NCCL transport on device buffers, against closed-form
// values: the job's group and the group of all ranks but the last (a single rank at P = 2),
// hierarchical forms over emulated hosts of 1 and of all ranks, element counts 0, 1, not divisible by
// P, and large.
#include "core/collectives/collectives.h"

#include <mpi.h>

#include <vector>

#include "core/collectives/nccl.h"
#include "runtime/mpi/transport.h"
#include "tests/runtime/mpi/collective_values.h"
#include "tests/runtime/nccl/support.h"

namespace bagua {
namespace {

using collectives::AllreduceAlgo;
using collectives::BroadcastAlgo;
using collectives::chunk_range;
using testing::contribution;
using testing::first_mismatch;
using testing::NcclTest;
using testing::on_groups;
using testing::on_host;
using testing::reduced;

const std::vector<size_t> kCounts = {0, 1, 7, 1003, 65536};

std::vector<int32_t> contributions(int rank, size_t count) {
  std::vector<int32_t> v(count);
  for (size_t i = 0; i < count; ++i)
    v[i] = contribution(rank, i);
  return v;
}

// The owner of element i under chunk_range's cut into p chunks.
int owner_of(size_t count, int p, size_t i) {
  int owner = 0;
  while (chunk_range(count, p, owner).end() <= i)
    ++owner;
  return owner;
}

class NcclCollectives : public NcclTest {};

TEST_F(NcclCollectives, AllreduceEveryAlgorithmAndOp) {
  on_groups(context().transport(), [&](Transport& t) {
    for (AllreduceAlgo algo : {AllreduceAlgo::kRing, AllreduceAlgo::kTree,
                               AllreduceAlgo::kHalvingDoubling, AllreduceAlgo::kNative}) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax}) {
        for (size_t count : kCounts) {
          Buffer data = on_device(contributions(t.rank(), count));
          collectives::allreduce(t, data, op, 1, algo);
          EXPECT_EQ(first_mismatch(on_host<int32_t>(data),
                                   [&](size_t i) { return reduced(op, t.size(), i); }),
                    "")
              << to_string(algo) << " " << to_string(op) << " P=" << t.size() << " count " << count;
        }
      }
    }
  });
}

TEST_F(NcclCollectives, NcclsAlgorithmsAgreeWithNcclAllReduce) {
  // The pipelined ring, the double binary tree and "nccl" (core/collectives/nccl.h), run over the
  // NCCL transport's point-to-point calls, against the native ncclAllReduce on the same input.
  on_groups(context().transport(), [&](Transport& t) {
    for (size_t count : kCounts) {
      Buffer native = on_device(contributions(t.rank(), count));
      collectives::allreduce(t, native, ReduceOp::kSum, 40, AllreduceAlgo::kNative);
      const std::vector<int32_t> expected = on_host<int32_t>(native);
      constexpr const char* kNames[] = {"pipelined ring", "double tree", "nccl"};
      for (int which = 0; which < 3; ++which) {
        collectives::PipelineOptions o;
        o.channels = 2;
        Buffer data = on_device(contributions(t.rank(), count));
        if (which == 0) collectives::pipelined_ring_allreduce(t, data, ReduceOp::kSum, 41, o);
        if (which == 1) collectives::double_tree_allreduce(t, data, ReduceOp::kSum, 42, o);
        if (which == 2) collectives::allreduce(t, data, ReduceOp::kSum, 43, AllreduceAlgo::kNccl);
        EXPECT_EQ(first_mismatch(on_host<int32_t>(data), [&](size_t i) { return expected[i]; }), "")
            << kNames[which] << " P=" << t.size() << " count " << count;
      }
    }
  });
}

TEST_F(NcclCollectives, SegmentedTreeAllreduceAndAverage) {
  on_groups(context().transport(), [&](Transport& t) {
    for (size_t count : kCounts) {
      Buffer data = on_device(contributions(t.rank(), count));
      collectives::tree_allreduce(t, data, ReduceOp::kSum, 2, /*segment_elements=*/100);
      EXPECT_EQ(first_mismatch(on_host<int32_t>(data),
                               [&](size_t i) { return reduced(ReduceOp::kSum, t.size(), i); }),
                "")
          << "P=" << t.size() << " count " << count;

      // Average of r + i % 5 over ranks: (P-1)/2 + i % 5, exact in f32.
      std::vector<float> v(count);
      for (size_t i = 0; i < count; ++i)
        v[i] = static_cast<float>(t.rank() + static_cast<int>(i % 5));
      Buffer values = on_device(v);
      collectives::allreduce_average(t, values, 3);
      EXPECT_EQ(
          first_mismatch(on_host<float>(values),
                         [&](size_t i) { return (t.size() - 1) / 2.0 + static_cast<double>(i % 5); }),
          "")
          << "average P=" << t.size() << " count " << count;
    }
  });
}

TEST_F(NcclCollectives, ReduceScatterAndAllgather) {
  on_groups(context().transport(), [&](Transport& t) {
    for (size_t count : kCounts) {
      Buffer data = on_device(contributions(t.rank(), count));
      collectives::reduce_scatter(t, data, ReduceOp::kSum, 4);
      const auto chunk = chunk_range(count, t.size(), t.rank());
      const std::vector<int32_t> got = on_host<int32_t>(data);
      EXPECT_EQ(
          first_mismatch(std::span<const int32_t>(got).subspan(chunk.offset, chunk.count),
                         [&](size_t j) { return reduced(ReduceOp::kSum, t.size(), chunk.offset + j); }),
          "")
          << "reduce_scatter P=" << t.size() << " count " << count;

      // Rank r contributes chunk r holding r * 100000 + i; the rest of its buffer holds -1.
      std::vector<int32_t> mine(count, -1);
      for (size_t i = chunk.offset; i < chunk.end(); ++i)
        mine[i] = t.rank() * 100000 + static_cast<int32_t>(i);
      Buffer gathered = on_device(mine);
      collectives::allgather(t, gathered, 5);
      EXPECT_EQ(first_mismatch(on_host<int32_t>(gathered),
                               [&](size_t i) {
                                 return owner_of(count, t.size(), i) * 100000 + static_cast<int32_t>(i);
                               }),
                "")
          << "allgather P=" << t.size() << " count " << count;
    }
  });
}

TEST_F(NcclCollectives, BroadcastAndReduceFromEveryKindOfRoot) {
  on_groups(context().transport(), [&](Transport& t) {
    for (int root : {0, t.size() - 1}) {
      for (BroadcastAlgo algo : {BroadcastAlgo::kBinomial, BroadcastAlgo::kChain}) {
        for (size_t segment : {size_t{0}, size_t{100}}) {
          for (size_t count : kCounts) {
            std::vector<int32_t> v(count);
            for (size_t i = 0; i < count; ++i)
              v[i] = t.rank() == root ? root * 7 + static_cast<int32_t>(i) : -1;
            Buffer data = on_device(v);
            collectives::broadcast(t, data, root, 6, algo, segment);
            EXPECT_EQ(first_mismatch(on_host<int32_t>(data),
                                     [&](size_t i) { return root * 7 + static_cast<int>(i); }),
                      "")
                << to_string(algo) << " root " << root << " segment " << segment << " P=" << t.size()
                << " count " << count;
          }
        }
      }
      for (size_t count : kCounts) {
        Buffer data = on_device(contributions(t.rank(), count));
        collectives::reduce(t, data, root, ReduceOp::kMax, 7, /*segment_elements=*/100);
        if (t.rank() == root) {
          EXPECT_EQ(first_mismatch(on_host<int32_t>(data),
                                   [&](size_t i) { return reduced(ReduceOp::kMax, t.size(), i); }),
                    "")
              << "reduce root " << root << " P=" << t.size() << " count " << count;
        }
      }
    }
  });
}

TEST_F(NcclCollectives, AlltoallTransposesChunks) {
  // Chunk i of rank src's send holds src * 1000000 + i * 1000 + j (j: index within the chunk); it lands
  // in chunk src of rank i's receive.
  on_groups(context().transport(), [&](Transport& t) {
    const int p = t.size();
    for (size_t per_rank : {size_t{0}, size_t{1}, size_t{5}, size_t{300}}) {
      const size_t count = per_rank * static_cast<size_t>(p);
      std::vector<int32_t> v(count);
      for (size_t k = 0; k < count; ++k)
        v[k] = t.rank() * 1000000 + static_cast<int32_t>(k / per_rank * 1000 + k % per_rank);
      Buffer send = on_device(v);
      Buffer recv = on_device(std::vector<int32_t>(count, -1));
      collectives::alltoall(t, send, recv, 8);
      EXPECT_EQ(first_mismatch(on_host<int32_t>(recv),
                               [&](size_t k) {
                                 const auto src = static_cast<int32_t>(k / per_rank);
                                 return src * 1000000 + t.rank() * 1000 +
                                        static_cast<int32_t>(k % per_rank);
                               }),
                "")
          << "P=" << p << " per rank " << per_rank;
    }
  });
}

TEST_F(NcclCollectives, HierarchicalFormsOverEmulatedHosts) {
  // Hosts of one rank each, and one host of all ranks; each an NCCL transport of its own (collective).
  const int world_size = world().size();
  for (int ranks_per_host : {1, world_size}) {
    runtime::nccl::NcclTransport transport(
        std::make_unique<runtime::mpi::MpiTransport>(MPI_COMM_WORLD, ranks_per_host), world().device(),
        nullptr);
    collectives::HierarchicalGroups groups(transport);
    const int p = transport.size();
    const int r = transport.rank();
    const std::string where =
        "ranks_per_host " + std::to_string(ranks_per_host) + " P=" + std::to_string(p);
    for (size_t count : kCounts) {
      Buffer data = on_device(contributions(r, count));
      collectives::hierarchical_allreduce(groups, data, ReduceOp::kSum, 10);
      EXPECT_EQ(first_mismatch(on_host<int32_t>(data),
                               [&](size_t i) { return reduced(ReduceOp::kSum, p, i); }),
                "")
          << "allreduce " << where << " count " << count;

      Buffer scattered = on_device(contributions(r, count));
      collectives::hierarchical_reduce_scatter(groups, scattered, ReduceOp::kSum, 12);
      const auto chunk = chunk_range(count, p, r);
      const std::vector<int32_t> got = on_host<int32_t>(scattered);
      EXPECT_EQ(first_mismatch(std::span<const int32_t>(got).subspan(chunk.offset, chunk.count),
                               [&](size_t j) { return reduced(ReduceOp::kSum, p, chunk.offset + j); }),
                "")
          << "reduce_scatter " << where << " count " << count;

      std::vector<int32_t> mine(count, -1);
      for (size_t i = chunk.offset; i < chunk.end(); ++i)
        mine[i] = r * 100000 + static_cast<int32_t>(i);
      Buffer gathered = on_device(mine);
      collectives::hierarchical_allgather(groups, gathered, 13);
      EXPECT_EQ(first_mismatch(
                    on_host<int32_t>(gathered),
                    [&](size_t i) { return owner_of(count, p, i) * 100000 + static_cast<int32_t>(i); }),
                "")
          << "allgather " << where << " count " << count;

      for (int root : {0, p - 1}) {
        std::vector<int32_t> v(count);
        for (size_t i = 0; i < count; ++i)
          v[i] = r == root ? root * 7 + static_cast<int32_t>(i) : -1;
        Buffer sent = on_device(v);
        collectives::hierarchical_broadcast(groups, sent, root, 14);
        EXPECT_EQ(first_mismatch(on_host<int32_t>(sent),
                                 [&](size_t i) { return root * 7 + static_cast<int>(i); }),
                  "")
            << "broadcast root " << root << " " << where << " count " << count;
      }
    }
  }
}

TEST_F(NcclCollectives, MetaBuffersRunEveryCollective) {
  // Meta buffers carry no data, yet every message crosses the wire at full size from scratch.
  on_groups(context().transport(), [](Transport& t) {
    constexpr size_t kCount = 1 << 16;
    for (AllreduceAlgo algo : {AllreduceAlgo::kRing, AllreduceAlgo::kTree,
                               AllreduceAlgo::kHalvingDoubling, AllreduceAlgo::kNative})
      collectives::allreduce(t, Buffer::meta(DType::kF32, kCount), ReduceOp::kSum, 20, algo);
    collectives::reduce_scatter(t, Buffer::meta(DType::kF32, kCount), ReduceOp::kSum, 21);
    collectives::allgather(t, Buffer::meta(DType::kF32, kCount), 22);
    collectives::broadcast(t, Buffer::meta(DType::kF32, kCount), 0, 23, BroadcastAlgo::kChain, 1000);
    const size_t divisible = kCount / 12 * 12;  // divisible by P = 1, 2, 3, 4
    collectives::alltoall(t, Buffer::meta(DType::kF32, divisible), Buffer::meta(DType::kF32, divisible),
                          24);
  });
}

}  // namespace
}  // namespace bagua
