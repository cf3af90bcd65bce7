// Per-crash policy: global defaults plus an ordered list of rules; the first rule whose match
// accepts the crash supplies the policy (its keys over the defaults).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/proc/collect.h"
#include "daemon/policy/container.h"
#include "daemon/policy/upload_settings.h"
#include "store/dump_record.h"
#include "protocol/negotiate.h"

namespace coredumpd {

/// What to do with a crash.
enum class Action {
  Store,         ///< KERNEL mode: stream and store the core
  Reject,        ///< REJECT: the kernel produces no dump; we keep a record saying why
  MetadataOnly,  ///< USERSPACE: no core, a record with the handshake metadata
  /// Hand the crash to the coredump socket Policy::forward_socket inside the crashing process's
  /// root (its container), speaking the @@ protocol as the kernel does (daemon/forward/forward.h). If that
  /// receiver is absent, refuses or fails, the crash is handled as Store (the fallback).
  Forward,
};

/// Name of an action as written in the configuration ("store", "reject", "metadata-only", "forward").
const char* action_name(Action a);

/// The action named `name` (action_name()'s inverse); std::nullopt for any other text.
std::optional<Action> action_from_name(std::string_view name);

/// A limit on how often a rule stores cores: at most `burst` stored dumps in any window of
/// `interval`, counted per (rule, container, executable) by DumpRateLimiter. A crash beyond it is
/// acked USERSPACE and recorded metadata-only (no core), its reason and suppressed count stored.
/// Configuration: "rate_limit": {"burst": N, "interval_s": W} (1 <= N <= 1000000,
/// 1 <= W <= 604800), or null for no limit (the default).
struct RateLimit {
  std::uint32_t burst = 0;         ///< dumps stored per window
  std::chrono::seconds interval{0};  ///< window length (sliding)
};

/// The policy for one crash. Every field has the default a fresh install runs with.
struct Policy {
  Action action = Action::Store;
  bool close_files = true;   ///< request COREDUMP_CLOSE_FILES when offered (fds are captured before the ack)
  bool records = true;       ///< request COREDUMP_RECORDS when offered
  bool sparse = true;        ///< request COREDUMP_SPARSE when offered (implies records)
  std::optional<std::uint64_t> memory_types;  ///< COREDUMP_MEMORY_TYPES selection; unset: the task's filter
  /// Post-dump collectors that read the still-live task ("smaps_rollup"). Non-empty means the ack
  /// carries WAIT, parking the task until they ran; empty means no WAIT.
  std::vector<std::string> post_dump = {"smaps_rollup"};
  /// The kernel ignores RLIMIT_CORE for sockets (docs/PROTOCOL.md §7.1). Off by default, as the
  /// systemd-coredump Debian ships: it is passed 9223372036854775808 for %c, so it stores the crashes
  /// of tasks whose limit is 0 (most shells). On: a limit below one page means no core (wants_for()).
  bool honor_rlimit_core = false;
  bool capture_environ = false;   ///< store /proc/<pid>/environ (it often holds secrets)
  bool capture_thread_names = true;  ///< store every thread's comm (extra.thread_names) for the analysis
  int compression_level = 3;      ///< zstd level
  /// Larger cores are cut (over_size decides how). Default: systemd-coredump's ProcessSizeMax= and
  /// ExternalSizeMax= on 64-bit, 32 GiB (coredump.conf(5); 1 GiB on 32-bit).
  std::optional<std::uint64_t> max_core_bytes = sizeof(void*) == 8 ? std::uint64_t{32} << 30 : std::uint64_t{1} << 30;
  bool truncate_over_size = true;  ///< over max: store the first max bytes flagged truncated (else reject)
  /// Stored cores of this rule beyond the limit become metadata-only records; unset: no limit.
  std::optional<RateLimit> rate_limit;
  /// Quota for the cores this rule stored, bytes ("max_use": SIZE in a rule). In the defaults it is
  /// the quota of the dumps no rule matched (rule ""); rules do not inherit it. Fed
  /// to retention as max_use_per_rule_bytes[rule name] (see effective_retention() in config.h):
  /// vacuum removes the rule's oldest cores first, never the dump just written (nor, for it, a newer
  /// one). Unset: no quota.
  std::optional<std::uint64_t> max_use;
  /// For Action::Forward: the receiver's socket, an absolute path resolved inside the crashing
  /// process's root (/proc/<pid>/root) without following any symlink (daemon/forward/forward.h).
  std::string forward_socket = "/run/coredumpd/coredump.socket";
  /// What of the crash is uploaded when the "upload" section names an endpoint (daemon/upload/).
  UploadMode upload = UploadMode::CoreIfNewSignature;
};

/// How a rule constrains one namespace of the crashing process.
struct NamespaceMatch {
  enum class Kind { Host, NonHost, Inode } kind = Kind::Host;
  std::uint64_t inode = 0;  ///< for Kind::Inode
};

/// Conditions of a rule; every set field must hold. Globs use fnmatch(3) syntax.
struct Match {
  std::optional<std::string> comm;      ///< exact comm
  std::optional<std::string> exe;       ///< glob on the executable path
  std::optional<std::string> cgroup;    ///< glob on any line's path of /proc/<pid>/cgroup
  std::optional<std::int64_t> uid;      ///< real uid (also set by "user", resolved when parsed)
  std::optional<std::string> runtime;   ///< container runtime ("docker", "systemd-nspawn", "host"...)
  /// Container: its key ("docker:<id>"), name (machine/LXC name), or id (or a prefix of >= 12 chars).
  std::optional<std::string> container;
  std::optional<std::string> unit;      ///< glob on the systemd unit ("nginx.service")
  std::optional<std::string> slice;     ///< glob on the systemd slice ("machine.slice")
  std::map<std::string, NamespaceMatch> namespaces;  ///< "pid" -> host / non-host / inode
  /// True if every condition holds for this crash.
  bool matches(const DumpRecord& r, const ContainerInfo& c) const;
};

/// A named rule: when `match` holds, `policy` applies.
struct Rule {
  std::string name;
  Match match;
  Policy policy;
};

/// The policy chosen for one crash and the rule that chose it ("" for the defaults).
struct Decision {
  Policy policy;
  std::string rule;
};

/// Returns the policy of the first rule matching the crash (`r` and its container `c`), else `defaults`.
Decision select_policy(const Policy& defaults, const std::vector<Rule>& rules, const DumpRecord& r,
                       const ContainerInfo& c);

/// What to ask the kernel for, given the policy and what the handshake found. `reason` is set when
/// the policy turns a store into something else (e.g. "RLIMIT_CORE is 0"). Action::Forward is
/// answered as Store: the session asks the receiver first and uses this only as the fallback (and
/// forwards only if this says KERNEL, so RLIMIT_CORE and max_core_bytes apply to forwards too).
protocol::Wants wants_for(const Policy& p, const HandshakeFacts& facts, std::string& reason);

}  // namespace coredumpd
