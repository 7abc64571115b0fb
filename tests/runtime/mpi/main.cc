// Test main for the MPI runtime, run under mpirun: every rank runs every test; only rank 0 prints the
// usual report, other ranks print their failures prefixed with their rank; the exit code is non-zero
// when a test failed on ANY rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <memory>

#include "tests/runtime/mpi/support.h"

namespace bagua::testing {
namespace {

runtime::mpi::MpiWorld* world = nullptr;

// Prints a failing assertion of a rank other than 0 (rank 0 has gtest's own printer).
class RankFailurePrinter final : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_,
                 result.file_name() ? result.file_name() : "?", result.line_number(), result.message());
    std::fflush(stderr);
  }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result()->Failed())
      std::fprintf(stderr, "[rank %d] FAILED %s.%s\n", rank_, info.test_suite_name(), info.name());
  }

 private:
  int rank_;
};

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
    ::testing::InitGoogleTest(&argc, argv);
    if (mpi.rank() != 0) {
      ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
      std::unique_ptr<::testing::TestEventListener> printer(
          listeners.Release(listeners.default_result_printer()));
      listeners.Append(new bagua::testing::RankFailurePrinter(mpi.rank()));  // gtest owns it
    }
    const int mine = RUN_ALL_TESTS() != 0 ? 1 : 0;
    int any = mine;
    MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (mpi.rank() == 0 && any && !mine)
      std::printf("FAILED on another rank (see its messages above)\n");
    failed = any;
    bagua::testing::world = nullptr;
  }
  return failed;
}
