#include "util/text.h"

#include <cstdio>

namespace coredumpd {

namespace {

constexpr char kHex[] = "0123456789abcdef";

bool is_continuation(unsigned char c) { return (c & 0xC0U) == 0x80U; }

void append_hex_byte(std::string& out, unsigned char b) {
  out += "\\x";
  out.push_back(kHex[b >> 4U]);
  out.push_back(kHex[b & 0xFU]);
}

void append_u_escape(std::string& out, char32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
  out += buf;
}

/// Copies `s` unit by unit into a new string; `escape(out, unit)` appends a replacement and
/// returns true, or returns false to keep the unit's bytes.
template <typename Escape>
std::string rewrite_units(std::string_view s, Escape escape) {
  std::string out;
  out.reserve(s.size());
  while (!s.empty()) {
    const Utf8Unit u = next_utf8_unit(s);
    if (!escape(out, u)) out.append(s.substr(0, u.size));
    s.remove_prefix(u.size);
  }
  return out;
}

}  // namespace

std::string_view trim_blanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (const char c : s)
    if (!is_digit(c)) return false;
  return true;
}

std::size_t decode_utf8(std::string_view s, char32_t& cp) {
  if (s.empty()) return 0;
  const auto b0 = static_cast<unsigned char>(s[0]);
  if (b0 < 0x80U) {
    cp = b0;
    return 1;
  }
  std::size_t len = 0;
  // Bounds of the second byte (RFC 3629 table): they exclude overlong forms (E0, F0),
  // surrogates (ED) and code points above U+10FFFF (F4).
  unsigned char lo = 0x80U, hi = 0xBFU;
  char32_t value = 0;
  if (b0 >= 0xC2U && b0 <= 0xDFU) {
    len = 2;
    value = b0 & 0x1FU;
  } else if (b0 >= 0xE0U && b0 <= 0xEFU) {
    len = 3;
    value = b0 & 0x0FU;
    if (b0 == 0xE0U) lo = 0xA0U;
    if (b0 == 0xEDU) hi = 0x9FU;
  } else if (b0 >= 0xF0U && b0 <= 0xF4U) {
    len = 4;
    value = b0 & 0x07U;
    if (b0 == 0xF0U) lo = 0x90U;
    if (b0 == 0xF4U) hi = 0x8FU;
  } else {
    return 0;  // continuation byte, C0/C1 (always overlong) or F5..FF
  }
  if (s.size() < len) return 0;
  const auto b1 = static_cast<unsigned char>(s[1]);
  if (b1 < lo || b1 > hi) return 0;
  value = (value << 6) | (b1 & 0x3FU);
  for (std::size_t i = 2; i < len; ++i) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (!is_continuation(b)) return 0;
    value = (value << 6) | (b & 0x3FU);
  }
  cp = value;
  return len;
}

bool is_valid_utf8(std::string_view s) {
  while (!s.empty()) {
    char32_t cp = 0;
    const std::size_t n = decode_utf8(s, cp);
    if (n == 0) return false;
    s.remove_prefix(n);
  }
  return true;
}

Utf8Unit next_utf8_unit(std::string_view s) {
  Utf8Unit u;
  const std::size_t n = decode_utf8(s, u.cp);
  u.valid = n != 0;
  if (!u.valid) u.cp = static_cast<unsigned char>(s[0]);
  u.size = u.valid ? n : 1;
  return u;
}

std::string replace_invalid_utf8(std::string_view s) {
  if (is_valid_utf8(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 16);
  while (!s.empty()) {
    const Utf8Unit u = next_utf8_unit(s);
    out.append(u.valid ? s.substr(0, u.size) : std::string_view("\xEF\xBF\xBD"));
    s.remove_prefix(u.size);
  }
  return out;
}

bool is_dangerous_code_point(char32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

std::string escape_for_display(std::string_view bytes) {
  return rewrite_units(bytes, [](std::string& out, const Utf8Unit& u) {
    if (!u.valid || (u.cp < 0x20 && u.cp != '\n' && u.cp != '\t' && u.cp != '\r') || u.cp == 0x7F) {
      append_hex_byte(out, static_cast<unsigned char>(u.cp));
    } else if (u.cp == '\\') {
      out += "\\\\";
    } else if (u.cp == '\n') {
      out += "\\n";
    } else if (u.cp == '\t') {
      out += "\\t";
    } else if (u.cp == '\r') {
      out += "\\r";
    } else if (is_dangerous_code_point(u.cp)) {
      append_u_escape(out, u.cp);
    } else {
      return false;
    }
    return true;
  });
}

std::string sanitize_json_text(std::string_view json) {
  return rewrite_units(json, [](std::string& out, const Utf8Unit& u) {
    if (!u.valid) {
      out += "\\ufffd";
    } else if (is_dangerous_code_point(u.cp) || (u.cp < 0x20 && u.cp != '\n') || u.cp == 0x7F) {
      append_u_escape(out, u.cp);
    } else {
      return false;
    }
    return true;
  });
}

std::size_t display_width(std::string_view s) {
  std::size_t width = 0;
  for (const char c : s) {
    if (!is_continuation(static_cast<unsigned char>(c))) ++width;
  }
  return width;
}

}  // namespace coredumpd
