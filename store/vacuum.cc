#include "store/vacuum.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <limits>
#include <map>
#include <utility>

#include "store/core_names.h"
#include "store/record_extras.h"

namespace coredumpd {

namespace {

constexpr std::size_t kKinds = std::size(kGroupKinds);
// How often keep_free re-measures the filesystem after its estimate says the limit holds.
constexpr int kMaxRemeasures = 3;

std::int64_t to_us(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

std::string human_size(std::uint64_t bytes) {
  return std::to_string(bytes) + " bytes";
}

struct Entry {
  RowSummary rec;
  std::array<std::string, kKinds> keys;  // group_key() per kind, in kGroupKinds order
  bool counted = false;                  // holds_core(): counts towards usage
  bool evictable = false;                // counted, not keep_id, a name vacuum may unlink
  bool done = false;                     // removed, or given up on
};

std::size_t kind_index(GroupKind k) {
  return static_cast<std::size_t>(k);
}

class Vacuumer {
 public:
  Vacuumer(Index& index, int dirfd, const RetentionLimits& limits, const std::string& keep_id,
           std::chrono::system_clock::time_point now, bool dry_run)
      : index_(index), dirfd_(dirfd), limits_(limits), keep_id_(keep_id), now_us_(to_us(now)) {
    result_.dry_run = dry_run;
  }

  VacuumResult run() {
    load();
    uploaded_first();
    if (limits_.max_age || limits_.max_core_age) expire();
    for (const GroupKind k : kGroupKinds) enforce_quotas(k);
    enforce_global();
    return std::move(result_);
  }

 private:
  void load() {
    auto rows = index_.list_summaries();  // oldest first
    entries_.reserve(rows.size());
    for (auto& r : rows) {
      Entry e;
      for (const GroupKind k : kGroupKinds) e.keys[kind_index(k)] = group_key(k, r);
      e.counted = holds_core(r);
      // A core whose upload is pending stays until the store holds its confirmation (issue 26).
      e.evictable = e.counted && r.id != keep_id_ && is_core_file_of(r.id, r.path) &&
                    r.upload != RowSummary::Upload::CorePending;
      e.rec = std::move(r);
      const std::size_t i = entries_.size();
      if (!keep_id_.empty() && e.rec.id == keep_id_) keep_ = i;
      entries_.push_back(std::move(e));
      const Entry& added = entries_.back();
      if (!added.counted) continue;
      total_ += added.rec.stored_size;
      for (std::size_t k = 0; k < kKinds; ++k) {
        usage_[k][added.keys[k]] += added.rec.stored_size;
        members_[k][added.keys[k]].push_back(i);
      }
    }
  }

  /// Within each group, cores already uploaded (a copy is in S3) go before the others, each part
  /// oldest first.
  void uploaded_first() {
    for (auto& kind : members_)
      for (auto& [key, list] : kind)
        std::stable_partition(list.begin(), list.end(), [this](std::size_t i) {
          return entries_[i].rec.upload == RowSummary::Upload::CoreUploaded;
        });
  }

  /// Step 1: rows older than max_age go entirely (core file first); cores older than max_core_age
  /// go, their rows stay.
  void expire() {
    const auto cutoff = [this](const std::optional<std::chrono::seconds>& age) {
      return age ? now_us_ - age->count() * 1'000'000 : std::numeric_limits<std::int64_t>::min();
    };
    const std::int64_t row_cutoff = cutoff(limits_.max_age);
    const std::int64_t core_cutoff = cutoff(limits_.max_core_age);
    for (auto& e : entries_) {
      if (e.done || e.rec.state == DumpState::InProgress || e.rec.id == keep_id_) continue;
      if (e.rec.upload == RowSummary::Upload::CorePending) continue;  // not before its upload is confirmed
      const bool row_expired = e.rec.timestamp_us < row_cutoff;
      if (!row_expired && !(e.counted && e.rec.timestamp_us < core_cutoff)) continue;
      if (!e.rec.path.empty() && !is_core_file_of(e.rec.id, e.rec.path)) {
        result_.errors.push_back("dump " + e.rec.id +
                                 ": core path is not \"<id>.zst\" or \"<id>.core\"; not deleted"
                                 " (max_age)");
        e.done = true;
        continue;
      }
      remove(e, row_expired ? VacuumReason::MaxAge : VacuumReason::MaxCoreAge);
    }
  }

  std::optional<std::uint64_t> quota(GroupKind k, const std::string& key) const {
    switch (k) {
      case GroupKind::Uid: return limits_.max_use_per_uid_bytes;
      case GroupKind::Rule: {
        const auto it = limits_.max_use_per_rule_bytes.find(key);
        if (it == limits_.max_use_per_rule_bytes.end()) return std::nullopt;
        return it->second;
      }
    }
    return std::nullopt;
  }

  static VacuumReason quota_reason(GroupKind k) {
    return k == GroupKind::Uid ? VacuumReason::UidQuota : VacuumReason::RuleQuota;
  }

  /// The oldest entry of group `key` of kind `k` that may still be removed, or nullptr. With
  /// `before_keep`, only an entry older than keep_id's (entries_ is in crash order): room for the
  /// dump just written is never made by evicting a crash that came after it. A dump that crashed
  /// first can finish storing last (a bigger core); evicting newer cores for it would invert the
  /// oldest-first order, so the limit stays unmet until the next vacuum, which takes it first.
  Entry* oldest(std::size_t k, const std::string& key, bool before_keep) {
    auto it = members_[k].find(key);
    if (it == members_[k].end()) return nullptr;
    std::size_t& cursor = cursors_[k][key];
    const auto& list = it->second;
    while (cursor < list.size() && (entries_[list[cursor]].done || !entries_[list[cursor]].evictable))
      ++cursor;
    // The list is uploaded cores first, then the rest (uploaded_first()), each part in crash order:
    // an uploaded core newer than keep_id is passed over, not taken as the end of the group.
    for (std::size_t j = cursor; j < list.size(); ++j) {
      const Entry& e = entries_[list[j]];
      if (e.done || !e.evictable) continue;
      if (before_keep && keep_ && list[j] > *keep_) {
        if (e.rec.upload == RowSummary::Upload::CoreUploaded) continue;
        return nullptr;
      }
      return &entries_[list[j]];
    }
    return nullptr;
  }

  /// True if the dump just written (keep_id) belongs to group `key` of kind `k`.
  bool keep_in(std::size_t k, const std::string& key) const { return keep_ && entries_[*keep_].keys[k] == key; }

  /// Step 2: each group of kind `k` over its quota loses its oldest cores.
  void enforce_quotas(GroupKind k) {
    const std::size_t ki = kind_index(k);
    for (auto& [key, used] : usage_[ki]) {
      const auto limit = quota(k, key);
      if (!limit) continue;
      while (used > *limit) {
        Entry* e = oldest(ki, key, keep_in(ki, key));
        if (!e) {
          result_.unmet.push_back(std::string(group_kind_name(k)) + " \"" + key + "\" uses " +
                                  human_size(used) + ", over its quota of " + human_size(*limit) +
                                  ": nothing else of it can be removed");
          break;
        }
        remove(*e, quota_reason(k));
      }
    }
  }

  /// The uid using the most bytes that still has a removable core (ties: the one whose oldest
  /// removable core is older), or nullptr.
  Entry* biggest_consumers_oldest() {
    const std::size_t ki = kind_index(GroupKind::Uid);
    Entry* best = nullptr;
    std::uint64_t best_used = 0;
    for (const auto& [key, used] : usage_[ki]) {
      Entry* e = oldest(ki, key, /*before_keep=*/true);
      if (!e) continue;
      if (!best || used > best_used ||
          (used == best_used && e->rec.timestamp_us < best->rec.timestamp_us)) {
        best = e;
        best_used = used;
      }
    }
    return best;
  }

  /// Step 3: max_use and keep_free.
  void enforce_global() {
    std::optional<std::uint64_t> want_free, max_use = limits_.max_use_bytes;
    std::uint64_t fs_free = 0;
    if (limits_.keep_free_bytes || limits_.keep_free_percent || limits_.max_use_percent) {
      if (const auto fs = fs_space(dirfd_)) {
        fs_free = fs->free_bytes;
        const SpaceLimits space = resolve_space_limits(limits_, fs->total_bytes);
        want_free = space.keep_free_bytes;
        max_use = space.max_use_bytes;
      } else {
        result_.errors.push_back("keep_free/max_use: fstatvfs on the store: " + errno_text(errno));
      }
    }
    int remeasures = 0;
    for (;;) {
      const bool over_use = max_use && total_ > *max_use;
      bool low_free = want_free && fs_free + freed_disk_ < *want_free;
      if (!over_use && !low_free && want_free && freed_disk_ > 0 && !result_.dry_run &&
          remeasures < kMaxRemeasures) {
        // The estimate says enough is free; measure, since the index's own writes (and a daemon
        // storing meanwhile) also take space. Rebase and go on only if the filesystem visibly
        // released what was deleted: where space comes back lazily (files still open, some
        // copy-on-write filesystems) measuring again would delete far more than needed.
        ++remeasures;
        const auto fs = fs_space(dirfd_);
        if (fs && fs->free_bytes < *want_free) {
          if (fs->free_bytes < fs_free + freed_disk_ / 2) {
            result_.unmet.push_back("keep_free: " + human_size(fs->free_bytes) + " free, want " +
                                    human_size(*want_free) +
                                    ": the space of deleted cores has not been released yet");
            return;
          }
          fs_free = fs->free_bytes;
          freed_disk_ = 0;
          low_free = true;
        }
      }
      if (!over_use && !low_free) return;
      Entry* e = biggest_consumers_oldest();
      if (!e) {
        if (over_use)
          result_.unmet.push_back("max_use: cores use " + human_size(total_) + ", over " +
                                  human_size(*max_use) +
                                  ": nothing else can be removed");
        if (low_free)
          result_.unmet.push_back("keep_free: " + human_size(fs_free + freed_disk_) +
                                  " free, want " + human_size(*want_free) +
                                  ": nothing else can be removed");
        return;
      }
      remove(*e, over_use ? VacuumReason::MaxUse : VacuumReason::KeepFree);
    }
  }

  /// Drops `e` from the usage totals.
  void uncount(Entry& e) {
    if (!e.counted) return;
    e.counted = false;
    total_ -= e.rec.stored_size;
    for (std::size_t k = 0; k < kKinds; ++k) usage_[k][e.keys[k]] -= e.rec.stored_size;
  }

  /// Removes the core of `e` (and the row, for max_age), unless the row changed since load().
  void remove(Entry& e, VacuumReason why) {
    e.done = true;
    const std::string& id = e.rec.id;
    // Re-read the row: another vacuum (dumpctl vs the daemon) may have handled it meanwhile.
    std::optional<DumpRecord> now;
    try {
      now = index_.get(id);
    } catch (const std::exception& ex) {
      result_.errors.push_back("dump " + id + ": " + ex.what());
      return;
    }
    if (!now || now->state != e.rec.state || now->path != e.rec.path) {
      if (!now || !holds_core(*now)) uncount(e);
      return;
    }

    VacuumedDump v;
    v.id = id;
    v.uid = e.rec.uid;
    v.rule = e.keys[kind_index(GroupKind::Rule)];
    v.timestamp_us = e.rec.timestamp_us;
    v.bytes = e.counted ? e.rec.stored_size : 0;
    v.reason = why;
    v.row_deleted = why == VacuumReason::MaxAge;

    if (!e.rec.path.empty()) {
      const char* name = e.rec.path.c_str();
      struct stat sb {};
      if (::fstatat(dirfd_, name, &sb, AT_SYMLINK_NOFOLLOW) == 0) {
        v.not_regular = !S_ISREG(sb.st_mode);
        // Blocks come back only when this was the last link to a regular file.
        if (S_ISREG(sb.st_mode) && sb.st_nlink == 1)
          v.disk_bytes = static_cast<std::uint64_t>(sb.st_blocks) * 512U;
      } else if (errno == ENOENT) {
        v.file_missing = true;
      } else {
        result_.errors.push_back("dump " + id + ": cannot stat " + e.rec.path + ": " +
                                 errno_text(errno));
        return;
      }
      if (!result_.dry_run && !v.file_missing) {
        // unlinkat() removes the directory entry itself: a symlink goes, its target stays.
        if (::unlinkat(dirfd_, name, 0) != 0) {
          if (errno == ENOENT) {
            v.file_missing = true;
            v.disk_bytes = 0;
          } else {
            result_.errors.push_back("dump " + id + ": cannot delete " + e.rec.path + ": " +
                                     errno_text(errno));
            return;
          }
        }
      }
    }

    // The file is gone (or never was): from here on it no longer uses space.
    uncount(e);
    freed_disk_ += v.disk_bytes;
    if (!result_.dry_run) {
      try {
        if (v.row_deleted) {
          index_.remove(id);
        } else {
          DumpRecord r = std::move(*now);
          r.extra[extras::kVacuumed] = {{extras::kVacuumedReason, vacuum_reason_name(why)},
                                 {"time_us", now_us_},
                                 {"path", r.path},
                                 {"stored_size", r.stored_size}};
          r.path.clear();
          index_.update(r);
        }
      } catch (const std::exception& ex) {
        result_.errors.push_back("dump " + id + ": core deleted but the index was not updated: " +
                                 ex.what());
      }
    }
    result_.bytes_removed += v.bytes;
    result_.removed.push_back(std::move(v));
  }

  Index& index_;
  int dirfd_;
  const RetentionLimits& limits_;
  const std::string& keep_id_;
  std::int64_t now_us_;
  VacuumResult result_;

  std::vector<Entry> entries_;  // oldest first
  std::optional<std::size_t> keep_;  // keep_id's entry, if it is in the index
  std::uint64_t total_ = 0;     // bytes of counted entries
  std::uint64_t freed_disk_ = 0;
  std::array<std::map<std::string, std::uint64_t>, kKinds> usage_;
  std::array<std::map<std::string, std::vector<std::size_t>>, kKinds> members_;  // oldest first
  std::array<std::map<std::string, std::size_t>, kKinds> cursors_;
};

}  // namespace

const char* vacuum_reason_name(VacuumReason r) {
  switch (r) {
    case VacuumReason::MaxAge: return "max_age";
    case VacuumReason::MaxCoreAge: return "max_core_age";
    case VacuumReason::UidQuota: return "uid_quota";
    case VacuumReason::RuleQuota: return "rule_quota";
    case VacuumReason::MaxUse: return "max_use";
    case VacuumReason::KeepFree: return "keep_free";
  }
  return "unknown";
}

VacuumResult vacuum(Index& index, int store_dirfd, const RetentionLimits& limits,
                    const std::string& keep_id, std::chrono::system_clock::time_point now,
                    bool dry_run) {
  if (!limits.any()) {
    VacuumResult r;
    r.dry_run = dry_run;
    return r;
  }
  return Vacuumer(index, store_dirfd, limits, keep_id, now, dry_run).run();
}

}  // namespace coredumpd
