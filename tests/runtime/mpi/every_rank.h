// Running one gtest program on every rank of an MPI job (the MPI and the NCCL runtime tests, whose
// main.cc set up their world first): every rank runs every test, in the same order, so a test body is
// the code of one rank. Only rank 0 prints the usual report, other ranks print their failures prefixed
// with their rank; the result is non-zero when a test failed on ANY rank.
//
// A test must not return early on one rank only (the others would wait for it forever): compare whole
// buffers with first_mismatch and EXPECT, never ASSERT inside a loop.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstddef>
#include <cstdio>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <vector>

namespace bagua::testing {

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

// Runs every test on this rank (`rank` of MPI_COMM_WORLD, MPI initialized): 1 when a test failed on
// any rank, else 0.
inline int run_all_tests_on_every_rank(int* argc, char** argv, int rank) {
  ::testing::InitGoogleTest(argc, argv);
  if (rank != 0) {
    ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
    std::unique_ptr<::testing::TestEventListener> printer(
        listeners.Release(listeners.default_result_printer()));
    listeners.Append(new RankFailurePrinter(rank));  // gtest owns it
  }
  const int mine = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int any = mine;
  MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && any && !mine) std::printf("FAILED on another rank (see its messages above)\n");
  return any;
}

// "" when got[i] == expected(i) for every i, else the first mismatching index and both values.
template <class T, class Expected>
std::string first_mismatch(std::span<const T> got, Expected expected) {
  for (size_t i = 0; i < got.size(); ++i) {
    const T want = static_cast<T>(expected(i));
    if (!(got[i] == want)) {
      std::ostringstream os;
      os << "index " << i << " of " << got.size() << ": got " << +got[i] << ", expected " << +want;
      return os.str();
    }
  }
  return "";
}
template <class T, class Expected>
std::string first_mismatch(std::span<T> got, Expected expected) {
  return first_mismatch(std::span<const T>(got), expected);
}
template <class T, class Expected>
std::string first_mismatch(const std::vector<T>& got, Expected expected) {
  return first_mismatch(std::span<const T>(got), expected);
}

}  // namespace bagua::testing
