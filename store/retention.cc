#include "store/retention.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <set>
#include <utility>

#include "store/core_stream.h"

namespace coredumpd {

namespace {

using nlohmann::json;

constexpr std::uint64_t kMaxSize = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
// Durations are compared in microseconds (the index's unit), which must not overflow int64.
constexpr std::int64_t kMaxDurationSeconds = std::numeric_limits<std::int64_t>::max() / 1'000'000;
constexpr std::size_t kIdHexChars = 32;
constexpr std::size_t kKinds = std::size(kGroupKinds);
// How often keep_free re-measures the filesystem after its estimate says the limit holds.
constexpr int kMaxRemeasures = 3;

// ---------------------------------------------------------------------------------------------
// Parsing

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

char lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

/// A decimal number "<digits>[.<digits>]" at the start of `s`, consumed. The integer part must fit
/// in uint64; at most 9 fraction digits count (more are ignored).
struct Decimal {
  std::uint64_t whole = 0;
  std::uint64_t frac = 0;        // fraction digits as an integer
  std::uint64_t frac_scale = 1;  // 10^(number of fraction digits kept)
};

std::optional<Decimal> take_decimal(std::string_view& s) {
  Decimal d;
  std::size_t i = 0;
  if (s.empty() || !is_digit(s[0])) return std::nullopt;
  for (; i < s.size() && is_digit(s[i]); ++i) {
    const auto digit = static_cast<std::uint64_t>(s[i] - '0');
    if (d.whole > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return std::nullopt;
    d.whole = d.whole * 10 + digit;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    const std::size_t start = i;
    for (; i < s.size() && is_digit(s[i]); ++i) {
      if (d.frac_scale < 1'000'000'000) {
        d.frac = d.frac * 10 + static_cast<std::uint64_t>(s[i] - '0');
        d.frac_scale *= 10;
      }
    }
    if (i == start) return std::nullopt;  // "1." is not a number
  }
  s.remove_prefix(i);
  return d;
}

std::string lower_string(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = lower(c);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Store helpers

bool is_lower_hex(const std::string& s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return is_digit(c) || (c >= 'a' && c <= 'f'); });
}

/// The id a core file name would belong to ("<id>.zst" or "<id>.core" -> "<id>"), or "".
std::string id_of_name(const std::string& name) {
  for (const std::string_view ext : {kZstdExtension, kRawExtension}) {
    if (name.size() <= ext.size() || !name.ends_with(ext)) continue;
    std::string id = name.substr(0, name.size() - ext.size());
    return id.size() == kIdHexChars && is_lower_hex(id) ? id : std::string();
  }
  return {};
}

/// True if `path` is a name the daemon gives the core of dump `id`: "<32 hex>.zst" or
/// "<32 hex>.core". Vacuum never unlinks anything else, whatever the index says.
bool is_generated_name(const std::string& id, const std::string& path) {
  return !id.empty() && id_of_name(path) == id;
}

std::int64_t to_us(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

std::string errno_text(int err) {
  return std::strerror(err);
}

std::string file_type_name(mode_t mode) {
  if (S_ISLNK(mode)) return "a symlink";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device node";
  return "not a regular file";
}

std::string human_size(std::uint64_t bytes) {
  return std::to_string(bytes) + " bytes";
}

// ---------------------------------------------------------------------------------------------
// Vacuum

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
    if (limits_.max_age) expire();
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
      e.evictable = e.counted && r.id != keep_id_ && is_generated_name(r.id, r.path);
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

  /// Step 1: rows older than max_age go entirely (core file first).
  void expire() {
    const std::int64_t age_us = limits_.max_age->count() * 1'000'000;
    const std::int64_t cutoff = now_us_ - age_us;
    for (auto& e : entries_) {
      if (e.done || e.rec.timestamp_us >= cutoff) continue;
      if (e.rec.state == DumpState::InProgress || e.rec.id == keep_id_) continue;
      if (!e.rec.path.empty() && !is_generated_name(e.rec.id, e.rec.path)) {
        result_.errors.push_back("dump " + e.rec.id +
                                 ": core path is not \"<id>.zst\" or \"<id>.core\"; not deleted"
                                 " (max_age)");
        e.done = true;
        continue;
      }
      remove(e, VacuumReason::MaxAge);
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
    if (cursor == list.size() || (before_keep && keep_ && list[cursor] > *keep_)) return nullptr;
    return &entries_[list[cursor]];
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
    std::optional<std::uint64_t> want_free;
    std::uint64_t fs_free = 0;
    if (limits_.keep_free_bytes || limits_.keep_free_percent) {
      if (const auto fs = fs_space(dirfd_)) {
        fs_free = fs->free_bytes;
        std::uint64_t want = limits_.keep_free_bytes.value_or(0);
        if (limits_.keep_free_percent) {
          const double share = static_cast<double>(fs->total_bytes) * *limits_.keep_free_percent / 100.0;
          want = std::max(want, static_cast<std::uint64_t>(std::ceil(share)));
        }
        want_free = want;
      } else {
        result_.errors.push_back("keep_free: fstatvfs on the store: " + errno_text(errno));
      }
    }
    int remeasures = 0;
    for (;;) {
      const bool over_use = limits_.max_use_bytes && total_ > *limits_.max_use_bytes;
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
                                  human_size(*limits_.max_use_bytes) +
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
          r.extra["vacuumed"] = {{"reason", vacuum_reason_name(why)},
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

// ---------------------------------------------------------------------------------------------
// Verify

bool is_ignored_name(const std::string& name) {
  return name.empty() || name[0] == '.' || name.rfind("index.sqlite", 0) == 0;
}

/// Closes a descriptor on scope exit.
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

struct DirCloser {
  void operator()(DIR* d) const { ::closedir(d); }
};

/// Outcome of reading one core through.
struct DeepResult {
  std::optional<VerifyProblem> problem;
  std::string detail;
  std::uint64_t bytes = 0;  // core bytes: decompressed (zstd) or read as is (raw)
};

/// A DeepResult that reports problem `p`.
DeepResult deep_failure(VerifyProblem p, std::string detail) {
  DeepResult res;
  res.problem = p;
  res.detail = std::move(detail);
  return res;
}

/// Reads the core on `fd` through as `compression` says it is stored (stream_core()), counting
/// its bytes: zstd's checksums prove a compressed core intact; a raw core has none, so reading it
/// only proves every byte can be read.
DeepResult read_through(int fd, const std::string& compression) {
  DeepResult res;
  const bool raw = compression == kCompressionNone;
  try {
    res.bytes = stream_core(fd, compression, [](const char*, std::size_t) {});
  } catch (const CoreStreamError& e) {
    res.bytes = e.bytes;
    const std::string after = " after " + std::to_string(e.bytes) + (raw ? " bytes" : " decompressed bytes");
    switch (e.kind) {
      case CoreStreamError::Kind::Unreadable: return deep_failure(VerifyProblem::Unreadable, e.what() + after);
      case CoreStreamError::Kind::Corrupt: return deep_failure(VerifyProblem::Corrupt, "zstd: " + std::string(e.what()) + after);
      case CoreStreamError::Kind::Truncated: return deep_failure(VerifyProblem::Corrupt, e.what() + after);
    }
  }
  return res;
}

/// Reads the core file `name` through as its row's `compression` says it is stored: decompresses
/// a zstd file, reads a raw ("none") one as is. Never follows a symlink.
DeepResult deep_check(int dirfd, const std::string& name, const std::string& compression) {
  const int fd = ::openat(dirfd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return deep_failure(VerifyProblem::Unreadable, "cannot open: " + errno_text(errno));
  const FdGuard guard{fd};
  struct stat sb {};
  if (::fstat(fd, &sb) != 0)
    return deep_failure(VerifyProblem::Unreadable, "fstat: " + errno_text(errno));
  if (!S_ISREG(sb.st_mode))
    return deep_failure(VerifyProblem::NotRegular, file_type_name(sb.st_mode));
  return read_through(fd, compression);
}

/// True if `r` accounts for a file named `name` (a core that is, or is being, stored). An
/// InProgress row accounts for either format's file: the daemon decides at the end of the stream
/// whether the core is kept raw, links `<id>.core`, and only then updates the row's path.
bool accounts_for(const DumpRecord& r, const std::string& name) {
  if (r.state == DumpState::InProgress) return id_of_name(name) == r.id;
  return r.path == name && holds_core(r);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Public functions

bool RetentionLimits::any() const {
  return max_use_bytes || keep_free_bytes || keep_free_percent || max_age ||
         max_use_per_uid_bytes || !max_use_per_rule_bytes.empty();
}

std::optional<std::uint64_t> parse_size(std::string_view text) {
  std::string_view s = trim(text);
  auto num = take_decimal(s);
  if (!num) return std::nullopt;
  const std::string unit = lower_string(trim(s));
  std::uint64_t mult = 1;
  if (!unit.empty()) {
    static constexpr std::string_view kPrefixes = "kmgtpe";
    std::string_view u = unit;
    if (u == "b") {
      u = {};
    } else if (const auto p = kPrefixes.find(u[0]); p != std::string_view::npos) {
      for (std::size_t i = 0; i <= p; ++i) mult *= 1024;
      u.remove_prefix(1);
      if (u != "" && u != "b" && u != "ib") return std::nullopt;
      u = {};
    }
    if (!u.empty()) return std::nullopt;
  }
  if (num->whole > kMaxSize / mult) return std::nullopt;
  std::uint64_t bytes = num->whole * mult;
  if (num->frac != 0) {
    // frac/frac_scale < 1, so this adds less than `mult`; long double holds 64-bit integers exactly.
    const long double part = static_cast<long double>(num->frac) /
                             static_cast<long double>(num->frac_scale) *
                             static_cast<long double>(mult);
    const auto add = static_cast<std::uint64_t>(part);
    if (bytes > kMaxSize - add) return std::nullopt;
    bytes += add;
  }
  return bytes;
}

std::optional<double> parse_percent(std::string_view text) {
  std::string_view s = trim(text);
  if (s.empty() || s.back() != '%') return std::nullopt;
  s.remove_suffix(1);
  s = trim(s);
  auto num = take_decimal(s);
  if (!num || !s.empty() || num->whole >= 100) return std::nullopt;
  const double p = static_cast<double>(num->whole) +
                   static_cast<double>(num->frac) / static_cast<double>(num->frac_scale);
  if (!(p > 0.0 && p < 100.0)) return std::nullopt;
  return p;
}

std::optional<std::chrono::seconds> parse_duration(std::string_view text) {
  std::string_view s = trim(text);
  if (s.empty()) return std::nullopt;
  struct Unit {
    std::string_view name;
    std::int64_t seconds;
  };
  static constexpr Unit kUnits[] = {
      {"s", 1},        {"sec", 1},          {"second", 1},      {"seconds", 1},
      {"m", 60},       {"min", 60},         {"minute", 60},     {"minutes", 60},
      {"h", 3600},     {"hour", 3600},      {"hours", 3600},    {"d", 86400},
      {"day", 86400},  {"days", 86400},     {"w", 604800},      {"week", 604800},
      {"weeks", 604800},
  };
  std::int64_t total = 0;
  bool first = true;
  while (!s.empty()) {
    std::size_t i = 0;
    std::int64_t n = 0;
    for (; i < s.size() && is_digit(s[i]); ++i) {
      n = n * 10 + (s[i] - '0');
      if (n > kMaxDurationSeconds) return std::nullopt;
    }
    if (i == 0) return std::nullopt;
    s.remove_prefix(i);
    s = trim(s);
    std::size_t j = 0;
    while (j < s.size() && ((s[j] >= 'a' && s[j] <= 'z') || (s[j] >= 'A' && s[j] <= 'Z'))) ++j;
    const std::string unit = lower_string(s.substr(0, j));
    s.remove_prefix(j);
    s = trim(s);
    std::int64_t mult = 0;
    if (unit.empty()) {
      if (!first || !s.empty()) return std::nullopt;  // bare digits only as the whole text
      mult = 1;
    } else {
      for (const auto& u : kUnits)
        if (u.name == unit) mult = u.seconds;
      if (mult == 0) return std::nullopt;
    }
    if (n > (kMaxDurationSeconds - total) / mult) return std::nullopt;
    total += n * mult;
    first = false;
  }
  if (total <= 0) return std::nullopt;
  return std::chrono::seconds(total);
}

const char* group_kind_name(GroupKind k) {
  switch (k) {
    case GroupKind::Uid: return "uid";
    case GroupKind::Rule: return "rule";
  }
  return "unknown";
}

std::string group_key(GroupKind k, const DumpRecord& r) {
  switch (k) {
    case GroupKind::Uid: return std::to_string(r.uid);
    case GroupKind::Rule: {
      if (r.extra.is_object()) {
        const auto it = r.extra.find("rule");
        if (it != r.extra.end() && it->is_string()) return it->get<std::string>();
      }
      return {};
    }
  }
  return {};
}

std::string group_key(GroupKind k, const RowSummary& r) {
  switch (k) {
    case GroupKind::Uid: return std::to_string(r.uid);
    case GroupKind::Rule: return r.rule;
  }
  return {};
}

bool holds_core(const DumpRecord& r) {
  return (r.state == DumpState::Complete || r.state == DumpState::Truncated) && !r.path.empty();
}

bool holds_core(const RowSummary& r) {
  return (r.state == DumpState::Complete || r.state == DumpState::Truncated) && !r.path.empty();
}

std::optional<std::string> vacuumed_reason(const DumpRecord& r) {
  if (!r.extra.is_object()) return std::nullopt;
  const auto it = r.extra.find("vacuumed");
  if (it == r.extra.end() || !it->is_object()) return std::nullopt;
  const auto reason = it->find("reason");
  if (reason == it->end() || !reason->is_string()) return std::string("unknown");
  return reason->get<std::string>();
}

std::optional<FsSpace> fs_space(int dirfd) {
  struct statvfs sv {};
  if (::fstatvfs(dirfd, &sv) != 0) return std::nullopt;
  FsSpace s;
  s.total_bytes = static_cast<std::uint64_t>(sv.f_blocks) * sv.f_frsize;
  s.free_bytes = static_cast<std::uint64_t>(sv.f_bavail) * sv.f_frsize;
  return s;
}

const char* vacuum_reason_name(VacuumReason r) {
  switch (r) {
    case VacuumReason::MaxAge: return "max_age";
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

UsageReport usage(const Index& index, int store_dirfd) {
  UsageReport rep;
  for (const GroupKind k : kGroupKinds) rep.groups[k];  // every kind present, maybe empty
  for (const auto& r : index.list_summaries()) {
    ++rep.rows;
    ++rep.states[state_name(r.state)];
    if (r.vacuumed) ++rep.vacuumed_rows;
    if (!holds_core(r)) continue;
    rep.total.bytes += r.stored_size;
    ++rep.total.cores;
    for (const GroupKind k : kGroupKinds) {
      auto& g = rep.groups[k][group_key(k, r)];
      g.bytes += r.stored_size;
      ++g.cores;
    }
  }
  if (store_dirfd >= 0) rep.filesystem = fs_space(store_dirfd);
  return rep;
}

const char* verify_problem_name(VerifyProblem p) {
  switch (p) {
    case VerifyProblem::Orphan: return "orphan";
    case VerifyProblem::Missing: return "missing";
    case VerifyProblem::NotRegular: return "not_regular";
    case VerifyProblem::SizeMismatch: return "size_mismatch";
    case VerifyProblem::Corrupt: return "corrupt";
    case VerifyProblem::CoreSizeMismatch: return "core_size_mismatch";
    case VerifyProblem::Unreadable: return "unreadable";
  }
  return "unknown";
}

VerifyReport verify(const Index& index, int store_dirfd, bool deep) {
  VerifyReport rep;
  // Rows first, then the directory: the daemon inserts a row before it links the core file, so a
  // file seen below normally has its row here already (the rest is re-checked).
  const std::vector<DumpRecord> rows = index.list();
  std::map<std::string, const DumpRecord*> by_path;
  std::map<std::string, const DumpRecord*> by_id;
  for (const auto& r : rows) {
    by_id[r.id] = &r;
    if (!r.path.empty()) by_path[r.path] = &r;
    if (holds_core(r)) ++rep.cores;
  }
  const auto issue = [&](VerifyProblem p, const std::string& name, const std::string& id,
                         std::string detail) {
    rep.issues.push_back(VerifyIssue{p, name, id, std::move(detail)});
  };

  // A fresh descriptor for readdir: its offset is not shared with the caller's store_dirfd.
  const int list_fd = ::openat(store_dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  std::unique_ptr<DIR, DirCloser> dir(list_fd >= 0 ? ::fdopendir(list_fd) : nullptr);
  if (!dir) {
    const int err = errno;
    if (list_fd >= 0) ::close(list_fd);
    issue(VerifyProblem::Unreadable, ".", "", "cannot list the store directory: " + errno_text(err));
    return rep;
  }
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* d = ::readdir(dir.get())) {
    std::string name = d->d_name;
    if (!is_ignored_name(name)) names.push_back(std::move(name));
    errno = 0;
  }
  if (errno != 0) issue(VerifyProblem::Unreadable, ".", "", "readdir: " + errno_text(errno));
  dir.reset();
  std::sort(names.begin(), names.end());

  std::set<std::string> present;
  for (const auto& name : names) {
    ++rep.files;
    struct stat sb {};
    if (::fstatat(store_dirfd, name.c_str(), &sb, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;  // removed since the listing (a vacuum)
      issue(VerifyProblem::Unreadable, name, "", "stat: " + errno_text(errno));
      continue;
    }
    present.insert(name);
    const DumpRecord* r = nullptr;
    if (const auto it = by_path.find(name); it != by_path.end() && accounts_for(*it->second, name))
      r = it->second;
    std::optional<DumpRecord> fresh;
    if (!r) {
      // Re-read: the dump may have started (row inserted) after the rows were listed.
      const std::string id = id_of_name(name);
      if (!id.empty()) {
        try {
          fresh = index.get(id);
        } catch (const IndexError&) {
          fresh.reset();
        }
      }
      if (fresh && accounts_for(*fresh, name)) {
        r = &*fresh;
      } else {
        std::string why;
        const DumpRecord* row = fresh ? &*fresh : nullptr;
        if (!row && !id.empty()) {
          if (const auto it = by_id.find(id); it != by_id.end()) row = it->second;
        }
        if (!row) {
          why = "no row in the index";
        } else if (const auto v = vacuumed_reason(*row)) {
          why = "row " + row->id + " was vacuumed (" + *v + ") but the file is still here";
        } else {
          why = "row " + row->id + " is " + state_name(row->state) + " and holds no core";
        }
        if (!S_ISREG(sb.st_mode)) why += " (" + file_type_name(sb.st_mode) + ")";
        issue(VerifyProblem::Orphan, name, row ? row->id : "", why);
        continue;
      }
    }
    if (r->state == DumpState::InProgress) continue;  // still being written
    if (!S_ISREG(sb.st_mode)) {
      issue(VerifyProblem::NotRegular, name, r->id,
            file_type_name(sb.st_mode) + " where the core should be (not followed)");
      continue;
    }
    const auto size = static_cast<std::uint64_t>(sb.st_size);
    if (size != r->stored_size) {
      issue(VerifyProblem::SizeMismatch, name, r->id,
            std::to_string(size) + " bytes on disk, the index says " +
                std::to_string(r->stored_size));
      continue;
    }
    if (!deep) continue;
    ++rep.deep_checked;
    const DeepResult d = deep_check(store_dirfd, name, r->compression);
    if (d.problem) {
      issue(*d.problem, name, r->id, d.detail);
      continue;
    }
    std::optional<std::uint64_t> want;
    if (r->state == DumpState::Complete) {
      want = r->core_size;
    } else if (r->extra.is_object()) {
      const auto it = r->extra.find("stored_core_bytes");  // Truncated: the bytes kept
      if (it != r->extra.end() && it->is_number_unsigned()) want = it->get<std::uint64_t>();
    }
    if (want && d.bytes != *want)
      issue(VerifyProblem::CoreSizeMismatch, name, r->id,
            (r->compression == kCompressionNone ? "holds " : "decompresses to ") +
                std::to_string(d.bytes) + " bytes, the index says " + std::to_string(*want));
  }

  for (const auto& r : rows) {
    if (!holds_core(r) || present.count(r.path) != 0) continue;
    // Re-check both: a vacuum may have removed file and path since the rows were read.
    struct stat sb {};
    if (::fstatat(store_dirfd, r.path.c_str(), &sb, AT_SYMLINK_NOFOLLOW) == 0) continue;
    std::optional<DumpRecord> fresh;
    try {
      fresh = index.get(r.id);
    } catch (const IndexError&) {
      fresh = r;
    }
    if (!fresh || !holds_core(*fresh) || fresh->path != r.path) continue;
    issue(VerifyProblem::Missing, r.path, r.id,
          std::string(state_name(r.state)) + " dump's core file is not in the store");
  }
  return rep;
}

}  // namespace coredumpd
