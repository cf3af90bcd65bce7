#include "daemon/policy/rate_limiter.h"

namespace coredumpd {

DumpRateLimiter::Verdict DumpRateLimiter::admit(const std::string& rule, const std::string& container,
                                                const std::string& exe, const RateLimit& limit, Clock::time_point now) {
  if (limit.burst == 0 || limit.interval.count() <= 0) return {};
  std::lock_guard lock(mu_);
  if (states_.size() >= kMaxKeys) forget_idle(now);
  State& s = states_[Key{rule, container, exe}];
  s.interval = limit.interval;
  while (!s.admitted.empty() && now - s.admitted.front() >= limit.interval) s.admitted.pop_front();
  Verdict v;
  if (s.admitted.size() < limit.burst) {
    s.admitted.push_back(now);
    s.suppressed = 0;
    v.suppressed_total = s.suppressed_total;
    return v;
  }
  v.admitted = false;
  v.suppressed = ++s.suppressed;
  v.suppressed_total = ++s.suppressed_total;
  return v;
}

std::size_t DumpRateLimiter::keys() const {
  std::lock_guard lock(mu_);
  return states_.size();
}

// A key whose newest admission left its window would admit the next crash anyway: dropping it
// only loses its suppressed counters.
void DumpRateLimiter::forget_idle(Clock::time_point now) {
  for (auto it = states_.begin(); it != states_.end();) {
    const auto& s = it->second;
    if (s.admitted.empty() || now - s.admitted.back() >= s.interval)
      it = states_.erase(it);
    else
      ++it;
  }
}

}  // namespace coredumpd
