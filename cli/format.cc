#include "cli/format.h"

#include <time.h>

#include <array>
#include <cstdio>
#include <cstring>

#include "cli/dumpctl.h"
#include "store/dump_record.h"
#include "util/text.h"

namespace coredumpd::cli {

namespace {

void append_octal_byte(std::string& out, unsigned char b) {
  out.push_back('\\');
  out.push_back(static_cast<char>('0' + ((b >> 6U) & 7U)));
  out.push_back(static_cast<char>('0' + ((b >> 3U) & 7U)));
  out.push_back(static_cast<char>('0' + (b & 7U)));
}

bool needs_ansi_quoting(std::string_view s) {
  while (!s.empty()) {
    const Utf8Unit u = next_utf8_unit(s);
    if (!u.valid || u.cp < 0x20 || u.cp == 0x7F || is_dangerous_code_point(u.cp)) return true;
    s.remove_prefix(u.size);
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
    const auto [n, cp, valid] = next_utf8_unit(s);
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

std::string lower_hex(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
  return s;
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
