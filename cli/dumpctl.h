// dumpctl's commands as a library: the CLI (main.cc) and the tests call dumpctl_main().
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "store/query_protocol.h"

namespace CLI {
class App;
}

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

/// --json=MODE, as systemd's tools take it (coredumpctl 252 requires the value: `--json` alone is
/// a usage error there and here).
enum class JsonMode {
  Off,     ///< text (a table, info text)
  Short,   ///< one line of JSON
  Pretty,  ///< indented JSON
};

/// What every verb that reads dumps (list, info, dump, debug) takes, as coredumpctl 252 does:
/// its matches and the options that choose and order the records (cli/options.h turns them into a
/// RecordQuery).
struct SelectOptions {
  /// Positional matches: PID, path (COREDUMP_EXE), FIELD=VALUE, a dump id or unique id prefix, or
  /// else a COMM. Different fields are ANDed, the same field ORed (journal semantics).
  std::vector<std::string> matches;
  std::optional<std::string> since;    ///< -S: only dumps at or after this time (parse_time_option())
  std::optional<std::string> until;    ///< -U: only dumps at or before this time
  std::optional<std::size_t> max_rows; ///< -n N: at most N records (>= 1)
  bool newest_only = false;            ///< -1: the newest record only (implies -r, as coredumpctl)
  bool reverse = false;                ///< -r: newest first
  std::optional<std::string> field;    ///< -F FIELD: print that field's value per record (list, info)
  JsonMode json = JsonMode::Off;       ///< --json=short|pretty|off
  bool legend = true;                  ///< false: --no-legend (the table without its header)
  bool no_pager = false;               ///< --no-pager
  bool quiet = false;                  ///< -q: no "No coredumps found.", no info before debug
};

/// `dumpctl list`.
struct ListOptions {
  SelectOptions select;
  /// Only dumps of this container: its key ("docker:<id>", "host"), name, or an id prefix of >= 12
  /// characters (record_in_container(), the semantics of a rule's "container" condition).
  std::optional<std::string> container;
  /// Only dumps whose crash signature (DumpRecord::signature) starts with this hash prefix (hex,
  /// any case), as `dumpctl signatures` shows it.
  std::optional<std::string> signature;
};

/// `dumpctl info`.
struct InfoOptions {
  SelectOptions select;  ///< no matches (and no -n/-1): the newest dump only, as coredumpctl
  bool extra = false;    ///< text: also print the raw metadata JSON (proc files, maps...)
};

/// `dumpctl dump`.
struct DumpOptions {
  SelectOptions select;  ///< the newest match; no matches: the newest dump
  std::string output;    ///< -o: file to write; "" or "-" means standard output (`Io::out`)
};

/// `dumpctl debug` (alias `gdb`).
struct DebugOptions {
  SelectOptions select;                 ///< the newest match; no matches: the newest dump
  std::optional<std::string> debugger;  ///< --debugger; unset: $SYSTEMD_DEBUGGER, else "gdb"
  std::string debugger_arguments;       ///< -A: split as a shell would (split_debugger_arguments())
  std::vector<std::string> args;        ///< extra debugger arguments given after `--` (ours)
};

/// Exit codes, as systemd 252's src/coredump/coredumpctl.c (dump_list(), focus(), run_debug(),
/// DEFINE_MAIN_FUNCTION_WITH_POSITIVE_FAILURE) and its binary on the same records:
/// - list, info: 0 when something matched; 1 with "No coredumps found." on `err` (-q: silent) when
///   nothing did, as a table or as JSON (no "[]" is printed); with -F: 0 even when nothing matched.
/// - dump, debug: 1 with "No match found." (-q does not silence it) when nothing matched; -F is a
///   usage error there ("Option --field/-F only makes sense with list"), 1.
/// - debug: the debugger's exit status (1 if it was killed by a signal).
/// - usage errors (an unknown option, FIELD=VALUE with an unknown field, -n 0, --since after
///   --until) and every other failure: 1.
///
/// Lists dumps as a table (one line per dump, hostile strings escaped; a CONTAINER column with
/// container_short(); COREFILE coloured as coredumpctl's when colour_wanted()) or as JSON
/// (to_json(record) plus a top-level "container": the recorded container object or null).
/// Returns 0, or 1 when nothing matched (see above). Throws DumpctlError / IndexError.
int cmd_list(const GlobalOptions& g, const ListOptions& o, const Io& io);

/// Prints every field of every selected dump (oldest first, a blank line between; no matches: the
/// newest dump only), warning on `err` about truncated, failed or interrupted dumps; with --json one
/// JSON object per dump. Returns 0, 1 when nothing matched. Throws IndexError on index problems.
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
/// A verb that a program other than dumpctl adds to dumpctl's command line: dumpctl-fleet's `fleet`
/// (cli/fleet/commands_fleet.h), whose libraries dumpctl does not link.
class ExtraVerb {
 public:
  virtual ~ExtraVerb() = default;
  /// The exit code of the verb, or std::nullopt if it was not given. `sel` and `output` are
  /// dumpctl's -S/-U/-n/--json/--no-legend and -o.
  virtual std::optional<int> run(const SelectOptions& sel, const std::string& output, const Io& io) const = 0;
};

/// Registers an ExtraVerb on dumpctl's CLI11 app (which outlives it).
using ExtraVerbFactory = std::function<std::unique_ptr<ExtraVerb>(CLI::App& app)>;

/// Parses a full command line (`args[0]` is the program name) with CLI11 and runs the command;
/// no command means `list`. Every exception becomes "dumpctl: <message>" on `io.err` and exit code
/// 1; --help prints to `io.out` and returns 0; usage errors return 1.
///
/// Without `fleet`, `fleet` is a placeholder that execs dumpctl-fleet with `args`
/// (exec_fleet_program(), cli/fleet_launch.h). dumpctl-fleet passes `fleet`, the real verb, and
/// runs nothing else (other verbs: an error that names dumpctl).
int dumpctl_main(const std::vector<std::string>& args, const Io& io, const ExtraVerbFactory& fleet = {});

}  // namespace coredumpd::cli
