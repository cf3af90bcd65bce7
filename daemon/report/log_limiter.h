// Keeps log volume bounded during a flood of crashes: per message kind, the first few lines of
// every window are logged, the rest only counted and summed up in one line when the window ends.
//
// The summary is due when the window ends, not at the next line of that kind (which may come
// minutes later): the limiter asks its scheduler (set_scheduler(); the server's io_context timer)
// for a call of flush() at that time. Without a scheduler the summary comes with the next line.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace coredumpd {

/// Thread-safe limiter. allow() answers whether to log one more line of `kind` now.
class LogLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  /// The current time (injectable for tests).
  using Now = std::function<Clock::time_point()>;
  /// Arranges one call of flush() at (or soon after) the given time. Called outside the lock,
  /// from whichever thread logs; must not call into the limiter itself.
  using Scheduler = std::function<void(Clock::time_point)>;

  /// One ended window with suppressed lines.
  struct Summary {
    std::string kind;
    std::uint64_t suppressed = 0;  ///< lines of `kind` not logged in the window
    std::chrono::seconds window;
  };

  /// At most `burst` lines per `kind` in each `window`; `now` tells the time.
  LogLimiter(int burst, std::chrono::seconds window, Now now = &Clock::now)
      : burst_(burst), window_(window), now_(std::move(now)) {}

  /// True if a line of `kind` may be logged now. The first line suppressed in a window asks the
  /// scheduler for a flush() when the window ends.
  bool allow(const std::string& kind);

  /// Logs one summary line ("suppressed N <kind> messages in the last W s") for each window that
  /// has ended with suppressed lines, starts a fresh window for it, and returns the summaries.
  std::vector<Summary> flush();

  /// Sets (or, with nullptr, clears) the scheduler of flush() calls.
  void set_scheduler(Scheduler scheduler);

  /// Lines of `kind` suppressed so far (all windows), for tests and STATUS=.
  std::uint64_t suppressed(const std::string& kind) const;

 private:
  struct Window {
    Clock::time_point start;
    int logged = 0;
    std::uint64_t suppressed_now = 0;
    std::uint64_t suppressed_total = 0;
  };
  /// Summaries of the ended windows, reset (mu_ held).
  std::vector<Summary> take_ended(Clock::time_point now);
  void log(const std::vector<Summary>& summaries) const;

  int burst_;
  std::chrono::seconds window_;
  Now now_;
  mutable std::mutex mu_;
  std::map<std::string, Window> windows_;  // guarded by mu_
  Scheduler scheduler_;                    // guarded by mu_
};

/// The daemon's limiter: 20 lines per kind per 10 s.
LogLimiter& log_limiter();

}  // namespace coredumpd
