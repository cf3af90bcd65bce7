// CLI11 wiring of `dumpctl du`, `vacuum` and `verify` (see store_commands.h).

// GCC 12 at -O2 reports a false "potential null pointer dereference" inside std::string as inlined
// into CLI11 2.1's CLI::detail::split() (see dumpctl.cc); this file holds nothing but CLI11 wiring.
#pragma GCC diagnostic ignored "-Wnull-dereference"

#include "cli/store_commands.h"

#include <fcntl.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstring>

#include "cli/format.h"
#include "util/text.h"

namespace coredumpd::cli {

UniqueFd open_store_dir(const std::string& store) {
  UniqueFd fd(::open(store.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) {
    throw DumpctlError("store " + escape_for_display(store) + ": " + std::strerror(errno));
  }
  return fd;
}

StoreCommands::StoreCommands(CLI::App& app) {
  du_ = app.add_subcommand("du", "Show the space used by cores, per uid and per policy rule");
  du_->add_flag("--json", du_opts_.json, "Print a JSON object");

  vacuum_ = app.add_subcommand(
      "vacuum", "Delete cores until limits hold (oldest first within the biggest consumer)");
  vacuum_->add_option("--max-use", vacuum_opts_.max_use,
                      "All cores together at most SIZE (bytes, or 500M, 2G, ...)");
  vacuum_->add_option("--keep-free", vacuum_opts_.keep_free,
                      "Leave SIZE or PERCENT% of the store's filesystem free");
  vacuum_->add_option("--max-age", vacuum_opts_.max_age,
                      "Delete dumps (cores and records) older than DURATION (7d, 12h, 90min, ...)");
  vacuum_->add_option("--max-core-age", vacuum_opts_.max_core_age,
                      "Delete cores older than DURATION, keeping their records");
  vacuum_->add_option("--max-use-per-uid", vacuum_opts_.max_use_per_uid,
                      "Each uid's cores together at most SIZE");
  vacuum_->add_flag("-n,--dry-run", vacuum_opts_.dry_run, "Only show what would be deleted");
  vacuum_->add_flag("--json", vacuum_opts_.json, "Print a JSON object");

  verify_ = app.add_subcommand("verify", "Check the store against the index (exit 1 on problems)");
  verify_->add_flag("--deep", verify_opts_.deep,
                    "Also read every core in full (zstd checksums, read errors, core sizes)");
  verify_->add_flag("--json", verify_opts_.json, "Print a JSON object");
}

std::optional<int> StoreCommands::run(const GlobalOptions& g, const Io& io) const {
  if (*du_) return cmd_du(g, du_opts_, io);
  if (*vacuum_) return cmd_vacuum(g, vacuum_opts_, io);
  if (*verify_) return cmd_verify(g, verify_opts_, io);
  return std::nullopt;
}

}  // namespace coredumpd::cli
