// systemd's time syntax for dumpctl's -S/--since and -U/--until (systemd.time(7), parse_timestamp()
// in systemd 252's src/basic/time-util.c), and coredumpctl's relative ages ("19s ago").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace coredumpd::cli {

/// The latest time systemd formats or parses: 9999-12-30 23:59:59 UTC, in µs since the epoch
/// (USEC_TIMESTAMP_FORMATTABLE_MAX; one day short of year 10000 so that every zone can show it).
inline constexpr std::int64_t kTimestampMaxUs = 253'402'214'399'000'000;

/// systemd's parse_sec(): a time span such as "5", "1.5h", "2 days 3h", "1h30min", "100ms"
/// (units: us/usec/µs, ms/msec, s/sec/second(s), m/min/minute(s), h/hr/hour(s), d/day(s),
/// w/week(s), M/month(s) = 30.44 days, y/year(s) = 365.25 days; no unit means seconds). Returns µs,
/// or std::nullopt when malformed, negative, "infinity" or beyond kTimestampMaxUs.
std::optional<std::int64_t> parse_timespan(std::string_view span);

/// Parses a --since/--until value into UTC µs since the epoch, as systemd 252's parse_timestamp()
/// does, with `now_us` as the current time. Accepted (systemd.time(7)):
///   "now"; "+SPAN", "-SPAN", "SPAN ago", "SPAN left" (parse_timespan());
///   "@SECONDS[.FRACTION]" (seconds since the epoch; parse_timespan() units allowed, as systemd);
///   "today", "yesterday", "tomorrow" (local midnight);
///   "[WEEKDAY ]YYYY-MM-DD[ HH:MM[:SS[.FRACTION]]]" (also a two-digit year "YY-MM-DD"),
///   "[WEEKDAY ]HH:MM[:SS[.FRACTION]]" (today), "Mon DD HH:MM:SS[.FRACTION]" (this year);
///   a weekday ("Mon"/"Monday", any case) must match the date;
/// each absolute form in local time ($TZ), or followed by a zone: " UTC" (any case), the local zone's
/// abbreviation (" EST"/" EDT" fixes daylight saving time as systemd does), or a zone name from
/// /usr/share/zoneinfo (" Europe/Berlin", as systemd.time(7) documents; 252.39's own parser
/// rejects these, a bug fixed in later systemd). Extensions beyond systemd 252, for ISO 8601 habits:
/// 'T' between date and time, and after a time of day an offset "Z", "+HH", "+HH:MM" or "-HHMM"
/// (with or without a space before it). Fractions keep 6 digits, rounded. Times before the epoch or
/// after kTimestampMaxUs are errors. std::nullopt when malformed. Sets $TZ briefly to evaluate a
/// zone (restored before it returns): not for use while other threads read the time zone.
std::optional<std::int64_t> parse_time_spec(const std::string& spec, std::int64_t now_us);

/// parse_time_spec() at the current time (CLOCK_REALTIME).
std::optional<std::int64_t> parse_time_spec(const std::string& spec);

/// parse_time_spec() of an option's value; throws DumpctlError naming `option` ("--since") and the
/// accepted forms when it is malformed.
std::int64_t parse_time_option(const std::string& spec, const char* option);

/// How long ago (or ahead) `then_us` is from `now_us`, as systemd 252's format_timestamp_relative():
/// "now", "500us ago", "19ms ago", "19s ago", "3min 2s ago" (under 5 min), "12min ago", "1h 5min ago"
/// (under 6 h), "7h ago", "1 day 2h ago" (25 h to 2 days), "3 days ago", "2 weeks 1 day ago",
/// "3 months 2 days ago", "1 year 1 month ago"; "left" instead of "ago" for the future.
std::string format_relative(std::int64_t then_us, std::int64_t now_us);

/// The accepted TIME forms in one line for --help of -S/--since and -U/--until.
inline constexpr const char* kTimeSpecHelp =
    "TIME in systemd.time(7) syntax: \"2025-11-30 21:04[:05[.5]]\" or \"21:04\" in local time, optionally "
    "after a weekday and followed by UTC, a zone (Europe/Berlin) or an offset (+01:00, Z); \"-1h\", \"+3d\", "
    "\"2 days 3h ago\"; @SECONDS[.FRACTION]; now, today, yesterday, tomorrow";

/// The microseconds since the epoch now (CLOCK_REALTIME).
std::int64_t realtime_now_us();

}  // namespace coredumpd::cli
