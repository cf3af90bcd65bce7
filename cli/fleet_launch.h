// `dumpctl fleet`: run by a separate program, dumpctl-fleet (cli/fleet/), so that dumpctl itself
// does not load libpq, libcurl and libxml2 (and the ~40 libraries they pull) for every verb.
// dumpctl keeps a placeholder `fleet` verb, for its --help and its completions, that execs it.
#pragma once

#include <string>
#include <vector>

#include "cli/dumpctl.h"

namespace CLI {
class App;
}

namespace coredumpd::cli {

/// The fleet verbs' description in `dumpctl --help` (dumpctl's placeholder and dumpctl-fleet's verb).
inline constexpr const char* kFleetDescription =
    "The crashes of every host: the fleet index (PostgreSQL) and cores in S3";

/// The program's file name (installed in ${libexecdir}/coredumpd, built next to dumpctl).
inline constexpr const char* kFleetProgram = "dumpctl-fleet";

/// Adds the placeholder `fleet` verb to dumpctl's `app`: it takes every argument after it
/// unparsed (--help included: dumpctl-fleet prints the verb's help). Returns it: when it was
/// parsed, call exec_fleet_program().
CLI::App* add_fleet_launcher(CLI::App& app);

/// Where dumpctl-fleet is: $COREDUMPD_LIBEXEC_DIR/dumpctl-fleet when that variable is set (tests);
/// else the dumpctl-fleet beside the running program (/proc/self/exe) if there is one: a build
/// tree, where cli/ holds both; else ${CMAKE_INSTALL_FULL_LIBEXECDIR}/coredumpd/dumpctl-fleet.
std::string fleet_program_path();

/// Replaces this process with dumpctl-fleet (execv), passing `args` (dumpctl's whole command line;
/// args[0] becomes the program's path) unchanged: its exit status and output are dumpctl's.
/// Returns only on failure: 1, after "dumpctl: cannot run PATH: REASON" on `io.err`.
int exec_fleet_program(const std::vector<std::string>& args, const Io& io);

}  // namespace coredumpd::cli
