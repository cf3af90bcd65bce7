// CLI11 wiring of `dumpctl delete` and `export` (see verb_commands.h).

// GCC 12 at -O2 reports a false "potential null pointer dereference" inside std::string as inlined
// into CLI11 2.1's CLI::detail::split() (see dumpctl.cc); this file holds nothing but CLI11 wiring.
#pragma GCC diagnostic ignored "-Wnull-dereference"

#include "cli/verb_commands.h"

#include <CLI/CLI.hpp>

namespace coredumpd::cli {

VerbCommands::VerbCommands(CLI::App& app) {
  delete_ = app.add_subcommand("delete", "Delete coredumps: their records and core files (no prompt; see --dry-run)");
  delete_->add_option("MATCH", delete_opts_.matches,
                      "dump id, unique id prefix, PID, executable path or COMM, the newest match each; several allowed")
      ->required();
  delete_->add_flag("-n,--dry-run", delete_opts_.dry_run, "Only list what would be deleted");
  delete_->footer(
      "Root deletes on the store directly; other users delete their own dumps through coredumpd's query service "
      "(not those of setuid programs, nor those the kernel did not dump as them).");

  export_ = app.add_subcommand(
      "export", "Write one archive for a bug report: core, executable, mapped libraries, record as JSON");
  export_->add_option("MATCH", export_opts_.match,
                      "dump id, unique id prefix, PID, executable path or COMM (default: newest dump)");
  export_->add_option("-o,--output", export_opts_.output, "Archive to write (default: coredump-<id>.tar.zst)");
  export_->add_flag("-q,--quiet", export_opts_.quiet, "No progress line and no summary");
}

std::optional<int> VerbCommands::run(const GlobalOptions& g, const Io& io) const {
  if (*delete_) return cmd_delete(g, delete_opts_, io);
  if (*export_) return cmd_export(g, export_opts_, io);
  return std::nullopt;
}

}  // namespace coredumpd::cli
