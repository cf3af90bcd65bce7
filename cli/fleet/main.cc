// dumpctl-fleet: `dumpctl fleet top|crashes|fetch`, exec'd by dumpctl (cli/fleet_launch.h) with its
// command line unchanged. Apart from dumpctl so that only these verbs load libpq, libcurl and
// libxml2; the options before and after `fleet` are parsed as dumpctl parses them (dumpctl_main()).
#include <unistd.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/dumpctl.h"
#include "cli/fleet/commands_fleet.h"

int main(int argc, char** argv) {
  using namespace coredumpd::cli;
  const std::vector<std::string> args(argv, argv + argc);
  const Io io{std::cout, std::cerr, ::isatty(STDOUT_FILENO) == 1};
  const int rc = dumpctl_main(args, io, [](CLI::App& app) { return std::make_unique<FleetCommands>(app); });
  std::cout.flush();
  return std::cout ? rc : 1;
}
