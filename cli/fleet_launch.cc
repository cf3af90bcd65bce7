// `dumpctl fleet`: the placeholder verb and the exec of dumpctl-fleet (see fleet_launch.h).

// GCC 12 at -O2: the false "potential null pointer dereference" of CLI11 2.1's inlined
// std::string (see cli/dumpctl.cc); before every include.
#pragma GCC diagnostic ignored "-Wnull-dereference"

#include "cli/fleet_launch.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "util/text.h"

#ifndef COREDUMPD_LIBEXECDIR
#error "COREDUMPD_LIBEXECDIR (CMake's CMAKE_INSTALL_FULL_LIBEXECDIR) must be defined"
#endif

namespace coredumpd::cli {

CLI::App* add_fleet_launcher(CLI::App& app) {
  CLI::App* fleet = app.add_subcommand("fleet", kFleetDescription);
  fleet->footer(std::string("Runs ") + kFleetProgram + ": `dumpctl fleet --help` shows its verbs and options.");
  // Everything after `fleet` is dumpctl-fleet's to parse: no help flag of its own, no options
  // handed back to dumpctl (fallthrough), the first unknown word ends the parse (prefix command).
  fleet->set_help_flag();
  fleet->fallthrough(false);
  fleet->prefix_command();
  return fleet;
}

std::string fleet_program_path() {
  if (const char* env = std::getenv("COREDUMPD_LIBEXEC_DIR"); env != nullptr && *env != '\0')
    return std::string(env) + "/" + kFleetProgram;
  // Installed, dumpctl is in /usr/bin, where no dumpctl-fleet is; built, both are in cli/.
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const std::string beside = (self.parent_path() / kFleetProgram).string();
    if (::access(beside.c_str(), X_OK) == 0) return beside;
  }
  return std::string(COREDUMPD_LIBEXECDIR) + "/coredumpd/" + kFleetProgram;
}

int exec_fleet_program(const std::vector<std::string>& args, const Io& io) {
  const std::string path = fleet_program_path();
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  argv.push_back(const_cast<char*>(path.c_str()));
  for (std::size_t i = 1; i < args.size(); ++i) argv.push_back(const_cast<char*>(args[i].c_str()));
  argv.push_back(nullptr);
  io.out.flush();
  io.err.flush();
  ::execv(path.c_str(), argv.data());
  const int saved = errno;
  io.err << "dumpctl: cannot run " << escape_for_display(path) << " (the fleet commands): " << std::strerror(saved)
         << '\n';
  return 1;
}

}  // namespace coredumpd::cli
