// Every collective of core/collectives over the MPI transport, against closed-form values: groups of
// P = 2 or 4 ranks (the whole job), of P - 1 ranks (odd: 3, or a single rank), hosts of 1, 2, 3 and
// all ranks for the hierarchical forms, and element counts 0, 1, not divisible by P, and large.
#include "core/collectives/collectives.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <functional>
#include <vector>

#include "core/collectives/nccl.h"
#include "core/ops.h"
#include "runtime/mpi/transport.h"
#include "tests/runtime/mpi/collective_values.h"
#include "tests/runtime/mpi/support.h"

namespace bagua {
namespace {

using collectives::AllreduceAlgo;
using collectives::BroadcastAlgo;
using collectives::chunk_range;
using testing::contribution;
using testing::first_mismatch;
using testing::mpi_world;
using testing::reduced;

const std::vector<size_t> kCounts = {0, 1, 7, 1003, 65536};  // 65536 i32: 256 KiB, beyond eager sends

// Runs `body` on the whole job's group and on the group of all ranks but the last.
void on_groups(const std::function<void(Transport&)>& body) {
  testing::on_groups(mpi_world().context().transport(), body);
}

Buffer contributions(int rank, size_t count) {
  Buffer data = Buffer::host(DType::kI32, count);
  for (size_t i = 0; i < count; ++i)
    data.as<int32_t>()[i] = contribution(rank, i);
  return data;
}

TEST(MpiCollectives, AllreduceEveryAlgorithmAndOp) {
  on_groups([](Transport& t) {
    for (AllreduceAlgo algo :
         {AllreduceAlgo::kRing, AllreduceAlgo::kTree, AllreduceAlgo::kHalvingDoubling,
          AllreduceAlgo::kRecursiveDoubling, AllreduceAlgo::kNative, AllreduceAlgo::kMpiTuned}) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax}) {
        for (size_t count : kCounts) {
          Buffer data = contributions(t.rank(), count);
          collectives::allreduce(t, data, op, 1, algo);
          EXPECT_EQ(
              first_mismatch(data.as<int32_t>(), [&](size_t i) { return reduced(op, t.size(), i); }),
              "")
              << to_string(algo) << " " << to_string(op) << " P=" << t.size() << " count " << count;
        }
      }
    }
  });
}

TEST(MpiCollectives, SegmentedTreeAllreduceAndAverage) {
  on_groups([](Transport& t) {
    for (size_t count : kCounts) {
      Buffer data = contributions(t.rank(), count);
      collectives::tree_allreduce(t, data, ReduceOp::kSum, 2, /*segment_elements=*/100);
      EXPECT_EQ(first_mismatch(data.as<int32_t>(),
                               [&](size_t i) { return reduced(ReduceOp::kSum, t.size(), i); }),
                "")
          << "P=" << t.size() << " count " << count;

      // Average of r + i % 5 over ranks: (P-1)/2 + i % 5, exact in f32.
      Buffer values = Buffer::host(DType::kF32, count);
      for (size_t i = 0; i < count; ++i)
        values.as<float>()[i] = static_cast<float>(t.rank() + i % 5);
      collectives::allreduce_average(t, values, 3);
      EXPECT_EQ(
          first_mismatch(values.as<float>(),
                         [&](size_t i) { return (t.size() - 1) / 2.0 + static_cast<double>(i % 5); }),
          "")
          << "average P=" << t.size() << " count " << count;
    }
  });
}

TEST(MpiCollectives, ReduceScatterLeavesEachRankItsChunk) {
  on_groups([](Transport& t) {
    for (size_t count : kCounts) {
      Buffer data = contributions(t.rank(), count);
      collectives::reduce_scatter(t, data, ReduceOp::kSum, 4);
      const auto chunk = chunk_range(count, t.size(), t.rank());
      EXPECT_EQ(
          first_mismatch(data.as<int32_t>().subspan(chunk.offset, chunk.count),
                         [&](size_t j) { return reduced(ReduceOp::kSum, t.size(), chunk.offset + j); }),
          "")
          << "P=" << t.size() << " count " << count;
    }
  });
}

TEST(MpiCollectives, AllgatherCollectsEveryRanksChunk) {
  // Rank r contributes chunk r holding r * 100000 + i; the rest of its buffer holds -1.
  on_groups([](Transport& t) {
    for (size_t count : kCounts) {
      Buffer data = Buffer::host(DType::kI32, count);
      fill(data, -1);
      const auto mine = chunk_range(count, t.size(), t.rank());
      for (size_t i = mine.offset; i < mine.end(); ++i)
        data.as<int32_t>()[i] = t.rank() * 100000 + static_cast<int32_t>(i);
      collectives::allgather(t, data, 5);
      EXPECT_EQ(first_mismatch(data.as<int32_t>(),
                               [&](size_t i) {
                                 int owner = 0;
                                 while (chunk_range(count, t.size(), owner).end() <= i)
                                   ++owner;
                                 return owner * 100000 + static_cast<int32_t>(i);
                               }),
                "")
          << "P=" << t.size() << " count " << count;
    }
  });
}

TEST(MpiCollectives, BroadcastAndReduceFromEveryKindOfRoot) {
  on_groups([](Transport& t) {
    for (int root : {0, t.size() - 1}) {
      for (BroadcastAlgo algo : {BroadcastAlgo::kBinomial, BroadcastAlgo::kChain}) {
        for (size_t segment : {size_t{0}, size_t{100}}) {
          for (size_t count : kCounts) {
            Buffer data = Buffer::host(DType::kI32, count);
            for (size_t i = 0; i < count; ++i)
              data.as<int32_t>()[i] = t.rank() == root ? root * 7 + static_cast<int32_t>(i) : -1;
            collectives::broadcast(t, data, root, 6, algo, segment);
            EXPECT_EQ(first_mismatch(data.as<int32_t>(),
                                     [&](size_t i) { return root * 7 + static_cast<int>(i); }),
                      "")
                << to_string(algo) << " root " << root << " segment " << segment << " P=" << t.size()
                << " count " << count;
          }
        }
      }
      for (size_t count : kCounts) {
        Buffer data = contributions(t.rank(), count);
        collectives::reduce(t, data, root, ReduceOp::kMax, 7, /*segment_elements=*/100);
        if (t.rank() == root) {
          EXPECT_EQ(first_mismatch(data.as<int32_t>(),
                                   [&](size_t i) { return reduced(ReduceOp::kMax, t.size(), i); }),
                    "")
              << "reduce root " << root << " P=" << t.size() << " count " << count;
        }
      }
    }
  });
}

TEST(MpiCollectives, AlltoallTransposesChunks) {
  // Chunk i of rank src's send holds src * 1000000 + i * 1000 + j (j: index within the chunk); it lands
  // in chunk src of rank i's receive. Pairwise, NCCL's grouped form, and grouped one peer per wave.
  on_groups([](Transport& t) {
    const int p = t.size();
    for (int form = 0; form < 3; ++form)
      for (size_t per_rank : {size_t{0}, size_t{1}, size_t{5}, size_t{300}}) {
        const size_t count = per_rank * static_cast<size_t>(p);
        Buffer send = Buffer::host(DType::kI32, count);
        Buffer recv = Buffer::host(DType::kI32, count);
        fill(recv, -1);
        for (size_t k = 0; k < count; ++k)
          send.as<int32_t>()[k] =
              t.rank() * 1000000 + static_cast<int32_t>(k / per_rank * 1000 + k % per_rank);
        if (form == 0) collectives::alltoall(t, send, recv, 8);
        if (form == 1) collectives::alltoall(t, send, recv, 8, collectives::AlltoallAlgo::kNccl);
        if (form == 2) collectives::grouped_alltoall(t, send, recv, 8, 1);
        EXPECT_EQ(first_mismatch(recv.as<int32_t>(),
                                 [&](size_t k) {
                                   const auto src = static_cast<int32_t>(k / per_rank);
                                   return src * 1000000 + t.rank() * 1000 +
                                          static_cast<int32_t>(k % per_rank);
                                 }),
                  "")
            << "P=" << p << " per rank " << per_rank << " form " << form;
      }
  });
}

TEST(MpiCollectives, NcclAllgatherGathersTheRingsBytes) {
  // ncclAllGather's pipelined ring (AllgatherAlgo::kNccl, on the tuner's channels: 1 below 64 KiB,
  // 2 from it) and the pipelined allgather forced onto 3 channels leave every rank with the ring's
  // bytes: rank r's chunk r of the buffer, whatever the channel count (ncclAllGather's layout).
  on_groups([](Transport& t) {
    for (size_t count : kCounts) {
      const collectives::ChunkRange mine = chunk_range(count, t.size(), t.rank());
      Buffer ring = Buffer::host(DType::kI32, count);
      fill(ring, -1);
      for (size_t i = mine.offset; i < mine.end(); ++i)
        ring.as<int32_t>()[i] = contribution(t.rank(), i);
      Buffer nccl = Buffer::host(DType::kI32, count);
      Buffer three = Buffer::host(DType::kI32, count);
      copy(nccl, ring);
      copy(three, ring);
      collectives::allgather(t, ring, 11);
      collectives::allgather(t, nccl, 12, collectives::AllgatherAlgo::kNccl);
      collectives::PipelineOptions channels;
      channels.channels = 3;
      collectives::pipelined_allgather(t, three, 13, channels);
      auto expected = [&](size_t i) {
        for (int r = 0; r < t.size(); ++r)
          if (i < chunk_range(count, t.size(), r).end()) return contribution(r, i);
        return -1;
      };
      EXPECT_EQ(first_mismatch(ring.as<int32_t>(), expected), "")
          << "ring P=" << t.size() << " count " << count;
      EXPECT_EQ(first_mismatch(nccl.as<int32_t>(), expected), "")
          << "nccl P=" << t.size() << " count " << count;
      EXPECT_EQ(first_mismatch(three.as<int32_t>(), expected), "")
          << "3 channels P=" << t.size() << " count " << count;
    }
  });
}

TEST(MpiCollectives, HierarchicalFormsOverEmulatedHosts) {
  // Hosts of 1, 2 and 3 ranks (uneven at 4 ranks: {0,1,2} and {3}) and of all ranks.
  const int world_size = mpi_world().size();
  for (int ranks_per_host : {1, 2, 3, world_size}) {
    runtime::mpi::MpiTransport world(MPI_COMM_WORLD, ranks_per_host);
    collectives::HierarchicalGroups groups(world);
    const int p = world.size();
    const int r = world.rank();
    const std::string where =
        "ranks_per_host " + std::to_string(ranks_per_host) + " P=" + std::to_string(p);
    for (size_t count : kCounts) {
      Buffer data = contributions(r, count);
      collectives::hierarchical_allreduce(groups, data, ReduceOp::kSum, 10);
      EXPECT_EQ(
          first_mismatch(data.as<int32_t>(), [&](size_t i) { return reduced(ReduceOp::kSum, p, i); }),
          "")
          << "allreduce " << where << " count " << count;

      Buffer values = Buffer::host(DType::kF64, count);
      for (size_t i = 0; i < count; ++i)
        values.as<double>()[i] = r + static_cast<double>(i % 5);
      collectives::hierarchical_allreduce_average(groups, values, 11);
      EXPECT_EQ(first_mismatch(values.as<double>(),
                               [&](size_t i) { return (p - 1) / 2.0 + static_cast<double>(i % 5); }),
                "")
          << "average " << where << " count " << count;

      Buffer scattered = contributions(r, count);
      collectives::hierarchical_reduce_scatter(groups, scattered, ReduceOp::kSum, 12);
      const auto chunk = chunk_range(count, p, r);
      EXPECT_EQ(first_mismatch(scattered.as<int32_t>().subspan(chunk.offset, chunk.count),
                               [&](size_t j) { return reduced(ReduceOp::kSum, p, chunk.offset + j); }),
                "")
          << "reduce_scatter " << where << " count " << count;

      Buffer gathered = Buffer::host(DType::kI32, count);
      fill(gathered, -1);
      for (size_t i = chunk.offset; i < chunk.end(); ++i)
        gathered.as<int32_t>()[i] = r * 100000 + static_cast<int32_t>(i);
      collectives::hierarchical_allgather(groups, gathered, 13);
      EXPECT_EQ(first_mismatch(gathered.as<int32_t>(),
                               [&](size_t i) {
                                 int owner = 0;
                                 while (chunk_range(count, p, owner).end() <= i)
                                   ++owner;
                                 return owner * 100000 + static_cast<int32_t>(i);
                               }),
                "")
          << "allgather " << where << " count " << count;

      for (int root : {0, p - 1}) {
        Buffer sent = Buffer::host(DType::kI32, count);
        for (size_t i = 0; i < count; ++i)
          sent.as<int32_t>()[i] = r == root ? root * 7 + static_cast<int32_t>(i) : -1;
        collectives::hierarchical_broadcast(groups, sent, root, 14);
        EXPECT_EQ(first_mismatch(sent.as<int32_t>(),
                                 [&](size_t i) { return root * 7 + static_cast<int>(i); }),
                  "")
            << "broadcast root " << root << " " << where << " count " << count;
      }
    }
  }
}

TEST(MpiCollectives, MetaBuffersRunEveryCollective) {
  // Meta buffers carry no data, yet every message crosses the wire at full size; a mismatch in sizes
  // between ranks would fail the receive.
  on_groups([](Transport& t) {
    constexpr size_t kCount = 1 << 16;
    for (AllreduceAlgo algo :
         {AllreduceAlgo::kRing, AllreduceAlgo::kTree, AllreduceAlgo::kHalvingDoubling,
          AllreduceAlgo::kRecursiveDoubling, AllreduceAlgo::kNative})
      collectives::allreduce(t, Buffer::meta(DType::kF32, kCount), ReduceOp::kSum, 20, algo);
    collectives::reduce_scatter(t, Buffer::meta(DType::kF32, kCount), ReduceOp::kSum, 21);
    collectives::allgather(t, Buffer::meta(DType::kF32, kCount), 22);
    collectives::broadcast(t, Buffer::meta(DType::kF32, kCount), 0, 23, BroadcastAlgo::kChain, 1000);
    const size_t divisible = kCount / static_cast<size_t>(t.size()) * static_cast<size_t>(t.size());
    collectives::alltoall(t, Buffer::meta(DType::kF32, divisible), Buffer::meta(DType::kF32, divisible),
                          24);
    SUCCEED();
  });
}

TEST(MpiCollectives, NcclsPipelinedRingAndDoubleTree) {
  // NCCL's algorithms over MPI: the pipelined ring's collectives with 1 and 3 channels and small slices
  // (many messages in flight), the double binary tree, and "nccl" (the tuner's choice from NCCL's
  // defaults, no link hint on MPI).
  on_groups([](Transport& t) {
    for (int channels : {1, 3})
      for (size_t count : kCounts) {
        collectives::PipelineOptions o;
        o.channels = channels;
        o.step = Bytes(64);  // slices of 128 B, 32 elements
        Buffer data = contributions(t.rank(), count);
        collectives::pipelined_ring_allreduce(t, data, ReduceOp::kSum, 30, o);
        EXPECT_EQ(first_mismatch(data.as<int32_t>(),
                                 [&](size_t i) { return reduced(ReduceOp::kSum, t.size(), i); }),
                  "")
            << "pipelined ring, " << channels << " channels, P=" << t.size() << " count " << count;
        o.slice_steps = 1;
        Buffer tree = contributions(t.rank(), count);
        collectives::double_tree_allreduce(t, tree, ReduceOp::kMax, 31, o);
        EXPECT_EQ(first_mismatch(tree.as<int32_t>(),
                                 [&](size_t i) { return reduced(ReduceOp::kMax, t.size(), i); }),
                  "")
            << "double tree, " << channels << " channels, P=" << t.size() << " count " << count;
        Buffer chosen = contributions(t.rank(), count);
        collectives::allreduce(t, chosen, ReduceOp::kMin, 32, AllreduceAlgo::kNccl);
        EXPECT_EQ(first_mismatch(chosen.as<int32_t>(),
                                 [&](size_t i) { return reduced(ReduceOp::kMin, t.size(), i); }),
                  "")
            << "nccl, P=" << t.size() << " count " << count;
        Buffer root_data = contributions(t.rank(), count);
        collectives::pipelined_reduce(t, root_data, 0, ReduceOp::kSum, 33, o);
        if (t.rank() == 0) {
          EXPECT_EQ(first_mismatch(root_data.as<int32_t>(),
                                   [&](size_t i) { return reduced(ReduceOp::kSum, t.size(), i); }),
                    "")
              << "pipelined reduce, P=" << t.size() << " count " << count;
        }
        collectives::pipelined_broadcast(t, root_data, 0, 34, o);
        EXPECT_EQ(first_mismatch(root_data.as<int32_t>(),
                                 [&](size_t i) { return reduced(ReduceOp::kSum, t.size(), i); }),
                  "")
            << "pipelined broadcast, P=" << t.size() << " count " << count;
      }
  });
}

}  // namespace
}  // namespace bagua
