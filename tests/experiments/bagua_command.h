// The fixture of the tests that run the `bagua` command as a user does: from the source tree, as a
// child process, with a fresh scratch folder per test (scratch.h) for its output and its files.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tests/experiments/scratch.h"

#ifndef BAGUA_BINARY
#error "BAGUA_BINARY (the path of the bagua executable) must be defined by the build"
#endif
#ifndef BAGUA_SOURCE_DIR
#error "BAGUA_SOURCE_DIR must be defined by the build"
#endif

namespace bagua::testing {

class BaguaCommandTest : public ScratchDirTest {
 protected:
  explicit BaguaCommandTest(std::string prefix) : ScratchDirTest(std::move(prefix)) {}

  // `bagua ARGS` run in the source tree; `launcher` (shell text such as "env VAR=1 " or an mpirun
  // line ending in a space) before it.
  CommandResult bagua(std::vector<std::string> args, const std::string& launcher = "") const {
    args.insert(args.begin(), BAGUA_BINARY);
    return run_command(BAGUA_SOURCE_DIR, launcher, args, dir_);
  }
};

}  // namespace bagua::testing
