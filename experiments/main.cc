// The `bagua` command line: experiments/cli.h.
#include <exception>
#include <iostream>
#include <string>

#include "experiments/cli.h"
#include "experiments/runner.h"

int main(int argc, char** argv) {
  try {
    const int status = bagua::experiments::run_cli(argc, argv);
    // Standard output closed early (`bagua validate ... | head -1` with SIGPIPE ignored, so that the
    // writes fail with EPIPE instead of ending the process): one line, and a failing status.
    if (!(std::cout << std::flush)) {
      bagua::experiments::write_line(std::cerr, "error: could not write to standard output");
      return status == 0 ? 1 : status;
    }
    return status;
  } catch (const std::exception& e) {
    bagua::experiments::write_line(std::cerr, std::string("error: ") + e.what());
    return 1;
  }
}
