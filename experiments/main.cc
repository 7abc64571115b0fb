// The `bagua` command line: experiments/cli.h.
#include <exception>
#include <iostream>

#include "experiments/cli.h"

int main(int argc, char** argv) {
  try {
    return bagua::experiments::run_cli(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return 1;
  }
}
