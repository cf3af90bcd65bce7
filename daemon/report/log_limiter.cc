#include "daemon/report/log_limiter.h"

#include <spdlog/spdlog.h>

namespace coredumpd {

bool LogLimiter::allow(const std::string& kind) {
  std::vector<Summary> ended;
  Scheduler schedule;
  Clock::time_point due;
  bool ok = false;
  {
    std::lock_guard lock(mu_);
    const auto now = now_();
    ended = take_ended(now);  // without a scheduler, or ahead of a late timer
    auto& w = windows_[kind];
    if (now - w.start >= window_) w = Window{now, 0, 0, w.suppressed_total};
    ok = w.logged < burst_;
    if (ok) {
      ++w.logged;
    } else {
      if (w.suppressed_now++ == 0 && scheduler_) {
        schedule = scheduler_;
        due = w.start + window_;
      }
      ++w.suppressed_total;
    }
  }
  log(ended);
  if (schedule) schedule(due);
  return ok;
}

std::vector<LogLimiter::Summary> LogLimiter::flush() {
  std::vector<Summary> ended;
  {
    std::lock_guard lock(mu_);
    ended = take_ended(now_());
  }
  log(ended);
  return ended;
}

std::vector<LogLimiter::Summary> LogLimiter::take_ended(Clock::time_point now) {
  std::vector<Summary> ended;
  for (auto& [kind, w] : windows_) {
    if (w.suppressed_now == 0 || now - w.start < window_) continue;
    ended.push_back(Summary{kind, w.suppressed_now, window_});
    w = Window{now, 0, 0, w.suppressed_total};
  }
  return ended;
}

void LogLimiter::log(const std::vector<Summary>& summaries) const {
  for (const auto& s : summaries)
    spdlog::warn("suppressed {} \"{}\" messages in the last {} s (flood)", s.suppressed, s.kind, s.window.count());
}

void LogLimiter::set_scheduler(Scheduler scheduler) {
  std::lock_guard lock(mu_);
  scheduler_ = std::move(scheduler);
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
