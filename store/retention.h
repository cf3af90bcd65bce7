// Retention of the store: limits (configuration), vacuuming cores until the limits hold, usage
// accounting per uid and per policy rule, and verification of the store against the index.
//
// Units: every size is in bytes, every duration in seconds, every time a system_clock time point
// (the index keeps UTC microseconds since the epoch).
//
// What vacuuming does to the index (the history of crashes stays, the cores go):
//   - a dump evicted for a size limit (per-uid / per-rule quota, max_use, keep_free) keeps its row
//     and its state; its `path` is cleared and `extra["vacuumed"]` records why and when:
//     {"reason": "max_use", "time_us": <UTC µs>, "path": "<id>.zst", "stored_size": <bytes>}
//     (the path is "<id>.core" for a core stored uncompressed, compression "none").
//     `stored_size` keeps its value (how big the core was); usage no longer counts it because a
//     dump counts only while it has a `path`.
//   - a row older than max_age (any state but in_progress) is deleted entirely, its core file
//     first: max_age bounds the index as well as the disk.
// The file is always unlinked before the row changes, so a crash in between leaves a row whose
// core is missing (shown as such by dumpctl, reported by verify) and never an unaccounted file.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/dump_record.h"
#include "store/index.h"

namespace coredumpd {

/// Limits on what the store keeps. Unset limits do not apply; all unset means vacuum does nothing.
struct RetentionLimits {
  std::optional<std::uint64_t> max_use_bytes;    ///< all stored cores together, bytes
  std::optional<std::uint64_t> keep_free_bytes;  ///< free bytes to leave on the store's filesystem
  /// Free space to leave, as a percentage (0 < p < 100) of the filesystem's size. When both
  /// keep_free_bytes and keep_free_percent are set, the larger requirement applies.
  std::optional<double> keep_free_percent;
  std::optional<std::chrono::seconds> max_age;        ///< rows older than this are deleted, seconds
  std::optional<std::uint64_t> max_use_per_uid_bytes; ///< cores of one real uid together, bytes
  /// Cores of dumps whose policy came from rule NAME (record.extra["rule"]) together, bytes. The
  /// key "" is the dumps no rule matched (the defaults policy; no or empty extra["rule"]).
  std::map<std::string, std::uint64_t> max_use_per_rule_bytes;

  /// True if at least one limit is set.
  bool any() const;
};

/// Parses a size: a non-negative integer number of bytes, or a string "<number>[unit]" where the
/// number may have a fraction ("1.5G") and unit is one of B, K, M, G, T, P, E (powers of 1024),
/// optionally followed by "B" or "iB" ("2G", "2GB", "2GiB" are all 2×1024³), case-insensitive,
/// with optional spaces between number and unit. std::nullopt if malformed or above 2^63-1.
std::optional<std::uint64_t> parse_size(std::string_view text);

/// Parses a percentage "<number>%" (e.g. "10%", "12.5%") into the number; std::nullopt if
/// malformed or not strictly between 0 and 100.
std::optional<double> parse_percent(std::string_view text);

/// Parses a duration in seconds: digits alone are seconds; otherwise one or more
/// "<integer><unit>" parts, optionally separated by spaces ("7d", "12h", "1d 12h", "90min"), with
/// units s/sec/second(s), m/min/minute(s), h/hour(s), d/day(s), w/week(s). std::nullopt if
/// malformed, zero, or above ~292 years.
std::optional<std::chrono::seconds> parse_duration(std::string_view text);

/// Kinds of groups that share a quota and are reported by usage(). Each dump belongs to exactly one
/// group of each kind, named by group_key(). (Containers will be another kind.)
enum class GroupKind {
  Uid,   ///< the crashing process's real uid, as decimal ("1000"; "-1" if unknown)
  Rule,  ///< the policy rule that chose the dump (extra["rule"]); "" for the defaults
};

/// Every GroupKind, in report order.
inline constexpr GroupKind kGroupKinds[] = {GroupKind::Uid, GroupKind::Rule};

/// Stable lower-case name of a kind ("uid", "rule"), used in JSON and vacuum reasons.
const char* group_kind_name(GroupKind k);

/// The key of the group of kind `k` that `r` belongs to (see GroupKind).
std::string group_key(GroupKind k, const DumpRecord& r);
/// The same for a row summary (what vacuum() and usage() work from).
std::string group_key(GroupKind k, const RowSummary& r);

/// True if `r` currently holds a core in the store as far as the index knows: state Complete or
/// Truncated and a non-empty path. Only such dumps count towards usage and can be vacuumed.
bool holds_core(const DumpRecord& r);
/// The same for a row summary.
bool holds_core(const RowSummary& r);

/// If `r` had its core removed by vacuum(): the reason recorded in extra["vacuumed"]["reason"]
/// ("max_use", "keep_free", "uid_quota", "rule_quota"); std::nullopt otherwise.
std::optional<std::string> vacuumed_reason(const DumpRecord& r);

/// Size and free space of a filesystem, bytes.
struct FsSpace {
  std::uint64_t total_bytes = 0;  ///< f_blocks × f_frsize
  std::uint64_t free_bytes = 0;   ///< f_bavail × f_frsize: available to unprivileged users
};

/// fstatvfs() of the filesystem holding `dirfd`; std::nullopt (errno set) on failure.
std::optional<FsSpace> fs_space(int dirfd);

/// Why a dump was vacuumed.
enum class VacuumReason { MaxAge, UidQuota, RuleQuota, MaxUse, KeepFree };

/// Stable name: "max_age", "uid_quota", "rule_quota", "max_use", "keep_free".
const char* vacuum_reason_name(VacuumReason r);

/// One dump that vacuum() removed (or, in a dry run, would remove).
struct VacuumedDump {
  std::string id;
  std::int64_t uid = -1;
  std::string rule;              ///< group_key(GroupKind::Rule, ...)
  std::int64_t timestamp_us = 0; ///< crash time, UTC µs
  std::uint64_t bytes = 0;       ///< stored_size from the index (0 if it held no core)
  std::uint64_t disk_bytes = 0;  ///< blocks the file occupied (st_blocks × 512) as found; 0 if none
  VacuumReason reason = VacuumReason::MaxUse;
  bool row_deleted = false;      ///< the row was deleted (max_age) rather than marked vacuumed
  bool file_missing = false;     ///< there was no file to delete (already gone)
  bool not_regular = false;      ///< the name was not a regular file (a symlink...): the entry itself
                                 ///< was unlinked, never what it points to
};

/// What vacuum() did.
struct VacuumResult {
  std::vector<VacuumedDump> removed;  ///< in removal order
  std::uint64_t bytes_removed = 0;    ///< sum of removed[].bytes
  /// Limits that still do not hold when vacuum() returns, one human-readable line each (e.g. only
  /// the protected dump is left, or a file could not be deleted).
  std::vector<std::string> unmet;
  /// Failures that did not stop the vacuum (unlinkat or index errors, a path vacuum refuses to
  /// touch), one line each, naming the dump id.
  std::vector<std::string> errors;
  bool dry_run = false;
};

/// Deletes cores (see the top of this file for what happens to rows) until every limit holds, in
/// this order:
///   1. max_age: every row (any state but in_progress) with timestamp older than now - max_age;
///   2. quotas: for each uid over max_use_per_uid_bytes and each rule over its
///      max_use_per_rule_bytes entry, that group's oldest cores first;
///   3. max_use_bytes and keep_free (bytes / percent, via fstatvfs on `store_dirfd`): repeatedly the
///      oldest core of the biggest consumer uid (most bytes now, ties: the older oldest core).
/// Never deletes `keep_id` (pass the dump just written, or ""), nor, to make room for it (in its
/// own uid and rule groups, and for max_use and keep_free), a core that crashed after it: a dump
/// that crashed first may finish storing last, and oldest-first must hold for it too (the limit is
/// then reported unmet, and the next vacuum removes it first). Never deletes in_progress dumps,
/// or anything but the names the daemon gives a row's core, "<row id>.zst" or "<row id>.core"
/// (the id being 32 lower-case hex); files are removed with unlinkat() relative to `store_dirfd`,
/// which never follows a symlink (a symlink is removed, its target is untouched). keep_free counts
/// the blocks of each removed file as freed (so it also works where space is released lazily). Before each deletion the row is read again and skipped
/// if it changed (another vacuum got there first). `dry_run` changes nothing and reports what
/// would be removed. Limits that cannot be met are listed in `unmet`; per-dump failures in
/// `errors`. Throws IndexError only if the index cannot be listed. Calls on the same store must be
/// serialised by the caller (the daemon: one mutex around every call).
VacuumResult vacuum(Index& index, int store_dirfd, const RetentionLimits& limits,
                    const std::string& keep_id, std::chrono::system_clock::time_point now,
                    bool dry_run = false);

/// Bytes and number of stored cores.
struct GroupUsage {
  std::uint64_t bytes = 0;  ///< sum of stored_size
  std::uint64_t cores = 0;
};

/// What the store holds, from the index.
struct UsageReport {
  GroupUsage total;  ///< every dump that holds_core()
  /// Per kind, per group key: usage of the dumps holding cores. Groups without cores are absent.
  std::map<GroupKind, std::map<std::string, GroupUsage>> groups;
  std::uint64_t rows = 0;                        ///< all rows in the index
  std::map<std::string, std::uint64_t> states;   ///< rows per state_name()
  std::uint64_t vacuumed_rows = 0;               ///< rows whose core vacuum() removed
  std::optional<FsSpace> filesystem;             ///< set when a store_dirfd was given and fstatvfs worked
};

/// Accounts the index's dumps per group (see UsageReport); with `store_dirfd` >= 0 also reports
/// the filesystem's size and free space. Reads no core file. Throws IndexError.
UsageReport usage(const Index& index, int store_dirfd = -1);

/// Kinds of inconsistency between the store directory and the index.
enum class VerifyProblem {
  Orphan,            ///< a file no row accounts for (no row, or the row says it has no core)
  Missing,           ///< a complete/truncated row whose core file is not in the store
  NotRegular,        ///< a row's core name is a symlink, directory, ...: never followed
  SizeMismatch,      ///< the file's size differs from the row's stored_size
  Corrupt,           ///< (deep) a zstd file is not a valid zstd stream or fails its checksum
                     ///< (a raw core has no checksum: it cannot be found corrupt)
  /// (deep) the core bytes (decompressed, or read from a raw core) differ from core_size
  /// (complete dumps) or extra.stored_core_bytes (truncated dumps)
  CoreSizeMismatch,
  Unreadable,        ///< the file or directory could not be examined (errno text in detail)
};

/// Stable name: "orphan", "missing", "not_regular", "size_mismatch", "corrupt",
/// "core_size_mismatch", "unreadable".
const char* verify_problem_name(VerifyProblem p);

/// One inconsistency found by verify().
struct VerifyIssue {
  VerifyProblem problem = VerifyProblem::Orphan;
  std::string name;    ///< file name in the store (raw bytes: may need escaping to print)
  std::string id;      ///< the row's id, or "" when no row is involved
  std::string detail;  ///< one line of explanation (may quote `name`'s raw bytes)
};

/// Result of verify().
struct VerifyReport {
  std::vector<VerifyIssue> issues;
  std::uint64_t files = 0;         ///< directory entries examined (not dotfiles, not index.sqlite*)
  std::uint64_t cores = 0;         ///< rows that hold_core()
  std::uint64_t deep_checked = 0;  ///< files read through (deep): decompressed, or read if raw
  /// True if nothing was found.
  bool ok() const { return issues.empty(); }
};

/// Compares the store directory with the index: orphan files (ignoring dotfiles such as
/// `.partial-*` and `index.sqlite*`), missing files, non-regular entries where a core should be,
/// size mismatches (the file's st_size against stored_size, for both formats), and with `deep`
/// also reads each core through (bounded memory, output discarded) as its row's compression says:
/// a zstd file is decompressed, which checks its content checksums; a raw core (compression
/// "none") is read as is, which finds read errors. Either way the core bytes it yields must be
/// core_size for a complete dump (extra.stored_core_bytes for a truncated one, when recorded).
/// Never follows symlinks and never modifies anything. Findings that could be a race with a
/// running daemon (file or row created/removed during the scan) are re-checked before being
/// reported. Throws IndexError if the index cannot be read.
VerifyReport verify(const Index& index, int store_dirfd, bool deep = false);

}  // namespace coredumpd
