// Keeps log volume bounded during a flood of crashes: per message kind, the first few lines of
// every window are logged, the rest only counted and summed up in one line when the window ends.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace coredumpd {

/// Thread-safe limiter. allow() answers whether to log one more line of `kind` now.
class LogLimiter {
 public:
  /// At most `burst` lines per `kind` in each `window`.
  LogLimiter(int burst, std::chrono::seconds window) : burst_(burst), window_(window) {}

  /// True if a line of `kind` may be logged now. When a window with suppressed lines ends, the
  /// next call logs one summary line ("suppressed N <kind> messages in the last W s") first.
  bool allow(const std::string& kind);

  /// Lines of `kind` suppressed so far (all windows), for tests and STATUS=.
  std::uint64_t suppressed(const std::string& kind) const;

 private:
  struct Window {
    std::chrono::steady_clock::time_point start;
    int logged = 0;
    std::uint64_t suppressed_now = 0;
    std::uint64_t suppressed_total = 0;
  };
  int burst_;
  std::chrono::seconds window_;
  mutable std::mutex mu_;
  std::map<std::string, Window> windows_;
};

/// The daemon's limiter: 20 lines per kind per 10 s.
LogLimiter& log_limiter();

}  // namespace coredumpd
