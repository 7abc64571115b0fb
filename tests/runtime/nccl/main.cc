// Test main for the NCCL runtime, run under mpirun (and alone, as a job of one rank): every rank runs
// every test (tests/runtime/mpi/every_rank.h); the exit code is non-zero when a test failed on ANY
// rank.
//
// Without a CUDA device for every rank (decided collectively, so that all ranks agree) no NcclWorld is
// made and every test skips; rank 0 prints the reason once, ending in "NCCL tests skipped", which ctest
// recognizes as a skip.
#include <mpi.h>

#include <cstdio>
#include <memory>

#include "runtime/mpi/world.h"
#include "tests/runtime/mpi/every_rank.h"
#include "tests/runtime/nccl/support.h"

namespace bagua::testing {
namespace {

runtime::nccl::NcclWorld* world = nullptr;

}  // namespace

runtime::nccl::NcclWorld* nccl_world() {
  return world;
}

std::string first_byte_difference(std::span<const std::byte> got, std::span<const std::byte> expected) {
  if (got.size() != expected.size())
    return "sizes differ: " + std::to_string(got.size()) + " vs " + std::to_string(expected.size()) +
           " bytes";
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != expected[i])
      return "byte " + std::to_string(i) + " of " + std::to_string(got.size()) + ": got " +
             std::to_string(static_cast<int>(got[i])) + ", expected " +
             std::to_string(static_cast<int>(expected[i]));
  }
  return "";
}

uint64_t TestRng::next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double TestRng::uniform(double lo, double hi) {
  return lo + (hi - lo) * static_cast<double>(next() >> 11) * 0x1p-53;
}

}  // namespace bagua::testing

int main(int argc, char** argv) {
  int failed = 0;
  {
    // MPI for the whole job, with or without GPUs; NcclWorld then finds it initialized.
    bagua::runtime::mpi::MpiWorld mpi(&argc, &argv);
    // Every rank needs a GPU of its own: at least as many devices as ranks on its node.
    const int devices = bagua::runtime::nccl::NcclWorld::device_count();
    MPI_Comm node = MPI_COMM_NULL;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, mpi.rank(), MPI_INFO_NULL, &node);
    int local_ranks = 1;
    MPI_Comm_size(node, &local_ranks);
    MPI_Comm_free(&node);
    int enough = devices > 0 ? 1 : 0;
    int own_device = devices >= local_ranks ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &enough, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &own_device, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    std::unique_ptr<bagua::runtime::nccl::NcclWorld> nccl;
    if (enough && own_device) {
      nccl = std::make_unique<bagua::runtime::nccl::NcclWorld>(&argc, &argv);
    } else if (mpi.rank() == 0) {
      std::printf("%s\n",
                  enough ? bagua::testing::kSharedDeviceMessage : bagua::testing::kNoDeviceMessage);
      std::fflush(stdout);
    }
    bagua::testing::world = nccl.get();

    failed = bagua::testing::run_all_tests_on_every_rank(&argc, argv, mpi.rank());
    bagua::testing::world = nullptr;
    nccl.reset();  // communicators before MPI
  }
  return failed;
}
