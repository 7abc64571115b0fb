// The `bagua` command line: experiments/cli.h.
#include <exception>
#include <iostream>
#include <string>

#include "experiments/cli.h"
#include "experiments/runner.h"

int main(int argc, char** argv) {
  try {
    return bagua::experiments::run_cli(argc, argv);
  } catch (const std::exception& e) {
    bagua::experiments::write_line(std::cerr, std::string("error: ") + e.what());
    return 1;
  }
}
