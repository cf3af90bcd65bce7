// Text formatting for dumpctl: shell quoting, times, sizes (escaping hostile bytes is util/text.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/time_spec.h"  // parse_time_spec(), parse_time_option() moved there; callers include this

namespace coredumpd::cli {

/// Quotes one argument so that a POSIX shell word-splits it back to exactly these bytes, and so
/// that the result is safe to print (see escape_for_display() in util/text.h). Plain words
/// ([A-Za-z0-9@%+=:,./_-]+) stay as they are; the empty string becomes `''`; printable text is
/// single-quoted ('it'\''s'); anything holding control characters, invalid UTF-8 or other escaped
/// code points becomes
/// `$'...'` with `\\`, `\'`, `\n`, `\t`, `\r` and three-digit octal `\ooo` escapes per byte.
/// `$'...'` is POSIX.1-2024 and supported by bash, zsh, ksh and busybox sh, but not by dash 0.5.12.
std::string shell_quote(std::string_view arg);

/// shell_quote() of each argument, joined by single spaces.
std::string shell_join(const std::vector<std::string>& args);

/// Formats a UTC time in microseconds since the epoch as local time, coredumpctl style:
/// "Mon 2026-11-30 21:04:05 UTC", or with `with_micros` "Mon 2026-11-30 21:04:05.123456 UTC".
/// The zone comes from TZ / the system (localtime_r).
std::string format_timestamp(std::int64_t timestamp_us, bool with_micros);

/// Formats a byte count for humans with binary prefixes: "512B", "1.5K", "12.0M", "3.0G".
std::string format_size(std::uint64_t bytes);

/// `s` with the ASCII letters A-F lowered (hex ids and hashes are matched in lower case).
std::string lower_hex(std::string s);

/// Describes a pidfd coredump_mask: "0x5 (PIDFD_COREDUMPED|PIDFD_COREDUMP_USER)", unknown bits
/// listed as hex, "0x0" when empty.
std::string describe_coredump_mask(std::uint32_t mask);

}  // namespace coredumpd::cli
