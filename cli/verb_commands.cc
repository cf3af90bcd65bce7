// CLI11 wiring of `dumpctl delete` and `export` (see verb_commands.h).

// GCC 12 at -O2 reports a false "potential null pointer dereference" inside std::string as inlined
// into CLI11 2.1's CLI::detail::split() (see dumpctl.cc); this file holds nothing but CLI11 wiring.
#pragma GCC diagnostic ignored "-Wnull-dereference"

#include "cli/verb_commands.h"

#include <CLI/CLI.hpp>

namespace coredumpd::cli {

VerbCommands::VerbCommands(CLI::App& app, SelectOptions& select) {
  constexpr const char* kMatches =
      "PID, executable path, FIELD=VALUE, a dump id or unique id prefix, or COMM; several: the same field ORed, "
      "different fields ANDed";
  delete_ = app.add_subcommand("delete", "Delete every matching coredump: its record and core file (no prompt)");
  delete_->add_option("MATCHES", select.matches, kMatches);
  delete_->add_flag("--all", all_, "Delete every dump you may delete (needed when no MATCH, -S, -U, -1 or -n is given)");
  delete_->add_flag("--dry-run", dry_run_, "Only list what would be deleted");
  delete_->footer(
      "Without a MATCH, -S, -U, -1 or -n, delete refuses unless --all is given. Root deletes on the store directly; "
      "other users delete their own dumps through coredumpd's query service (not those of setuid programs, nor "
      "those the kernel did not dump as them).");

  export_ = app.add_subcommand(
      "export", "Write one archive of the newest match for a bug report: core, executable, mapped libraries, record");
  export_->add_option("MATCHES", select.matches, kMatches);
  export_->footer("-o FILE names the archive (default: coredump-<id>.tar.zst in the working directory).");

  // CLI11 reads "-1" after a verb as a positional (a negative number) unless that verb has the option.
  for (CLI::App* verb : {delete_, export_})
    verb->add_flag("-1", select.newest_only, "Only the most recent entry (implies -r)");
}

std::optional<int> VerbCommands::run(const GlobalOptions& g, const SelectOptions& select, const std::string& output,
                                     const Io& io) const {
  if (!*delete_ && !*export_) return std::nullopt;
  if (select.field) throw DumpctlError("Option --field/-F only makes sense with list");
  if (*delete_) {
    DeleteOptions o;
    o.select = select;
    o.all = all_;
    o.dry_run = dry_run_;
    return cmd_delete(g, o, io);
  }
  ExportOptions o;
  o.select = select;
  o.output = output;
  return cmd_export(g, o, io);
}

}  // namespace coredumpd::cli
