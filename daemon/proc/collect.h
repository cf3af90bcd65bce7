// Metadata collected from /proc/<pid> while the crashing task is frozen in the handshake.
//
// Everything here is read before the ack: the task's fd table may be gone afterwards
// (COREDUMP_CLOSE_FILES) and without WAIT the whole /proc entry vanishes when the stream ends
// (docs/PROTOCOL.md §5.4). Time spent here stalls the crashing process, so collectors run in order against a
// deadline and whatever has not run by then is recorded as skipped. Each collector publishes its result
// as it finishes (daemon/proc/partial_facts.h), so a deadline that overtakes a stalled read keeps
// what the collectors before it found.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/proc/proc_dir.h"

namespace coredumpd {

/// One thread of the crashing process: its TID in our pid namespace and in its own (innermost).
struct ThreadIds {
  std::int64_t host_tid = 0;
  std::int64_t ns_tid = 0;
};

/// What the handshake collectors found. Strings are raw bytes from the process (untrusted).
struct HandshakeFacts {
  std::string comm;
  std::string exe;
  std::vector<std::string> argv;
  std::string cwd;
  std::string cgroup;
  std::string hostname;
  std::vector<ThreadIds> threads;           ///< from task/*/status NSpid
  std::optional<std::uint64_t> rlimit_core;  ///< soft RLIMIT_CORE in bytes; UINT64_MAX = unlimited
  /// Bytes the kernel would dump with the default coredump_filter (anonymous mappings plus one page
  /// per file mapping), estimated from maps; for rejecting an over-size dump before it streams.
  std::optional<std::uint64_t> estimated_core_bytes;
  std::vector<std::string> environ;          ///< only stored if policy allows (it holds secrets)
  /// {"<tid in the task's pid ns>": byte string}: task/*/comm (daemon/proc/thread_names.h).
  nlohmann::json thread_names;
  /// {"read", "omitted", "reason"} when some thread names were not read; null otherwise.
  nlohmann::json thread_names_incomplete;
  std::string status;                        ///< /proc/<pid>/status (NSpid, Uid, Gid, CoreDumping...)
  std::string uid_map, gid_map;              ///< the process's user namespace id maps
  /// Everything else, for the record's "proc" metadata: fds (with fdinfo and lock lines), locks
  /// (the process's /proc/locks lines), lock_release (what CLOSE_FILES does to each lock), maps, limits, status, mountinfo, namespaces (inodes).
  nlohmann::json proc = nlohmann::json::object();
  nlohmann::json errors = nlohmann::json::object();   ///< collector name -> why it failed/was skipped
  nlohmann::json timings_us = nlohmann::json::object();  ///< collector name -> microseconds spent
  bool verified = false;  ///< the pidfd was re-checked alive after the last read
  /// Collectors that had not finished when these facts were taken (handshake deadline), in
  /// collector order; their fields are empty. Empty when the collection ran to its end.
  std::vector<std::string> missed;
};

class PartialFacts;

/// Limits on the handshake collectors.
struct CollectLimits {
  std::chrono::steady_clock::time_point deadline;  ///< no collector starts after this
  std::chrono::milliseconds per_collector{500};    ///< a collector that loops (fds) stops after this
  std::chrono::milliseconds test_delay{0};         ///< tests only: a collector that just sleeps this long
  /// Tests only (config "testing": {"collector_delay_in": name}): with test_delay, the collector
  /// named here sleeps test_delay before it reads, as a stalled /proc read would; empty: a
  /// collector of its own ("test_delay") sleeps instead.
  std::string test_delay_collector;
  /// A stop (the server's shutdown) ends a test_delay sleep at once: SIGTERM never waits for a hook.
  std::stop_token stop;
};

/// Tests only: sleeps `limits.test_delay`, or less if `limits.stop` is requested meanwhile (then
/// logs that it was cut short). Returns true if the whole delay was slept.
bool sleep_test_delay(const CollectLimits& limits);

/// Names of the handshake collectors, in the order they run ("comm", "exe", "cmdline", ...).
std::span<const char* const> handshake_collector_names();

/// Runs every handshake collector on `proc`, in order: comm, exe, cmdline, cwd, cgroup, limits, fds
/// (links, fdinfo, lock lines), locks, lock_release (daemon/proc/lock_release.h), threads, thread_names, hostname, namespaces, status (with mountinfo and the
/// id maps), maps, environ; each publishes its result to `out` as soon as it returns, then
/// out.finish() is called. Collectors not started by the deadline are recorded in `errors` as
/// "skipped: handshake deadline" (and stay missed); one that ran out of its budget says so.
/// Never throws (but std::bad_alloc).
void collect_handshake_facts(const ProcDir& proc, const CollectLimits& limits, PartialFacts& out);

/// The same, run to its end on the calling thread: the facts of every collector.
HandshakeFacts collect_handshake_facts(const ProcDir& proc, const CollectLimits& limits);

/// The process's lines of a /proc/locks text: those whose pid field is `pid`.
std::vector<std::string> locks_of_pid(const std::string& proc_locks, std::int64_t pid);

/// Estimated core size from a maps text (see HandshakeFacts::estimated_core_bytes).
std::uint64_t estimate_core_bytes(const std::string& maps);

/// Splits /proc/<pid>/cmdline into arguments: NUL-separated, one trailing NUL dropped, empty
/// arguments kept ("a\0\0b\0" -> {"a", "", "b"}).
std::vector<std::string> split_cmdline(const std::string& raw);

/// The host and innermost TIDs from a status file's "NSpid:" line; std::nullopt if absent.
std::optional<ThreadIds> parse_nspid(const std::string& status);

/// The soft "Max core file size" from a limits file, in bytes (UINT64_MAX for "unlimited").
std::optional<std::uint64_t> parse_rlimit_core(const std::string& limits);

}  // namespace coredumpd
