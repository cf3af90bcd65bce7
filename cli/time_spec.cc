// systemd 252's parse_timestamp(), parse_sec() and format_timestamp_relative() semantics for
// dumpctl (src/basic/time-util.c); the calendar is the C library's (strptime, mktime, $TZ).
#include "cli/time_spec.h"

#include <fcntl.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cli/dumpctl.h"
#include "util/text.h"

namespace coredumpd::cli {

namespace {

constexpr std::int64_t kSec = 1'000'000;
constexpr std::int64_t kMinute = 60 * kSec;
constexpr std::int64_t kHour = 60 * kMinute;
constexpr std::int64_t kDay = 24 * kHour;
constexpr std::int64_t kWeek = 7 * kDay;
constexpr std::int64_t kMonth = 2'629'800 * kSec;  // systemd's USEC_PER_MONTH: 30.44 days
constexpr std::int64_t kYear = 31'557'600 * kSec;  // systemd's USEC_PER_YEAR: 365.25 days

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

bool ends_with_no_case(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         strncasecmp(s.data() + s.size() - suffix.size(), suffix.data(), suffix.size()) == 0;
}

/// systemd's unit table (extract_multiplier()); order matters: longest match of a prefix first.
std::int64_t take_unit(std::string_view& p) {
  struct Unit {
    std::string_view suffix;
    std::int64_t us;
  };
  static constexpr std::array<Unit, 30> kUnits{{
      {"seconds", kSec}, {"second", kSec},   {"sec", kSec},        {"s", kSec},         {"minutes", kMinute},
      {"minute", kMinute}, {"min", kMinute}, {"months", kMonth},   {"month", kMonth},   {"M", kMonth},
      {"msec", 1000},    {"ms", 1000},       {"m", kMinute},       {"hours", kHour},    {"hour", kHour},
      {"hr", kHour},     {"h", kHour},       {"days", kDay},       {"day", kDay},       {"d", kDay},
      {"weeks", kWeek},  {"week", kWeek},    {"w", kWeek},         {"years", kYear},    {"year", kYear},
      {"y", kYear},      {"usec", 1},        {"us", 1},            {"\xC2\xB5s", 1},    {"", kSec},
  }};
  for (const auto& u : kUnits) {
    if (p.substr(0, u.suffix.size()) == u.suffix) {
      p.remove_prefix(u.suffix.size());
      return u.us;
    }
  }
  return kSec;  // not reached: "" matches
}

/// `digits` fraction digits as systemd's parse_fractional_part_u(): pad or cut to `digits`, round
/// on the next digit, skip the rest. Needs at least one digit.
std::optional<std::int64_t> take_fraction(std::string_view& p, int digits) {
  if (p.empty() || !is_digit(p[0])) return std::nullopt;
  std::int64_t v = 0;
  for (int i = 0; i < digits; ++i) {
    v *= 10;
    if (!p.empty() && is_digit(p[0])) {
      v += p[0] - '0';
      p.remove_prefix(1);
    }
  }
  if (!p.empty() && p[0] >= '5' && p[0] <= '9') ++v;
  while (!p.empty() && is_digit(p[0])) p.remove_prefix(1);
  return v;
}

/// The local time zone set to `tz` until destruction ($TZ and tzset()).
class ScopedTimeZone {
 public:
  explicit ScopedTimeZone(const std::string& tz) {
    if (const char* old = std::getenv("TZ")) old_ = old;
    setenv("TZ", tz.c_str(), 1);
    tzset();
  }
  ~ScopedTimeZone() {
    if (old_) {
      setenv("TZ", old_->c_str(), 1);
    } else {
      unsetenv("TZ");
    }
    tzset();
  }
  ScopedTimeZone(const ScopedTimeZone&) = delete;
  ScopedTimeZone& operator=(const ScopedTimeZone&) = delete;

 private:
  std::optional<std::string> old_;
};

/// systemd's verify_timezone(): a name of [A-Za-z0-9_+-/] words under /usr/share/zoneinfo whose
/// file is a regular file starting with the tzfile(5) magic "TZif".
bool is_zone_name(std::string_view name) {
  if (name.empty() || name.size() >= 256 || name[0] == '/' || name.back() == '/') return false;
  char prev = '\0';
  for (const char c : name) {
    const bool ok = is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || std::strchr("-_+/", c);
    if (!ok || (c == '/' && prev == '/')) return false;
    prev = c;
  }
  if (name.find("..") != std::string_view::npos) return false;
  const std::string path = "/usr/share/zoneinfo/" + std::string(name);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st {};
  char magic[4] = {};
  const bool valid = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && read(fd, magic, 4) == 4 &&
                     std::memcmp(magic, "TZif", 4) == 0;
  close(fd);
  return valid;
}

/// An ISO 8601 offset at the end of `s` after a time of day: "Z", "+HH", "+HHMM", "+HH:MM" (or '-'),
/// optionally after a space. Returns the POSIX TZ string for it and strips it from `s`.
std::optional<std::string> take_offset(std::string_view& s) {
  std::string_view rest = s;
  std::string tz;
  if (!rest.empty() && (rest.back() == 'Z' || rest.back() == 'z')) {
    rest.remove_suffix(1);
    tz = "UTC0";
  } else {
    std::size_t n = 0;  // digits and ':' of the offset
    while (n < rest.size() && n < 5 && (is_digit(rest[rest.size() - 1 - n]) || rest[rest.size() - 1 - n] == ':')) ++n;
    if (n >= rest.size()) return std::nullopt;
    const char sign = rest[rest.size() - 1 - n];
    if (sign != '+' && sign != '-') return std::nullopt;
    const std::string_view digits = rest.substr(rest.size() - n);
    int hh = 0;
    int mm = 0;
    if (digits.size() == 2 && is_digit(digits[0]) && is_digit(digits[1])) {
      hh = (digits[0] - '0') * 10 + (digits[1] - '0');
    } else if ((digits.size() == 4 || (digits.size() == 5 && digits[2] == ':')) && is_digit(digits[0]) &&
               is_digit(digits[1]) && is_digit(digits[digits.size() - 2]) && is_digit(digits.back())) {
      if (digits.size() == 5 && digits.find(':', 3) != std::string_view::npos) return std::nullopt;
      if (digits.size() == 4 && digits.find(':') != std::string_view::npos) return std::nullopt;
      hh = (digits[0] - '0') * 10 + (digits[1] - '0');
      mm = (digits[digits.size() - 2] - '0') * 10 + (digits.back() - '0');
    } else {
      return std::nullopt;
    }
    if (hh > 23 || mm > 59) return std::nullopt;
    rest.remove_suffix(n + 1);
    // POSIX TZ counts west as positive: UTC+05:30 is "<+0530>-05:30".
    char buf[32];
    std::snprintf(buf, sizeof buf, "<%c%02d%02d>%c%02d:%02d", sign, hh, mm, sign == '+' ? '-' : '+', hh, mm);
    tz = buf;
  }
  if (!rest.empty() && rest.back() == ' ') rest.remove_suffix(1);
  // Only after a time of day: "2025-01-01" must not read as the offset "-01".
  if (rest.empty() || !is_digit(rest.back()) || rest.find(':') == std::string_view::npos) return std::nullopt;
  s = rest;
  return tz;
}

/// The absolute forms in the current local zone (systemd's parse_timestamp_impl() after the
/// relative forms); `dst` is -1, or 0/1 when a local zone abbreviation fixed it.
std::optional<std::int64_t> parse_absolute(std::string_view t, std::int64_t now_us, int dst) {
  const time_t now = static_cast<time_t>(now_us / kSec);
  struct tm tm {};
  if (localtime_r(&now, &tm) == nullptr) return std::nullopt;
  tm.tm_isdst = dst;
  std::int64_t frac = 0;
  int weekday = -1;
  bool done = false;
  if (t == "today" || t == "yesterday" || t == "tomorrow") {
    tm.tm_mday += t == "yesterday" ? -1 : t == "tomorrow" ? 1 : 0;
    tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
    done = true;
  }
  if (!done) {
    static constexpr std::array<std::string_view, 14> kDays{"Sunday", "Sun", "Monday", "Mon", "Tuesday", "Tue", "Wednesday",
                                                            "Wed", "Thursday", "Thu", "Friday", "Fri", "Saturday", "Sat"};
    for (std::size_t i = 0; i < kDays.size(); ++i) {
      if (t.size() > kDays[i].size() && strncasecmp(t.data(), kDays[i].data(), kDays[i].size()) == 0 &&
          t[kDays[i].size()] == ' ') {
        weekday = static_cast<int>(i / 2);
        t.remove_prefix(kDays[i].size() + 1);
        break;
      }
    }
    // systemd's formats in its order; 'T' forms are our ISO 8601 extension. `frac`: may a
    // ".FRACTION" follow; `zero` how many of sec/min/hour to set to 0.
    struct Format {
      const char* fmt;
      bool frac;
      int zero;
    };
    static constexpr std::array<Format, 11> kFormats{{
        {"%y-%m-%d %H:%M:%S", true, 0}, {"%Y-%m-%d %H:%M:%S", true, 0}, {"%Y-%m-%dT%H:%M:%S", true, 0},
        {"%b %d %H:%M:%S", true, 0},    {"%y-%m-%d %H:%M", false, 1},   {"%Y-%m-%d %H:%M", false, 1},
        {"%Y-%m-%dT%H:%M", false, 1},   {"%y-%m-%d", false, 3},         {"%Y-%m-%d", false, 3},
        {"%H:%M:%S", true, 0},          {"%H:%M", false, 1},
    }};
    const std::string text(t);  // strptime needs a terminated string
    const struct tm copy = tm;
    bool matched = false;
    for (const auto& f : kFormats) {
      tm = copy;
      const char* end = strptime(text.c_str(), f.fmt, &tm);
      if (end == nullptr) continue;
      if (f.frac && *end == '.') {
        std::string_view rest(end + 1);
        const auto v = take_fraction(rest, 6);
        if (!v || !rest.empty()) return std::nullopt;
        frac = *v;
      } else if (*end != '\0') {
        continue;
      }
      if (f.zero >= 1) tm.tm_sec = 0;
      if (f.zero >= 3) tm.tm_min = tm.tm_hour = 0;
      matched = true;
      break;
    }
    if (!matched) return std::nullopt;
  }
  if (weekday >= 0 && tm.tm_wday != weekday) return std::nullopt;
  const time_t x = mktime(&tm);
  if (x < 0) return std::nullopt;  // before the epoch, or mktime's error
  if (static_cast<std::int64_t>(x) > kTimestampMaxUs / kSec) return std::nullopt;
  const std::int64_t us = static_cast<std::int64_t>(x) * kSec + frac;
  if (us > kTimestampMaxUs) return std::nullopt;
  return us;
}

}  // namespace

std::optional<std::int64_t> parse_timespan(std::string_view p) {
  while (!p.empty() && is_space(p[0])) p.remove_prefix(1);
  if (p.substr(0, 8) == "infinity") return std::nullopt;  // systemd's USEC_INFINITY: no time of ours
  std::int64_t total = 0;
  bool something = false;
  for (;;) {
    while (!p.empty() && is_space(p[0])) p.remove_prefix(1);
    if (p.empty()) break;
    // strtoll() as systemd uses it takes a '+' before digits; '-' is refused ("-0").
    if (p.size() > 1 && p[0] == '+' && is_digit(p[1])) p.remove_prefix(1);
    if (!is_digit(p[0]) && p[0] != '.') return std::nullopt;
    std::int64_t whole = 0;
    std::size_t n = 0;
    for (; n < p.size() && is_digit(p[n]); ++n) {
      if (whole > (kTimestampMaxUs - (p[n] - '0')) / 10) return std::nullopt;
      whole = whole * 10 + (p[n] - '0');
    }
    std::string_view frac_digits;
    if (n < p.size() && p[n] == '.') {
      std::size_t m = n + 1;
      while (m < p.size() && is_digit(p[m])) ++m;
      frac_digits = p.substr(n + 1, m - n - 1);
      if (frac_digits.empty()) return std::nullopt;  // "3.", "3.sec"
      n = m;
    } else if (n == 0) {
      return std::nullopt;
    }
    p.remove_prefix(n);
    std::string_view after = p;
    while (!after.empty() && is_space(after[0])) after.remove_prefix(1);
    const std::string_view before_unit = after;
    const std::int64_t unit = take_unit(after);
    // "12.34.56" is an error, "12.34 .56" and "12.34s.56" are not (as systemd).
    if (after.size() == before_unit.size() && after.size() == p.size() && !p.empty()) return std::nullopt;
    p = after;
    if (whole > kTimestampMaxUs / unit) return std::nullopt;
    total += whole * unit;
    if (total > kTimestampMaxUs) return std::nullopt;
    std::int64_t scale = unit / 10;
    for (const char d : frac_digits) {
      total += (d - '0') * scale;
      scale /= 10;
    }
    if (total > kTimestampMaxUs) return std::nullopt;
    something = true;
  }
  if (!something) return std::nullopt;
  return total;
}

std::optional<std::int64_t> parse_time_spec(const std::string& spec, std::int64_t now_us) {
  if (now_us < 0 || now_us > kTimestampMaxUs) return std::nullopt;
  std::string_view t = spec;
  if (t.find('\0') != std::string_view::npos) return std::nullopt;
  if (!t.empty() && t[0] == '@') return parse_timespan(t.substr(1));
  if (t == "now") return now_us;
  std::optional<std::int64_t> plus;
  std::optional<std::int64_t> minus;
  if (!t.empty() && t[0] == '+') {
    plus = parse_timespan(t.substr(1));
    if (!plus) return std::nullopt;
  } else if (!t.empty() && t[0] == '-') {
    minus = parse_timespan(t.substr(1));
    if (!minus) return std::nullopt;
  } else if (t.size() > 4 && t.substr(t.size() - 4) == " ago") {
    minus = parse_timespan(t.substr(0, t.size() - 4));
    if (!minus) return std::nullopt;
  } else if (t.size() > 5 && t.substr(t.size() - 5) == " left") {
    plus = parse_timespan(t.substr(0, t.size() - 5));
    if (!plus) return std::nullopt;
  }
  if (plus) return now_us + *plus <= kTimestampMaxUs ? std::optional(now_us + *plus) : std::nullopt;
  if (minus) return *minus <= now_us ? std::optional(now_us - *minus) : std::nullopt;

  // A zone after the last space: a zone name (not "UTC", which systemd handles itself below).
  const auto space = t.rfind(' ');
  if (space != std::string_view::npos && !ends_with_no_case(t, " UTC") && is_zone_name(t.substr(space + 1))) {
    const ScopedTimeZone zone(":" + std::string(t.substr(space + 1)));
    return parse_absolute(t.substr(0, space), now_us, -1);
  }
  if (ends_with_no_case(t, " UTC")) {
    const ScopedTimeZone zone("UTC0");
    return parse_absolute(t.substr(0, t.size() - 4), now_us, -1);
  }
  if (std::string_view rest = t; const auto offset = take_offset(rest)) {
    const ScopedTimeZone zone(*offset);
    return parse_absolute(rest, now_us, -1);
  }
  // The local zone's own abbreviations (tzname[0] standard, tzname[1] daylight saving time).
  tzset();
  for (int dst = 0; dst <= 1; ++dst) {
    const std::string_view name = tzname[dst] != nullptr ? tzname[dst] : "";
    if (name.empty() || t.size() <= name.size() + 1 || !ends_with_no_case(t, name) ||
        t[t.size() - name.size() - 1] != ' ')
      continue;
    return parse_absolute(t.substr(0, t.size() - name.size() - 1), now_us, dst);
  }
  return parse_absolute(t, now_us, -1);
}

std::int64_t realtime_now_us() {
  struct timespec ts {};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * kSec + ts.tv_nsec / 1000;
}

std::optional<std::int64_t> parse_time_spec(const std::string& spec) { return parse_time_spec(spec, realtime_now_us()); }

std::int64_t parse_time_option(const std::string& spec, const char* option) {
  const auto t = parse_time_spec(spec);
  if (!t) {
    throw DumpctlError(std::string("invalid ") + option + " time '" + escape_for_display(spec) +
                       "' (want e.g. \"2025-11-30 21:04[:05] [UTC|Europe/Berlin|+01:00]\", \"21:04\", \"-1h\", "
                       "\"2 days ago\", \"@1764536645.5\", now, today, yesterday or tomorrow; see systemd.time(7))");
  }
  return *t;
}

std::string format_relative(std::int64_t then_us, std::int64_t now_us) {
  const bool past = now_us > then_us;
  // The difference of two int64 values fits in uint64.
  const std::uint64_t d = past ? static_cast<std::uint64_t>(now_us) - static_cast<std::uint64_t>(then_us)
                               : static_cast<std::uint64_t>(then_us) - static_cast<std::uint64_t>(now_us);
  const char* s = past ? "ago" : "left";
  const auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
  const auto two = [&](std::uint64_t a, const char* one_a, const char* many_a, std::uint64_t b, const char* one_b,
                       const char* many_b) {
    return std::to_string(a) + " " + (a == 1 ? one_a : many_a) + " " + std::to_string(b) + " " +
           (b == 1 ? one_b : many_b) + " " + s;
  };
  if (d >= u(kYear)) return two(d / u(kYear), "year", "years", (d % u(kYear)) / u(kMonth), "month", "months");
  if (d >= u(kMonth)) return two(d / u(kMonth), "month", "months", (d % u(kMonth)) / u(kDay), "day", "days");
  if (d >= u(kWeek)) return two(d / u(kWeek), "week", "weeks", (d % u(kWeek)) / u(kDay), "day", "days");
  const std::string ss = std::string(" ") + s;
  if (d >= 2 * u(kDay)) return std::to_string(d / u(kDay)) + " days" + ss;
  if (d >= 25 * u(kHour)) return "1 day " + std::to_string((d - u(kDay)) / u(kHour)) + "h" + ss;
  if (d >= 6 * u(kHour)) return std::to_string(d / u(kHour)) + "h" + ss;
  if (d >= u(kHour)) return std::to_string(d / u(kHour)) + "h " + std::to_string((d % u(kHour)) / u(kMinute)) + "min" + ss;
  if (d >= 5 * u(kMinute)) return std::to_string(d / u(kMinute)) + "min" + ss;
  if (d >= u(kMinute)) return std::to_string(d / u(kMinute)) + "min " + std::to_string((d % u(kMinute)) / u(kSec)) + "s" + ss;
  if (d >= u(kSec)) return std::to_string(d / u(kSec)) + "s" + ss;
  if (d >= 1000) return std::to_string(d / 1000) + "ms" + ss;
  if (d > 0) return std::to_string(d) + "us" + ss;
  return "now";
}

}  // namespace coredumpd::cli
