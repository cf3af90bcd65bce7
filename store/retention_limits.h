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
  std::optional<std::uint64_t> keep_free_bytes;  ///< free bytes to leave on the store's filesystem
  /// Free space to leave, as a percentage (0 < p < 100) of the filesystem's size. When both
  /// keep_free_bytes and keep_free_percent are set, the larger requirement applies.
  std::optional<double> keep_free_percent;
  std::optional<std::chrono::seconds> max_age;        ///< rows older than this are deleted, seconds
  std::optional<std::uint64_t> max_use_per_uid_bytes; ///< cores of one real uid together, bytes
  /// Cores of dumps whose policy came from rule NAME (DumpRecord::rule) together, bytes. The key
  /// "" is the dumps no rule matched (the defaults policy).
  std::map<std::string, std::uint64_t> max_use_per_rule_bytes;

  /// True if at least one limit is set.
  bool any() const;
};

/// The free bytes `limits` want left on a filesystem of `fs_total_bytes` bytes: the larger of
/// keep_free_bytes and keep_free_percent of the size (rounded up); 0 when neither is set.
std::uint64_t keep_free_target(const RetentionLimits& limits, std::uint64_t fs_total_bytes);

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
