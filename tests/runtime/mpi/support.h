// Helpers of the MPI test program. main.cc creates the MpiWorld before running the tests; every rank
// runs every test, in the same order, so a test body is the code of one rank. A test must not return
// early on one rank only (the others would wait for it forever): compare whole buffers with
// first_mismatch and EXPECT, never ASSERT inside a loop.
#pragma once

#include <cstddef>
#include <span>
#include <sstream>
#include <string>

#include "runtime/mpi/world.h"

namespace bagua::testing {

runtime::mpi::MpiWorld& mpi_world();

// "" when got[i] == expected(i) for every i, else the first mismatching index and both values.
template <class T, class Expected>
std::string first_mismatch(std::span<const T> got, Expected expected) {
  for (size_t i = 0; i < got.size(); ++i) {
    const T want = static_cast<T>(expected(i));
    if (!(got[i] == want)) {
      std::ostringstream os;
      os << "index " << i << " of " << got.size() << ": got " << got[i] << ", expected " << want;
      return os.str();
    }
  }
  return "";
}
template <class T, class Expected>
std::string first_mismatch(std::span<T> got, Expected expected) {
  return first_mismatch(std::span<const T>(got), expected);
}

}  // namespace bagua::testing
