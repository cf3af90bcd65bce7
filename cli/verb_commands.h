// dumpctl's verbs that change or package a dump: `delete` (its record and core) and `export` (one
// archive for a bug report). Declared apart from dumpctl.h and wired in as StoreCommands is
// (VerbCommands).
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
  std::vector<std::string> matches;  ///< each resolved with select_dump() (the newest match); at least one
  bool dry_run = false;              ///< only list what would be deleted
};

/// `dumpctl export`.
struct ExportOptions {
  std::optional<std::string> match;  ///< see InfoOptions::match; none: the newest dump
  std::string output;                ///< archive to write; "": coredump-<id prefix>.tar.zst here
  bool quiet = false;                ///< no progress line and no summary
};

/// Deletes the selected dumps: each one's core file, then its row (store/delete_dump.h). Root (or
/// the store's owner) on the store directly, with the index opened writable; everyone else through
/// the query service ({"op":"delete"}), which deletes only a dump the user owns
/// (peer_may_delete()). No prompt: `--dry-run` lists what would go. Prints one line per dump on
/// `io.out` ("Deleted ..." / "Would delete ..."), errors on `io.err`. Returns 0 when every dump
/// was deleted, 1 otherwise. Throws DumpctlError when no MATCH is given, one matches nothing, or
/// the index cannot be opened writable.
int cmd_delete(const GlobalOptions& g, const DeleteOptions& o, const Io& io);

/// Writes one tar archive compressed with zstd (libarchive) for a bug report, every entry under
/// "coredump-<id prefix>/": `core` (decompressed, byte-identical to what the kernel sent, as
/// `dump` writes it), the executable and every file the core's NT_FILE note maps, at their
/// absolute paths (a sysroot: `gdb -iex 'set sysroot .' ./<exe> core`), `record.json`
/// (record_envelope(), with the analysis), `files.json` (what was archived and what was missing,
/// and why) and a `README`. Files are read with dumpctl's own permissions, now: one that is gone
/// (deleted, replaced: " (deleted)"), unreadable or not a regular file is listed as missing, not
/// fatal. The archive is written to a temporary name beside the target and renamed when complete.
/// A progress line on a terminal (ProgressLine) unless `quiet`. Returns 0. Throws DumpctlError
/// (no match, no core, write errors).
int cmd_export(const GlobalOptions& g, const ExportOptions& o, const Io& io);

/// Registers `delete` and `export` on a dumpctl CLI11 app and runs whichever was parsed.
/// Usage in dumpctl_main(): construct after the other subcommands, then after parsing
/// `if (const auto rc = verb_commands.run(global, io)) return *rc;`.
class VerbCommands {
 public:
  /// Adds the subcommands to `app` (which must outlive this object).
  explicit VerbCommands(CLI::App& app);
  VerbCommands(const VerbCommands&) = delete;  // CLI11 holds pointers to the option members
  VerbCommands& operator=(const VerbCommands&) = delete;
  /// The parsed subcommand's exit code, or std::nullopt if none of ours was given. Throws like
  /// the cmd_* functions.
  std::optional<int> run(const GlobalOptions& g, const Io& io) const;

 private:
  CLI::App* delete_ = nullptr;
  CLI::App* export_ = nullptr;
  DeleteOptions delete_opts_;
  ExportOptions export_opts_;
};

}  // namespace coredumpd::cli
