#include "cli/format.h"

#include <time.h>

#include <array>
#include <cstdio>
#include <cstring>

#include "store/dump_record.h"

namespace coredumpd::cli {

namespace {

constexpr char kHex[] = "0123456789abcdef";

void append_hex_byte(std::string& out, unsigned char b) {
  out += "\\x";
  out.push_back(kHex[b >> 4U]);
  out.push_back(kHex[b & 0xFU]);
}

void append_octal_byte(std::string& out, unsigned char b) {
  out.push_back('\\');
  out.push_back(static_cast<char>('0' + ((b >> 6U) & 7U)));
  out.push_back(static_cast<char>('0' + ((b >> 3U) & 7U)));
  out.push_back(static_cast<char>('0' + (b & 7U)));
}

/// Code points above U+007F that must not reach a terminal raw: C1 controls (may start escape
/// sequences), line/paragraph separators and bidi embedding/override/isolate controls.
bool is_dangerous_code_point(char32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

/// Splits `s` into its next unit: a valid non-ASCII code point, an ASCII byte or one invalid byte.
/// Returns the unit's length (>= 1); `valid` says whether it is a valid UTF-8 sequence.
std::size_t next_unit(std::string_view s, char32_t& cp, bool& valid) {
  const std::size_t n = decode_utf8(s, cp);
  valid = n != 0;
  if (!valid) cp = static_cast<unsigned char>(s[0]);
  return valid ? n : 1;
}

bool needs_ansi_quoting(std::string_view s) {
  while (!s.empty()) {
    char32_t cp = 0;
    bool valid = false;
    const std::size_t n = next_unit(s, cp, valid);
    if (!valid || cp < 0x20 || cp == 0x7F || is_dangerous_code_point(cp)) return true;
    s.remove_prefix(n);
  }
  return false;
}

bool is_plain_word(std::string_view s) {
  if (s.empty()) return false;
  for (const char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    std::strchr("@%+=:,./_-", c) != nullptr;
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::string escape_for_display(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  while (!bytes.empty()) {
    char32_t cp = 0;
    bool valid = false;
    const std::size_t n = next_unit(bytes, cp, valid);
    if (!valid) {
      append_hex_byte(out, static_cast<unsigned char>(bytes[0]));
    } else if (cp == '\\') {
      out += "\\\\";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp < 0x20 || cp == 0x7F) {
      append_hex_byte(out, static_cast<unsigned char>(cp));
    } else if (is_dangerous_code_point(cp)) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
      out += buf;
    } else {
      out.append(bytes.substr(0, n));
    }
    bytes.remove_prefix(n);
  }
  return out;
}

std::string sanitize_json_text(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  while (!json.empty()) {
    char32_t cp = 0;
    bool valid = false;
    const std::size_t n = next_unit(json, cp, valid);
    if (!valid) {
      out += "\\ufffd";
    } else if (is_dangerous_code_point(cp) || (cp < 0x20 && cp != '\n') || cp == 0x7F) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
      out += buf;
    } else {
      out.append(json.substr(0, n));
    }
    json.remove_prefix(n);
  }
  return out;
}

std::size_t display_width(std::string_view s) {
  std::size_t width = 0;
  for (const char c : s) {
    if ((static_cast<unsigned char>(c) & 0xC0U) != 0x80U) ++width;
  }
  return width;
}

std::string shell_quote(std::string_view arg) {
  if (arg.empty()) return "''";
  if (is_plain_word(arg)) return std::string(arg);
  if (!needs_ansi_quoting(arg)) {
    std::string out = "'";
    for (const char c : arg) {
      if (c == '\'') {
        out += "'\\''";
      } else {
        out.push_back(c);
      }
    }
    out.push_back('\'');
    return out;
  }
  std::string out = "$'";
  std::string_view s = arg;
  while (!s.empty()) {
    char32_t cp = 0;
    bool valid = false;
    const std::size_t n = next_unit(s, cp, valid);
    if (!valid || cp < 0x20 || cp == 0x7F || is_dangerous_code_point(cp)) {
      if (valid && cp == '\n') {
        out += "\\n";
      } else if (valid && cp == '\t') {
        out += "\\t";
      } else if (valid && cp == '\r') {
        out += "\\r";
      } else {
        for (std::size_t i = 0; i < n; ++i)
          append_octal_byte(out, static_cast<unsigned char>(s[i]));
      }
    } else if (cp == '\\') {
      out += "\\\\";
    } else if (cp == '\'') {
      out += "\\'";
    } else {
      out.append(s.substr(0, n));
    }
    s.remove_prefix(n);
  }
  out.push_back('\'');
  return out;
}

std::string shell_join(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& a : args) {
    if (!out.empty()) out.push_back(' ');
    out += shell_quote(a);
  }
  return out;
}

std::string format_timestamp(std::int64_t timestamp_us, bool with_micros) {
  std::int64_t secs = timestamp_us / 1000000;
  std::int64_t micros = timestamp_us % 1000000;
  if (micros < 0) {  // floor division for times before the epoch
    micros += 1000000;
    --secs;
  }
  const auto t = static_cast<time_t>(secs);
  struct tm tm {};
  if (localtime_r(&t, &tm) == nullptr) return "@" + std::to_string(secs);
  char date[64];
  char zone[64];
  if (std::strftime(date, sizeof date, "%a %Y-%m-%d %H:%M:%S", &tm) == 0) date[0] = '\0';
  if (std::strftime(zone, sizeof zone, "%Z", &tm) == 0) zone[0] = '\0';
  std::string out = date;
  if (with_micros) {
    char frac[16];
    std::snprintf(frac, sizeof frac, ".%06lld", static_cast<long long>(micros));
    out += frac;
  }
  if (zone[0] != '\0') {
    out.push_back(' ');
    out += zone;
  }
  return out;
}

std::string format_size(std::uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + "B";
  static constexpr std::array<char, 6> kUnits{'K', 'M', 'G', 'T', 'P', 'E'};
  auto value = static_cast<double>(bytes) / 1024.0;
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < kUnits.size()) {
    value /= 1024.0;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%c", value, kUnits[unit]);
  return buf;
}

std::optional<std::int64_t> parse_time_spec(const std::string& spec) {
  constexpr std::int64_t kMicros = 1000000;
  if (spec == "now") {
    struct timespec ts {};
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * kMicros + ts.tv_nsec / 1000;
  }
  if (!spec.empty() && spec[0] == '@') {
    std::size_t used = 0;
    try {
      const long long secs = std::stoll(spec.substr(1), &used, 10);
      if (used != spec.size() - 1 || secs > INT64_MAX / kMicros || secs < INT64_MIN / kMicros) {
        return std::nullopt;
      }
      return static_cast<std::int64_t>(secs) * kMicros;
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  struct tm tm {};
  tm.tm_isdst = -1;
  if (spec == "today" || spec == "yesterday") {
    const time_t now = time(nullptr);
    if (localtime_r(&now, &tm) == nullptr) return std::nullopt;
    tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
    if (spec == "yesterday") --tm.tm_mday;  // mktime normalises
    tm.tm_isdst = -1;
  } else {
    static constexpr std::array<const char*, 5> kFormats{
        "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M", "%Y-%m-%d"};
    bool parsed = false;
    for (const char* fmt : kFormats) {
      tm = {};
      tm.tm_isdst = -1;
      const char* end = strptime(spec.c_str(), fmt, &tm);
      if (end != nullptr && *end == '\0') {
        parsed = true;
        break;
      }
    }
    if (!parsed) return std::nullopt;
    tm.tm_isdst = -1;
  }
  const time_t t = mktime(&tm);
  if (t == static_cast<time_t>(-1)) return std::nullopt;
  return static_cast<std::int64_t>(t) * kMicros;
}

std::string describe_coredump_mask(std::uint32_t mask) {
  struct Bit {
    std::uint32_t bit;
    const char* name;
  };
  static constexpr std::array<Bit, 4> kBits{{{0x1, "PIDFD_COREDUMPED"},
                                             {0x2, "PIDFD_COREDUMP_SKIP"},
                                             {0x4, "PIDFD_COREDUMP_USER"},
                                             {0x8, "PIDFD_COREDUMP_ROOT"}}};
  char hex[16];
  std::snprintf(hex, sizeof hex, "0x%x", static_cast<unsigned>(mask));
  if (mask == 0) return hex;
  std::string names;
  std::uint32_t rest = mask;
  for (const auto& b : kBits) {
    if ((mask & b.bit) == 0) continue;
    if (!names.empty()) names.push_back('|');
    names += b.name;
    rest &= ~b.bit;
  }
  if (rest != 0) {
    char unknown[16];
    std::snprintf(unknown, sizeof unknown, "0x%x", static_cast<unsigned>(rest));
    if (!names.empty()) names.push_back('|');
    names += unknown;
  }
  return std::string(hex) + " (" + names + ")";
}

}  // namespace coredumpd::cli
