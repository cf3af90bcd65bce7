// format_relative() (cli/format.h): systemd 252's format_timestamp_relative() (src/basic/time-util.c)
// rules, so that dumpctl info's "(19s ago)" reads as coredumpctl's.
#include <cstdint>
#include <string>

#include "cli/format.h"

namespace coredumpd::cli {

namespace {

constexpr std::uint64_t kSec = 1'000'000, kMin = 60 * kSec, kHour = 60 * kMin, kDay = 24 * kHour,
                        kWeek = 7 * kDay;
constexpr std::uint64_t kYear = 31'557'600 * kSec;  // systemd's USEC_PER_YEAR: 365.25 days
constexpr std::uint64_t kMonth = 2'629'800 * kSec;  // USEC_PER_MONTH: a twelfth of that

std::string n(std::uint64_t v) { return std::to_string(v); }
std::string unit(std::uint64_t v, const char* one, const char* many) { return n(v) + " " + (v == 1 ? one : many); }

}  // namespace

std::string format_relative(std::int64_t then_us, std::int64_t now_us) {
  const bool past = now_us > then_us;
  const std::uint64_t d = past ? static_cast<std::uint64_t>(now_us) - static_cast<std::uint64_t>(then_us)
                               : static_cast<std::uint64_t>(then_us) - static_cast<std::uint64_t>(now_us);
  const std::string s = past ? " ago" : " left";
  if (d >= kYear) return unit(d / kYear, "year", "years") + " " + unit(d % kYear / kMonth, "month", "months") + s;
  if (d >= kMonth) return unit(d / kMonth, "month", "months") + " " + unit(d % kMonth / kDay, "day", "days") + s;
  if (d >= kWeek) return unit(d / kWeek, "week", "weeks") + " " + unit(d % kWeek / kDay, "day", "days") + s;
  if (d >= 2 * kDay) return n(d / kDay) + " days" + s;
  if (d >= 25 * kHour) return "1 day " + n((d - kDay) / kHour) + "h" + s;
  if (d >= 6 * kHour) return n(d / kHour) + "h" + s;
  if (d >= kHour) return n(d / kHour) + "h " + n(d % kHour / kMin) + "min" + s;
  if (d >= 5 * kMin) return n(d / kMin) + "min" + s;
  if (d >= kMin) return n(d / kMin) + "min " + n(d % kMin / kSec) + "s" + s;
  if (d >= kSec) return n(d / kSec) + "s" + s;
  if (d >= 1000) return n(d / 1000) + "ms" + s;
  if (d > 0) return n(d) + "us" + s;
  return "now";
}

}  // namespace coredumpd::cli
