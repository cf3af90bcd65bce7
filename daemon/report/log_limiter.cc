#include "daemon/report/log_limiter.h"

#include <spdlog/spdlog.h>

namespace coredumpd {

bool LogLimiter::allow(const std::string& kind) {
  std::uint64_t flushed = 0;
  bool ok = false;
  {
    std::lock_guard lock(mu_);
    auto& w = windows_[kind];
    const auto now = std::chrono::steady_clock::now();
    if (now - w.start >= window_) {
      flushed = w.suppressed_now;
      w = Window{now, 0, 0, w.suppressed_total};
    }
    ok = w.logged < burst_;
    if (ok) {
      ++w.logged;
    } else {
      ++w.suppressed_now;
      ++w.suppressed_total;
    }
  }
  if (flushed)
    spdlog::warn("suppressed {} \"{}\" messages in the last {} s (flood)", flushed, kind, window_.count());
  return ok;
}

std::uint64_t LogLimiter::suppressed(const std::string& kind) const {
  std::lock_guard lock(mu_);
  const auto it = windows_.find(kind);
  return it == windows_.end() ? 0 : it->second.suppressed_total;
}

LogLimiter& log_limiter() {
  static LogLimiter limiter(20, std::chrono::seconds(10));
  return limiter;
}

}  // namespace coredumpd
