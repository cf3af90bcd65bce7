#include "store/retention_limits.h"

#include <algorithm>
#include <cmath>

#include "util/text.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace coredumpd {

namespace {

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

}  // namespace

bool RetentionLimits::any() const {
  return max_use_bytes || max_use_percent || keep_free_bytes || keep_free_percent || max_age || max_core_age ||
         max_use_per_uid_bytes || !max_use_per_rule_bytes.empty();
}

RetentionLimits default_retention() {
  RetentionLimits l;
  l.max_use_percent = 10.0;
  l.keep_free_percent = 15.0;
  l.percent_cap_bytes = std::uint64_t{4} << 30;
  l.max_core_age = std::chrono::hours(24 * 3);
  return l;
}

SpaceLimits resolve_space_limits(const RetentionLimits& l, std::optional<std::uint64_t> fs_total_bytes) {
  const auto share = [&](std::optional<double> percent) -> std::optional<std::uint64_t> {
    if (!percent || !fs_total_bytes) return std::nullopt;
    const auto bytes = static_cast<std::uint64_t>(std::ceil(static_cast<double>(*fs_total_bytes) * *percent / 100.0));
    return l.percent_cap_bytes ? std::min(bytes, *l.percent_cap_bytes) : bytes;
  };
  SpaceLimits s;
  s.max_use_bytes = l.max_use_bytes;
  if (const auto p = share(l.max_use_percent)) s.max_use_bytes = std::min(*p, l.max_use_bytes.value_or(UINT64_MAX));
  s.keep_free_bytes = l.keep_free_bytes;
  if (const auto p = share(l.keep_free_percent)) s.keep_free_bytes = std::max(*p, l.keep_free_bytes.value_or(0));
  return s;
}

std::optional<std::uint64_t> parse_size(std::string_view text) {
  std::string_view s = trim_blanks(text);
  auto num = take_decimal(s);
  if (!num) return std::nullopt;
  const std::string unit = lower_string(trim_blanks(s));
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
  if (num->whole > kMaxSizeBytes / mult) return std::nullopt;
  std::uint64_t bytes = num->whole * mult;
  if (num->frac != 0) {
    // frac/frac_scale < 1, so this adds less than `mult`; long double holds 64-bit integers exactly.
    const long double part = static_cast<long double>(num->frac) /
                             static_cast<long double>(num->frac_scale) *
                             static_cast<long double>(mult);
    const auto add = static_cast<std::uint64_t>(part);
    if (bytes > kMaxSizeBytes - add) return std::nullopt;
    bytes += add;
  }
  return bytes;
}

std::optional<double> parse_percent(std::string_view text) {
  std::string_view s = trim_blanks(text);
  if (s.empty() || s.back() != '%') return std::nullopt;
  s.remove_suffix(1);
  s = trim_blanks(s);
  auto num = take_decimal(s);
  if (!num || !s.empty() || num->whole >= 100) return std::nullopt;
  const double p = static_cast<double>(num->whole) +
                   static_cast<double>(num->frac) / static_cast<double>(num->frac_scale);
  if (!(p > 0.0 && p < 100.0)) return std::nullopt;
  return p;
}

std::optional<std::chrono::seconds> parse_duration(std::string_view text) {
  std::string_view s = trim_blanks(text);
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
    s = trim_blanks(s);
    std::size_t j = 0;
    while (j < s.size() && ((s[j] >= 'a' && s[j] <= 'z') || (s[j] >= 'A' && s[j] <= 'Z'))) ++j;
    const std::string unit = lower_string(s.substr(0, j));
    s.remove_prefix(j);
    s = trim_blanks(s);
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

}  // namespace coredumpd
