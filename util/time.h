// Time in the units records and logs use: microseconds since the Unix epoch for wall-clock times,
// steady-clock microseconds for durations.
#pragma once

#include <chrono>
#include <cstdint>

namespace coredumpd {

/// `t` as microseconds since the Unix epoch (UTC), the unit of DumpRecord::timestamp_us.
inline std::int64_t to_epoch_us(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

/// The current wall-clock time as microseconds since the Unix epoch (UTC).
inline std::int64_t now_epoch_us() { return to_epoch_us(std::chrono::system_clock::now()); }

/// Microseconds elapsed on the steady clock since `start` (the record's *_us timings).
inline std::int64_t us_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace coredumpd
