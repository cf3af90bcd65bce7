// Retention limits: what the store may keep (RetentionLimits), and the parsers of the sizes,
// percentages and durations they are written in (configuration and `dumpctl vacuum` options).
//
// Units: every size is in bytes, every duration in seconds.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace coredumpd {

/// The largest size any limit takes, bytes (sizes are kept in SQLite's signed 64-bit integers).
inline constexpr std::uint64_t kMaxSizeBytes = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
/// The longest duration, seconds: durations are compared in microseconds (the index's unit), which
/// must not overflow int64 (about 292000 years).
inline constexpr std::int64_t kMaxDurationSeconds = std::numeric_limits<std::int64_t>::max() / 1'000'000;

/// Limits on what the store keeps. Unset limits do not apply; all unset means vacuum does nothing.
struct RetentionLimits {
  std::optional<std::uint64_t> max_use_bytes;    ///< all stored cores together, bytes
  /// All stored cores together, as a percentage (0 < p < 100) of the filesystem's size, at most
  /// percent_cap_bytes. When both max_use_bytes and max_use_percent are set, the smaller applies.
  std::optional<double> max_use_percent;
  std::optional<std::uint64_t> keep_free_bytes;  ///< free bytes to leave on the store's filesystem
  /// Free space to leave, as a percentage (0 < p < 100) of the filesystem's size. When both
  /// keep_free_bytes and keep_free_percent are set, the larger requirement applies.
  std::optional<double> keep_free_percent;
  /// The most a percentage (max_use_percent, keep_free_percent) comes to, bytes: systemd's 4 GiB
  /// bound on the MaxUse= and KeepFree= it derives from the filesystem's size. Unset: no bound.
  std::optional<std::uint64_t> percent_cap_bytes;
  std::optional<std::chrono::seconds> max_age;        ///< rows older than this are deleted, core and row, seconds
  /// Cores older than this are deleted, seconds; the row stays, marked vacuumed (the history of
  /// crashes outlives the cores, as journal entries outlive systemd-coredump's files).
  std::optional<std::chrono::seconds> max_core_age;
  std::optional<std::uint64_t> max_use_per_uid_bytes; ///< cores of one real uid together, bytes
  /// Cores of dumps whose policy came from rule NAME (DumpRecord::rule) together, bytes. The key
  /// "" is the dumps no rule matched (the defaults policy).
  std::map<std::string, std::uint64_t> max_use_per_rule_bytes;

  /// True if at least one limit is set.
  bool any() const;
};

/// The daemon's limits when its configuration sets none, those of systemd-coredump (`dumpctl
/// vacuum` applies only what it is given): max_use 10% and keep_free 15% of the filesystem, each at
/// most 4 GiB (src/coredump/coredump-vacuum.c: DEFAULT_MAX_USE_UPPER, DEFAULT_KEEP_FREE_UPPER), and
/// max_core_age 3 days (tmpfiles.d/systemd.conf: "d /var/lib/systemd/coredump 0755 root root 3d",
/// which removes the files and leaves the journal entries: records stay, no max_age).
RetentionLimits default_retention();

/// max_use and keep_free in bytes on a filesystem of `fs_total_bytes` (std::nullopt: its size is
/// unknown, and percentages then do not apply). A percentage is rounded up and bounded by
/// percent_cap_bytes; max_use is the smaller of its forms, keep_free the larger. std::nullopt: no limit.
struct SpaceLimits {
  std::optional<std::uint64_t> max_use_bytes, keep_free_bytes;
};
SpaceLimits resolve_space_limits(const RetentionLimits& limits, std::optional<std::uint64_t> fs_total_bytes);

/// Parses a size: a non-negative integer number of bytes, or a string "<number>[unit]" where the
/// number may have a fraction ("1.5G") and unit is one of B, K, M, G, T, P, E (powers of 1024),
/// optionally followed by "B" or "iB" ("2G", "2GB", "2GiB" are all 2×1024³), case-insensitive,
/// with optional spaces between number and unit. std::nullopt if malformed or above kMaxSizeBytes.
std::optional<std::uint64_t> parse_size(std::string_view text);

/// Parses a percentage "<number>%" (e.g. "10%", "12.5%") into the number; std::nullopt if
/// malformed or not strictly between 0 and 100.
std::optional<double> parse_percent(std::string_view text);

/// Parses a duration in seconds: digits alone are seconds; otherwise one or more
/// "<integer><unit>" parts, optionally separated by spaces ("7d", "12h", "1d 12h", "90min"), with
/// units s/sec/second(s), m/min/minute(s), h/hour(s), d/day(s), w/week(s). std::nullopt if
/// malformed, zero, or above kMaxDurationSeconds.
std::optional<std::chrono::seconds> parse_duration(std::string_view text);

}  // namespace coredumpd
