// The `bagua` command line: experiments/cli.h.
#include <exception>
#include <iostream>
#include <string>

#include "experiments/cli.h"

int main(int argc, char** argv) {
  try {
    return bagua::experiments::run_cli(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << (std::string("error: ") + e.what() + "\n") << std::flush;  // one write: see cli.cc
    return 1;
  }
}
