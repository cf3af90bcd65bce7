// `dumpctl status`: is this machine set up so that no crash is lost? The daemon (through its query
// service), the kernel's support for "@@", core_pattern and the kernel socket, store usage against
// its limits, and the daemon's counters.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/dumpctl.h"
#include "cli/status_probe.h"
#include "store/query_protocol.h"

namespace coredumpd::cli {

/// `dumpctl status`.
struct StatusOptions {
  bool json = false;  ///< print a JSON object instead of text
};

/// The exit code when something would lose dumps (as `systemctl status` exits 3 for a unit that is
/// not active): the kernel lacks "@@", core_pattern is not "@@<the daemon's socket>", or nothing
/// listens on that socket.
inline constexpr int kStatusLosesDumps = 3;

/// A problem found, one line.
struct StatusProblem {
  bool loses_dumps = false;  ///< crashes would not be stored while it lasts
  std::string text;
};

/// Everything `dumpctl status` shows, gathered once (gather_status()), printed as text or JSON.
struct StatusReport {
  std::optional<QueryStatus> daemon;  ///< the daemon's answer; unset: not reached
  std::string daemon_error;           ///< why it was not reached (one line)
  bool daemon_down = false;           ///< nothing listens on the query socket (QueryUnreachable)
  std::string query_socket;           ///< where dumpctl asked
  KernelSupport kernel;
  std::optional<std::string> core_pattern;  ///< unset: /proc/sys/kernel/core_pattern unreadable
  std::string kernel_socket;                ///< the daemon's, else the pattern's, else the default
  bool pattern_ours = false;                ///< core_pattern == "@@" + kernel_socket
  SocketState socket;
  /// The daemon's store usage (QueryStatus::store_usage), or computed here by root from the store
  /// when the daemon is down ("source": "local"); null when neither was possible.
  nlohmann::json store_usage;
  std::vector<StatusProblem> problems;
};

/// Gathers the report: asks the query service at g.query_socket for {"op":"status"} (never the
/// kernel socket: it is only stat()ed and looked up in /proc/net/unix), reads core_pattern and the
/// kernel's support, and, when the daemon is down and dumpctl is root, the store's usage from
/// g.store (store/usage.h). Never throws for what it finds; the problems are in the report.
StatusReport gather_status(const GlobalOptions& g);

/// The report as JSON: {"daemon": {...}, "kernel": {...}, "core_pattern": {...}, "store": {...},
/// "counters": {...}, "problems": [{"text", "loses_dumps"}], "loses_dumps": bool}.
nlohmann::json status_json(const StatusReport& r);

/// Prints the report (text, "Key: value" lines aligned as `info` does, then one "warning:" line per
/// problem on `io.err`; or JSON). Returns 0 when nothing would lose dumps, kStatusLosesDumps
/// otherwise.
int cmd_status(const GlobalOptions& g, const StatusOptions& o, const Io& io);

}  // namespace coredumpd::cli
