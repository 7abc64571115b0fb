// Test main for the MPI runtime, run under mpirun: every rank runs every test (every_rank.h); the exit
// code is non-zero when a test failed on ANY rank.
#include "tests/runtime/mpi/every_rank.h"
#include "tests/runtime/mpi/support.h"

namespace bagua::testing {
namespace {

runtime::mpi::MpiWorld* world = nullptr;

}  // namespace

runtime::mpi::MpiWorld& mpi_world() {
  return *world;
}

}  // namespace bagua::testing

int main(int argc, char** argv) {
  int failed = 0;
  {
    bagua::runtime::mpi::MpiWorld mpi(&argc, &argv);
    bagua::testing::world = &mpi;
    failed = bagua::testing::run_all_tests_on_every_rank(&argc, argv, mpi.rank());
    bagua::testing::world = nullptr;
  }
  return failed;
}
