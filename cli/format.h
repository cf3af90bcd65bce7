// Text formatting for dumpctl: making hostile bytes safe to print, shell quoting, times, sizes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace coredumpd::cli {

/// Makes untrusted bytes safe to print on one terminal line. Valid, printable UTF-8 is kept; the
/// rest is escaped with backslash sequences: `\\` for a backslash, `\n`, `\t`, `\r`, `\xHH` for
/// other C0 controls, DEL and each byte that is not part of valid UTF-8, and `\uHHHH` for C1
/// controls (U+0080..U+009F) and the line/paragraph separators and bidirectional overrides
/// (U+2028, U+2029, U+202A..U+202E, U+2066..U+2069). The result is valid UTF-8 without any control
/// character, so it can never end a line or send a terminal escape sequence.
std::string escape_for_display(std::string_view bytes);

/// Makes JSON text (as produced by nlohmann::json::dump, so valid UTF-8) safe to print while
/// keeping it valid JSON: the code points escape_for_display() would escape as \uHHHH can only
/// occur inside JSON strings (dump() escapes C0 controls itself), so they are replaced by the
/// equivalent JSON \uHHHH escape; everything else, including the newlines of pretty-printing, is
/// kept. Any invalid UTF-8 byte is replaced by \ufffd.
std::string sanitize_json_text(std::string_view json);

/// Number of terminal columns `s` occupies, counting one per code point. `s` must be valid UTF-8
/// (as returned by escape_for_display()); wide (East Asian) characters are counted as one.
std::size_t display_width(std::string_view s);

/// Quotes one argument so that a POSIX shell word-splits it back to exactly these bytes, and so
/// that the result is safe to print (see escape_for_display()). Plain words
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

/// Parses a --since/--until value into UTC microseconds since the epoch. Accepts "now", "today",
/// "yesterday" (local midnight), "@SECONDS" (Unix time), "YYYY-MM-DD", "YYYY-MM-DD HH:MM" and
/// "YYYY-MM-DD HH:MM:SS" (a 'T' may replace the space) in local time. std::nullopt if malformed.
std::optional<std::int64_t> parse_time_spec(const std::string& spec);

/// Describes a pidfd coredump_mask: "0x5 (PIDFD_COREDUMPED|PIDFD_COREDUMP_USER)", unknown bits
/// listed as hex, "0x0" when empty.
std::string describe_coredump_mask(std::uint32_t mask);

}  // namespace coredumpd::cli
