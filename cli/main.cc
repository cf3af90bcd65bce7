// dumpctl's entry point: everything else lives in dumpctl_lib (see dumpctl.h).
#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include "cli/dumpctl.h"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv, argv + argc);
  const coredumpd::cli::Io io{std::cout, std::cerr, ::isatty(STDOUT_FILENO) == 1};
  const int rc = coredumpd::cli::dumpctl_main(args, io);
  std::cout.flush();
  return std::cout ? rc : 1;
}
