// dumpctl's commands as a library: the CLI (main.cc) and the tests call dumpctl_main().
#pragma once

#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "store/query_protocol.h"

namespace coredumpd::cli {

/// The store directory used when --store is not given (the daemon's default too).
inline constexpr const char* kDefaultStore = "/var/lib/coredumpd";

/// A user-facing failure (no match, missing core file, ...). what() is one line without the
/// "dumpctl: " prefix; dumpctl_main() prints it to the error stream and exits with 1.
class DumpctlError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Where a command writes. `out` receives tables, JSON, info text and core bytes written to
/// standard output (binary-safe: written with ostream::write); `err` receives warnings and errors.
struct Io {
  std::ostream& out;
  std::ostream& err;
  bool out_is_tty = false;  ///< `out` is a terminal: refuse core bytes, escape JSON to ASCII
};

/// Options that apply to every command.
struct GlobalOptions {
  std::string store = kDefaultStore;  ///< store directory: index.sqlite, <id>.zst and <id>.core
  /// The daemon's pending journal (store/pending_journal.h): records its index could not take yet.
  std::string pending_dir = "/run/coredumpd/pending";
  /// The daemon's query service (store/query_protocol.h), which users who are not root read.
  std::string query_socket = kDefaultQuerySocket;
  bool query_socket_given = false;  ///< --query-socket was given: use the service, even as root
  bool store_given = false;         ///< --store was given: read that store directly, as any user
};

/// `dumpctl list`.
struct ListOptions {
  bool json = false;                 ///< print a JSON array of to_json(record) instead of a table
  bool reverse = false;              ///< newest first
  std::optional<std::string> since;  ///< only dumps at or after this time (parse_time_spec())
  std::optional<std::string> until;  ///< only dumps at or before this time (parse_time_spec())
  /// Only dumps of this container: its key ("docker:<id>", "host"), name, or an id prefix of >= 12
  /// characters (record_in_container(), the semantics of a rule's "container" condition).
  std::optional<std::string> container;
  /// Only dumps whose crash signature (DumpRecord::signature) starts with this hash prefix (hex,
  /// any case), as `dumpctl signatures` shows it.
  std::optional<std::string> signature;
};

/// `dumpctl info`.
struct InfoOptions {
  std::optional<std::string> match;  ///< id, id prefix, PID, exe path or comm; none: newest dump
  bool json = false;                 ///< print to_json(record) instead of text
  bool extra = false;                ///< text: also print the raw metadata JSON (proc files, maps...)
};

/// `dumpctl dump`.
struct DumpOptions {
  std::string match;   ///< see InfoOptions::match
  std::string output;  ///< file to write; "" or "-" means standard output (`Io::out`)
};

/// `dumpctl debug`.
struct DebugOptions {
  std::string match;              ///< see InfoOptions::match
  std::string debugger = "gdb";   ///< program run as `<debugger> [args...] [<exe>] -c <core>`
  std::vector<std::string> args;  ///< extra debugger arguments (given after `--`)
};

/// Lists dumps as a table (one line per dump, hostile strings escaped; a CONTAINER column with
/// container_short()) or as JSON (to_json(record) plus a top-level "container": the recorded
/// container object or null).
/// Returns 0, or 1 when the table would be empty ("No coredumps found." on `err`; JSON prints
/// "[]" and returns 0). Throws DumpctlError / IndexError.
int cmd_list(const GlobalOptions& g, const ListOptions& o, const Io& io);

/// Prints every field of the selected dump, warning on `err` about truncated, failed or interrupted
/// dumps. Returns 0. Throws DumpctlError when nothing matches, IndexError on index problems.
int cmd_info(const GlobalOptions& g, const InfoOptions& o, const Io& io);

/// Writes the selected dump's core (decompressed, or copied from a raw core), byte-identical to
/// what the kernel sent, to a file (written to a temporary name next to it and renamed, so a
/// failure leaves no partial file) or to `io.out` (refused when `io.out_is_tty`). Returns 0.
/// Throws DumpctlError when the dump has no core, its file is missing or corrupt, or on write
/// errors.
int cmd_dump(const GlobalOptions& g, const DumpOptions& o, const Io& io);

/// Runs the debugger (fork + execvp, SIGINT/SIGQUIT ignored while waiting) on the selected dump's
/// core: a zstd core, or any core received from the query service (as the user who runs dumpctl:
/// the debugger runs as them), is written to a private temporary file in $TMPDIR (default
/// /var/tmp), removed afterwards; a raw core (compression "none") in the store read directly is
/// passed as its path there, after checking that a complete dump's file holds core_size bytes. If the executable is gone (or replaced:
/// " (deleted)"), the debugger gets the core alone. Returns the debugger's exit status (1 if it
/// was killed by a signal). Throws DumpctlError.
int cmd_debug(const GlobalOptions& g, const DebugOptions& o, const Io& io);

/// The commands above read their records and cores from the source choose_source() picks
/// (cli/dump_source.h): the store directly, or the daemon's query service for users who are not
/// root, which shows them their own dumps only.
///
/// Parses a full command line (`args[0]` is the program name) with CLI11 and runs the command;
/// no command means `list`. Every exception becomes "dumpctl: <message>" on `io.err` and exit code
/// 1; --help prints to `io.out` and returns 0; usage errors return 1.
int dumpctl_main(const std::vector<std::string>& args, const Io& io);

}  // namespace coredumpd::cli
