// dumpctl's crash analysis commands: `analyze` (run the analyzer again on stored cores) and
// `signatures` (dumps grouped by crash signature). Declared apart from dumpctl.h, wired in as
// StoreCommands is (AnalysisCommands).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/analyzer_run.h"
#include "cli/dumpctl.h"
#include "store/dump_record.h"

namespace CLI {
class App;
}

namespace coredumpd::cli {

/// `dumpctl analyze`.
struct AnalyzeOptions {
  /// The dumps to analyse, selected as `info` selects them (cli/options.h): every match; with no
  /// MATCH the newest dump only.
  SelectOptions select;
  std::optional<double> timeout_s;       ///< wall time of one analysis (default AnalyzerOptions')
  std::optional<std::size_t> max_threads;
  std::optional<std::size_t> max_frames;
  bool debuginfod = false;               ///< --debuginfod given (with or without URLs)
  std::vector<std::string> debuginfod_urls;  ///< its URLs; none: $DEBUGINFOD_URLS (space-separated)
  bool no_save = false;                  ///< print only, never write the index
  bool json = false;                     ///< print the report as JSON (analysis/crash_report.h)
};

/// `dumpctl signatures`.
struct SignaturesOptions {
  std::optional<std::string> since;  ///< only dumps at or after this time (parse_time_spec())
  std::optional<std::string> until;  ///< only dumps at or before this time
  bool json = false;                 ///< print a JSON array of groups
};

/// The dumps of one crash signature.
struct SignatureGroup {
  std::string signature;                 ///< the hash (32 hex)
  std::string text;                      ///< signature_text of its newest dump (raw bytes)
  std::size_t count = 0;                 ///< dumps with this signature
  std::int64_t first_us = 0, last_us = 0;///< oldest and newest crash time, UTC µs
  std::vector<std::string> executables;  ///< distinct exe basenames (" (deleted)" dropped; "[comm]" without exe), sorted
  std::vector<std::string> containers;   ///< distinct container_short() values other than "-" (host), sorted
  std::vector<std::string> ids;          ///< dump ids, oldest first
};

/// Groups `records` by DumpRecord::signature (records without one are left out): most dumps
/// first, ties by the newest crash first, then by hash.
std::vector<SignatureGroup> group_signatures(const std::vector<DumpRecord>& records);

/// The AnalyzerOptions of `o`: the caps and timeout given, debuginfod URLs (from --debuginfod or
/// $DEBUGINFOD_URLS when it had none; --debuginfod with neither is a DumpctlError), the analyzer
/// run as nobody when dumpctl runs as root, else as the user; temp_dir $TMPDIR or /var/tmp.
analysis::AnalyzerOptions analyzer_options(const AnalyzeOptions& o);

/// Runs the analyzer (analysis::run_analyzer()) on each selected dump's stored core and prints
/// the result as `info` shows it (Signature, Message and Analysis fields) or, with --json, one
/// JSON object per dump ({"id", "saved", "report"}; an array when several). Unless --no-save, the
/// report is stored with Index::set_analysis() when the index can be opened writable (root, or the
/// store's owner); otherwise "not saved: <why>" goes to `io.err`. An unavailable report never
/// replaces a stored "ok" one. Returns 0 when every analysis is "ok", 1 otherwise. Throws
/// DumpctlError when a match finds nothing or the dump has no usable core, or the analyzer cannot
/// be started; "No match found." when nothing is selected; IndexError.
int cmd_analyze(const GlobalOptions& g, const AnalyzeOptions& o, const Io& io);

/// Prints one line per signature (group_signatures()): COUNT, FIRST, LAST, SIGNATURE (12 hex),
/// EXECUTABLES, CONTAINERS ("-" for none) and the signature text; or a JSON array of groups.
/// Returns 0, or 1 when there is no signature (text: "No crash signatures found." on `err`).
int cmd_signatures(const GlobalOptions& g, const SignaturesOptions& o, const Io& io);

/// Registers `analyze` and `signatures` on a dumpctl CLI11 app and runs whichever was parsed.
class AnalysisCommands {
 public:
  /// Adds the subcommands to `app`; analyze's MATCHES and -1 fill `select`. Both must outlive this.
  AnalysisCommands(CLI::App& app, SelectOptions& select);
  AnalysisCommands(const AnalysisCommands&) = delete;  // CLI11 holds pointers to the option members
  AnalysisCommands& operator=(const AnalysisCommands&) = delete;
  /// The parsed subcommand's exit code, or std::nullopt if none of ours was given. `select`: the
  /// matches and global selection options (analyze's).
  std::optional<int> run(const GlobalOptions& g, const SelectOptions& select, const Io& io) const;

 private:
  CLI::App* analyze_ = nullptr;
  CLI::App* signatures_ = nullptr;
  AnalyzeOptions analyze_opts_;
  SignaturesOptions signatures_opts_;
};

}  // namespace coredumpd::cli
