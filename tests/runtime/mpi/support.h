// Helpers of the MPI test program. main.cc creates the MpiWorld before running the tests on every rank
// (every_rank.h: a test body is the code of one rank, which must not return early on one rank only).
#pragma once

#include "runtime/mpi/world.h"
#include "tests/runtime/mpi/every_rank.h"

namespace bagua::testing {

runtime::mpi::MpiWorld& mpi_world();

}  // namespace bagua::testing
