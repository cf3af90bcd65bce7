// Text from untrusted sources: character classes, UTF-8 validation, and escaping for a terminal or
// a log line. One implementation for the store, dumpctl and the daemon's log.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace coredumpd {

/// '0'..'9'.
constexpr bool is_digit(char c) { return c >= '0' && c <= '9'; }
/// '0'..'9', 'a'..'f' (the hex of ids, build-ids and container ids).
constexpr bool is_lower_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f'); }
/// '0'..'9', 'a'..'f', 'A'..'F'.
constexpr bool is_hex_digit(char c) { return is_lower_hex(c) || (c >= 'A' && c <= 'F'); }
/// True if `s` is non-empty and holds only '0'..'9' (no sign, no blanks).
bool all_digits(std::string_view s);
/// `s` without its leading and trailing blanks (spaces and tabs).
std::string_view trim_blanks(std::string_view s);

/// Decodes the UTF-8 sequence at the start of `s` (RFC 3629: no overlong forms, no surrogates
/// U+D800..U+DFFF, nothing above U+10FFFF). Returns its length in bytes (1..4) and stores the code
/// point in `cp`; returns 0 (cp untouched) if `s` is empty or does not start with a valid sequence.
std::size_t decode_utf8(std::string_view s, char32_t& cp);

/// True if every byte of `s` belongs to a valid UTF-8 sequence (see decode_utf8()). NUL is valid.
bool is_valid_utf8(std::string_view s);

/// `s` with each byte that is not part of valid UTF-8 (see next_utf8_unit()) replaced by U+FFFD;
/// valid text unchanged. For a store that takes only UTF-8 (a PostgreSQL UTF8 database).
std::string replace_invalid_utf8(std::string_view s);

/// One unit of a byte string as the escapers walk it: a valid UTF-8 sequence, or one byte that is
/// not part of one.
struct Utf8Unit {
  std::size_t size = 1;  ///< bytes in the unit (>= 1)
  char32_t cp = 0;       ///< the code point; for an invalid byte, the byte's value
  bool valid = false;    ///< whether the unit is a valid UTF-8 sequence
};

/// The unit at the start of `s`, which must not be empty.
Utf8Unit next_utf8_unit(std::string_view s);

/// Code points above U+007F that must not reach a terminal raw: C1 controls (may start escape
/// sequences), line/paragraph separators and bidi embedding/override/isolate controls
/// (U+0080..U+009F, U+2028, U+2029, U+202A..U+202E, U+2066..U+2069).
bool is_dangerous_code_point(char32_t cp);

/// Makes untrusted bytes safe to print on one terminal line or log line. Valid, printable UTF-8 is
/// kept; the rest is escaped with backslash sequences: `\\` for a backslash, `\n`, `\t`, `\r`,
/// `\xHH` for other C0 controls, DEL and each byte that is not part of valid UTF-8, and `\uHHHH`
/// for the is_dangerous_code_point() ones. The result is valid UTF-8 without any control character,
/// so it can never end a line, send a terminal escape sequence or reorder the text around it.
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

}  // namespace coredumpd
