// Per-rule rate limit on stored cores (Policy::rate_limit): a sliding window of the times dumps
// were admitted, per (rule, container, executable), shared by every session.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "daemon/policy/policy.h"

namespace coredumpd {

/// Thread-safe sliding-window limiter. Each key (rule, container key, exe) admits at most
/// `limit.burst` dumps in any `limit.interval`; the rest are suppressed and counted.
class DumpRateLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  /// The answer for one crash.
  struct Verdict {
    bool admitted = true;
    /// Crashes of this key suppressed since its last admitted dump, this one included (0 when
    /// admitted): the running count of the current flood.
    std::uint64_t suppressed = 0;
    std::uint64_t suppressed_total = 0;  ///< of this key since the daemon started, this one included
  };

  /// Keys kept at most; beyond that, keys with no admission inside their window are forgotten.
  static constexpr std::size_t kMaxKeys = 4096;

  /// Decides whether a crash of `exe` in `container` chosen by rule `rule` may store a core at
  /// `now`, and records the decision. A limit with burst 0 or interval 0 admits everything.
  Verdict admit(const std::string& rule, const std::string& container, const std::string& exe, const RateLimit& limit,
                Clock::time_point now = Clock::now());

  /// Number of keys currently tracked (for tests).
  std::size_t keys() const;

 private:
  struct State {
    std::deque<Clock::time_point> admitted;  ///< admission times inside the window, oldest first
    std::chrono::seconds interval{0};        ///< the window last used for this key
    std::uint64_t suppressed = 0;
    std::uint64_t suppressed_total = 0;
  };
  using Key = std::tuple<std::string, std::string, std::string>;

  void forget_idle(Clock::time_point now);

  mutable std::mutex mu_;
  std::map<Key, State> states_;
};

}  // namespace coredumpd
