// dumpctl's verbs that change or package a dump: `delete` (its record and core) and `export` (one
// archive for a bug report). Declared apart from dumpctl.h and wired in as StoreCommands is
// (VerbCommands). Both select dumps as list/info/dump do (cli/options.h): PID, COMM, EXE,
// FIELD=VALUE, dump ids and prefixes, -S/-U, -1/-n/-r.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/dumpctl.h"

namespace CLI {
class App;
}

namespace coredumpd::cli {

/// `dumpctl delete`.
struct DeleteOptions {
  /// Every record it selects is deleted. It must select on purpose: at least one MATCH, or -S, -U,
  /// -1 or -n, or `all`; an empty selection is refused (it would mean every dump).
  SelectOptions select;
  bool all = false;      ///< --all: with nothing else given, every dump the user may delete
  bool dry_run = false;  ///< only list what would be deleted
};

/// `dumpctl export`.
struct ExportOptions {
  SelectOptions select;  ///< the newest match, as `dump`; no matches: the newest dump
  std::string output;    ///< -o: archive to write; "": coredump-<id prefix>.tar.zst here
};

/// Whether `o` selects something narrower than "every dump": a MATCH, -S, -U, -1 or -n.
bool delete_selection_given(const SelectOptions& o);

/// Deletes the selected dumps: each one's core file, then its row (store/delete_dump.h). Root (or
/// the store's owner) on the store directly, with the index opened writable; everyone else through
/// the query service ({"op":"delete"}), which deletes only a dump the user owns
/// (peer_may_delete()). No prompt: `--dry-run` lists what would go. Prints one line per dump on
/// `io.out` ("Deleted ..." / "Would delete ..."), errors on `io.err`. Returns 0 when every dump
/// was deleted, 1 otherwise. Throws DumpctlError when nothing narrows the selection and --all is
/// not given, when nothing matches ("No match found.", as dump), or when the index cannot be
/// opened writable.
int cmd_delete(const GlobalOptions& g, const DeleteOptions& o, const Io& io);

/// Writes one tar archive compressed with zstd (libarchive) for a bug report, every entry under
/// "coredump-<id prefix>/": `core` (decompressed, byte-identical to what the kernel sent, as
/// `dump` writes it), the executable and every file the core's NT_FILE note maps, at their
/// absolute paths (a sysroot: `gdb -iex 'set sysroot .' ./<exe> core`), `record.json`
/// (record_envelope(), with the analysis), `files.json` (what was archived and what was missing,
/// and why) and a `README`. The dump is the newest match (newest_selected(), "More than one entry
/// matches, ignoring rest." unless -q). Files are read with dumpctl's own permissions, now: one
/// that is gone (deleted, replaced: " (deleted)"), unreadable or not a regular file is listed as
/// missing, not fatal. The archive is written to a temporary name beside the target and renamed
/// when complete. A progress line on a terminal (ProgressLine; -q turns it off, and the summary).
/// Returns 0. Throws DumpctlError (no match, no core, "-" as output, write errors).
int cmd_export(const GlobalOptions& g, const ExportOptions& o, const Io& io);

/// Registers `delete` and `export` on a dumpctl CLI11 app and runs whichever was parsed.
/// Usage in dumpctl_main(): construct after the other subcommands with the SelectOptions the
/// global options fill (their MATCHES go there too), then after parsing
/// `if (const auto rc = verb_commands.run(global, sel, output, io)) return *rc;`.
class VerbCommands {
 public:
  /// Adds the subcommands to `app`; their MATCHES and -1 fill `select`. Both must outlive this.
  VerbCommands(CLI::App& app, SelectOptions& select);
  VerbCommands(const VerbCommands&) = delete;  // CLI11 holds pointers to the option members
  VerbCommands& operator=(const VerbCommands&) = delete;
  /// The parsed subcommand's exit code, or std::nullopt if none of ours was given. `select`: the
  /// matches and global selection options; `output`: the global -o. Throws like the cmd_*
  /// functions, and DumpctlError for -F (as dump: only list and info take it).
  std::optional<int> run(const GlobalOptions& g, const SelectOptions& select, const std::string& output,
                         const Io& io) const;

 private:
  CLI::App* delete_ = nullptr;
  CLI::App* export_ = nullptr;
  bool all_ = false;
  bool dry_run_ = false;
};

}  // namespace coredumpd::cli
