// Vacuum: deletes cores until the retention limits hold.
//
// What vacuuming does to the index (the history of crashes stays, the cores go):
//   - a dump evicted for a size limit (per-uid / per-rule quota, max_use, keep_free) keeps its row
//     and its state; its `path` is cleared and `extra["vacuumed"]` (extras::kVacuumed) records why
//     and when: {"reason": "max_use", "time_us": <UTC µs>, "path": "<id>.zst", "stored_size": <bytes>}
//     (the path is "<id>.core" for a core stored uncompressed, compression "none").
//     `stored_size` keeps its value (how big the core was); usage no longer counts it because a
//     dump counts only while it has a `path`.
//   - a core older than max_core_age goes as for a size limit (reason "max_core_age"), its row stays;
//   - a row older than max_age (any state but in_progress) is deleted entirely, its core file
//     first: max_age bounds the index as well as the disk.
// The file is always unlinked before the row changes, so a crash in between leaves a row whose
// core is missing (shown as such by dumpctl, reported by verify) and never an unaccounted file.
//
// Units: sizes in bytes, times system_clock time points (the index keeps UTC microseconds).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "store/core_accounting.h"
#include "store/index.h"
#include "store/retention_limits.h"

namespace coredumpd {

/// Why a dump was vacuumed.
enum class VacuumReason { MaxAge, MaxCoreAge, UidQuota, RuleQuota, MaxUse, KeepFree };

/// Stable name: "max_age", "max_core_age", "uid_quota", "rule_quota", "max_use", "keep_free".
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
///      max_core_age: every core older than now - max_core_age (the row stays);
///   2. quotas: for each uid over max_use_per_uid_bytes and each rule over its
///      max_use_per_rule_bytes entry, that group's oldest cores first;
///   3. max_use_bytes and keep_free (bytes / percent, via fstatvfs on `store_dirfd`): repeatedly the
///      oldest core of the biggest consumer uid (most bytes now, ties: the older oldest core).
/// Uploads (schema 4, store/upload_row.h): a core whose upload is pending is never deleted, by
/// any step; within each group, cores already uploaded go first (then the others, oldest first).
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

}  // namespace coredumpd
