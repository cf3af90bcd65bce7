// dumpctl's store maintenance commands: `du` (usage), `vacuum` (retention), `verify` (integrity).
// Declared apart from dumpctl.h so they can be wired in with a few lines (see StoreCommands).
#pragma once

#include <optional>
#include <string>

#include "cli/dumpctl.h"
#include "util/unique_fd.h"

namespace CLI {
class App;
}

namespace coredumpd::cli {

/// `dumpctl du`.
struct DuOptions {
  bool json = false;  ///< print a JSON object instead of tables
};

/// `dumpctl vacuum`. Sizes take parse_size() syntax ("2G", "500M", bytes); keep_free also "P%".
struct VacuumOptions {
  std::optional<std::string> max_use;          ///< all cores together at most SIZE
  std::optional<std::string> keep_free;        ///< leave SIZE or P% of the filesystem free
  std::optional<std::string> max_age;          ///< delete dumps older than DURATION ("7d", "12h")
  std::optional<std::string> max_core_age;     ///< delete cores older than DURATION, keep the records
  std::optional<std::string> max_use_per_uid;  ///< each uid's cores together at most SIZE
  bool dry_run = false;                        ///< only report what would be removed
  bool json = false;                           ///< print a JSON object instead of text
};

/// `dumpctl verify`.
struct VerifyOptions {
  bool deep = false;  ///< also read every core in full (zstd checksums, raw read errors, sizes)
  bool json = false;  ///< print a JSON object instead of text
};

/// Prints the bytes and number of stored cores in total, per uid (biggest first) and per policy
/// rule ("(defaults)" for dumps no rule matched), the index's row count and the store
/// filesystem's size and free space. Returns 0. Throws DumpctlError / IndexError.
int cmd_du(const GlobalOptions& g, const DuOptions& o, const Io& io);

/// Deletes cores until the given limits hold (coredumpd::vacuum(): oldest first within the
/// biggest consumer; max_age deletes whole rows; other limits keep the row, marked vacuumed),
/// listing each removed dump and a total. Opens the index writable (read-only for --dry-run).
/// Warns on `io.err` about limits that cannot be met. Returns 0, or 1 if a file or row could not
/// be removed. Throws DumpctlError when no limit is given, a value is malformed, or the store has
/// no index.
int cmd_vacuum(const GlobalOptions& g, const VacuumOptions& o, const Io& io);

/// Checks the store against the index (coredumpd::verify()) and lists every problem found, one
/// line each (names and details escaped), then a summary. Returns 0 if the store is consistent,
/// 1 if any problem was found. Never modifies anything. Throws DumpctlError / IndexError.
int cmd_verify(const GlobalOptions& g, const VerifyOptions& o, const Io& io);

/// Opens the store directory (O_DIRECTORY; the store path itself may be a symlink) for the *at()
/// calls of retention. Throws DumpctlError naming the store and errno's text.
UniqueFd open_store_dir(const std::string& store);

/// Registers `du`, `vacuum` and `verify` on a dumpctl CLI11 app and runs whichever was parsed.
/// Usage in dumpctl_main(): construct after the other subcommands, then after parsing
/// `if (const auto rc = store_commands.run(global, io)) return *rc;`.
class StoreCommands {
 public:
  /// Adds the three subcommands to `app` (which must outlive this object).
  explicit StoreCommands(CLI::App& app);
  StoreCommands(const StoreCommands&) = delete;  // CLI11 holds pointers to the option members
  StoreCommands& operator=(const StoreCommands&) = delete;
  /// Runs the parsed subcommand and returns its exit code, or std::nullopt if none of ours was
  /// given. Throws like the cmd_* functions.
  std::optional<int> run(const GlobalOptions& g, const Io& io) const;

 private:
  CLI::App* du_ = nullptr;
  CLI::App* vacuum_ = nullptr;
  CLI::App* verify_ = nullptr;
  DuOptions du_opts_;
  VacuumOptions vacuum_opts_;
  VerifyOptions verify_opts_;
};

}  // namespace coredumpd::cli
