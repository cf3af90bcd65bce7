// Which of the crashing process's locks COREDUMP_CLOSE_FILES releases, and why not (issue 25).
//
// CLOSE_FILES (RFC "coredump, files: exit files on request", docs/PROTOCOL.md §6.4) switches every
// thread of the task to an empty fd table and drops the old one before the dump. What that
// releases follows from fs/locks.c, as the RFC's selftest coredump_close_files_test.c pins down:
//  - if another process shares the fd table (CLONE_FILES), the table is not closed: nothing goes;
//  - POSIX locks belong to the table: they go when it is closed, even if another process keeps the
//    file open (fork);
//  - flock and OFD locks (and leases) belong to the open file description: they go with its last
//    reference, so not while another process's table holds the same open file.
// The facts come from /proc while the task is frozen in the handshake: the crasher's fdinfo lock
// lines and /proc/locks, and a bounded scan of the other processes with kcmp(2) (KCMP_FILES: the
// same fd table; KCMP_FILE: the same open file description). Not seen: references outside fd
// tables (the crasher's own mmap of the locked file, a descriptor in flight in SCM_RIGHTS, io_uring
// fixed files); they keep flock/OFD locks too.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace coredumpd {

struct HandshakeFacts;
struct CollectLimits;
class ProcDir;
class PartialFacts;

/// One lock the crashing process holds.
struct HeldLock {
  std::string type;      ///< as the kernel prints it: "POSIX", "OFDLCK", "FLOCK", "LEASE", ...
  std::string access;    ///< "WRITE", "READ", ...
  std::string target;    ///< the descriptor's target (raw bytes); "dev:ino" for a /proc/locks-only line
  std::string line;      ///< the lock line without its ordinal, runs of blanks collapsed
  std::vector<int> fds;  ///< the crasher's descriptors whose fdinfo shows it; empty: only in /proc/locks
};

/// The locks in the fds facts (collect_fds: [{"fd", "target", "locks": [line...]}]) plus the
/// crasher's /proc/locks lines (`proc_locks`) no fdinfo showed. A lock seen through several
/// descriptors (dup) is one HeldLock. Lines of a blocked waiter ("->") are not locks held.
std::vector<HeldLock> held_locks(const nlohmann::json& fds, const nlohmann::json& proc_locks);

/// Who else uses the crasher's fd table or its open files.
struct Sharing {
  std::optional<std::int64_t> table_shared_with;  ///< a process sharing the fd table (KCMP_FILES)
  std::map<int, std::int64_t> file_shared_with;   ///< crasher fd -> a process with the same open file (KCMP_FILE)
  std::size_t processes_scanned = 0;              ///< processes compared
  /// Processes kcmp refused (EPERM: e.g. an init we may not ptrace-read), pid -> strerror; not
  /// compared, and reported, but they leave the verdicts standing.
  std::map<std::int64_t, std::string> not_compared;
  /// Empty if the scan ran to its end; else why it stopped (cap, time budget, no kcmp at all).
  std::string incomplete;
};

/// Bounds on scan_sharing().
struct SharingScanLimits {
  std::size_t max_processes = 4096;      ///< processes compared at most
  std::size_t max_fds = 65536;           ///< other processes' descriptors compared at most, in all
  std::chrono::steady_clock::time_point stop_at = std::chrono::steady_clock::time_point::max();
};

/// Compares `crasher` (pid in our pid namespace) with every other process in /proc (except this
/// one): kcmp(KCMP_FILES) for a shared table (the scan stops at the first), and, for each of
/// `fds` (the crasher's descriptors to match), kcmp(KCMP_FILE) against the other process's
/// descriptors. Processes that vanish meanwhile are skipped. Never throws but std::bad_alloc.
Sharing scan_sharing(pid_t crasher, std::span<const int> fds, const SharingScanLimits& limits);

/// What CLOSE_FILES does to one lock.
enum class Release { Released, Kept, Unknown };

/// "released", "kept", "unknown".
const char* release_name(Release r);

/// The verdict on one lock and, unless released, why: "fd table shared with pid N (CLONE_FILES)",
/// "open file shared with pid N (flock)", "not held through the crasher's fd table", or, when the
/// scan was incomplete and nothing decided it, the scan's reason.
struct ReleaseVerdict {
  Release release = Release::Unknown;
  std::string why;
};

/// The rules in this header's comment, applied to `lock` with `sharing`.
ReleaseVerdict close_files_verdict(const HeldLock& lock, const Sharing& sharing);

/// For the record: [{"type", "access", "target" (bytes_to_json), "fds", "line", "close_files":
/// release_name, "why"}], one per lock.
nlohmann::json lock_release_json(const std::vector<HeldLock>& locks, const Sharing& sharing);

/// The handshake collector "lock_release": nothing when the crasher holds no lock; else the scan
/// (within limits.deadline and at most 200 ms) and f.proc["lock_release"]; an incomplete scan, and
/// the processes kcmp refused, are also filed under f.errors["lock_release"].
void collect_lock_release(const ProcDir& proc, HandshakeFacts& f, const CollectLimits& limits, const PartialFacts& so_far);

}  // namespace coredumpd
