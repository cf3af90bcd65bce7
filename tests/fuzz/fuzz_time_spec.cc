// libFuzzer target: dumpctl's -S/--since and -U/--until values (cli/time_spec.h), typed by any user
// and pasted from logs, so untrusted.
//
// Input: [zone byte][spec text]. The zone byte picks $TZ (UTC, America/New_York, Asia/Kolkata,
// unset) and the current time (a fixed instant, shifted by the byte) so that relative forms and
// "today" meet daylight saving time changes.
//   - parse_time_spec: never throws; a result lies within [0, kTimestampMaxUs]; $TZ is unchanged
//     afterwards (a zone suffix sets it only while parsing);
//   - parse_timespan: never throws; a result is within [0, kTimestampMaxUs];
//   - format_relative of the result and the current time: not empty, ends in "ago", "left" or is "now".
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include <time.h>

#include "cli/time_spec.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static const char* const kZones[] = {"UTC", "America/New_York", "Asia/Kolkata", nullptr};
  const std::uint8_t pick = data[0];
  const char* zone = kZones[pick % 4];
  if (zone != nullptr) {
    setenv("TZ", zone, 1);
  } else {
    unsetenv("TZ");
  }
  tzset();
  // Sun 2025-03-09 06:30 UTC (the US spring-forward day), moved by up to ~64 half-days.
  const std::int64_t now = 1'741'501'800'000'000 + static_cast<std::int64_t>(pick / 4) * 43'200'000'000;
  const std::string spec(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    const auto t = coredumpd::cli::parse_time_spec(spec, now);
    const char* after = std::getenv("TZ");
    FUZZ_CHECK(zone == nullptr ? after == nullptr : after != nullptr && std::strcmp(after, zone) == 0);
    if (t) {
      FUZZ_CHECK(*t >= 0 && *t <= coredumpd::cli::kTimestampMaxUs);
      const std::string rel = coredumpd::cli::format_relative(*t, now);
      FUZZ_CHECK(rel == "now" || rel.ends_with(" ago") || rel.ends_with(" left"));
    }
    if (const auto span = coredumpd::cli::parse_timespan(spec)) {
      FUZZ_CHECK(*span >= 0 && *span <= coredumpd::cli::kTimestampMaxUs);
    }
  } catch (...) {
    FUZZ_CHECK(false);
  }
  return 0;
}
