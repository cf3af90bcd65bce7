// What the store's cores count towards: which dumps hold a core, the groups (uid, policy rule) a
// core is charged to for quotas and `dumpctl du`, and the filesystem's size and free space.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "store/dump_record.h"
#include "store/index.h"

namespace coredumpd {

/// Kinds of groups that share a quota and are reported by usage(). Each dump belongs to exactly one
/// group of each kind, named by group_key(). (Containers will be another kind.)
enum class GroupKind {
  Uid,   ///< the crashing process's real uid, as decimal ("1000"; "-1" if unknown)
  Rule,  ///< the policy rule that chose the dump (DumpRecord::rule); "" for the defaults
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
/// strerror(err) as a string, for the messages of vacuum and verify.
std::string errno_text(int err);

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

}  // namespace coredumpd
