// Unit tests of DumpRateLimiter: the sliding window, the suppressed counts, separate keys.
#include <gtest/gtest.h>

#include "daemon/policy/rate_limiter.h"

using namespace coredumpd;
using namespace std::chrono_literals;

namespace {

const RateLimit kTwoPer10s{2, 10s};
const DumpRateLimiter::Clock::time_point t0{};

}  // namespace

TEST(DumpRateLimiter, AdmitsBurstThenSuppressesWithRunningCount) {
  DumpRateLimiter l;
  EXPECT_TRUE(l.admit("r", "docker:a", "/bin/x", kTwoPer10s, t0).admitted);
  EXPECT_TRUE(l.admit("r", "docker:a", "/bin/x", kTwoPer10s, t0 + 1s).admitted);
  const auto third = l.admit("r", "docker:a", "/bin/x", kTwoPer10s, t0 + 2s);
  EXPECT_FALSE(third.admitted);
  EXPECT_EQ(third.suppressed, 1u);
  EXPECT_EQ(third.suppressed_total, 1u);
  const auto fourth = l.admit("r", "docker:a", "/bin/x", kTwoPer10s, t0 + 3s);
  EXPECT_FALSE(fourth.admitted);
  EXPECT_EQ(fourth.suppressed, 2u);
  EXPECT_EQ(fourth.suppressed_total, 2u);
}

TEST(DumpRateLimiter, WindowSlides) {
  DumpRateLimiter l;
  EXPECT_TRUE(l.admit("r", "host", "/bin/x", kTwoPer10s, t0).admitted);
  EXPECT_TRUE(l.admit("r", "host", "/bin/x", kTwoPer10s, t0 + 6s).admitted);
  EXPECT_FALSE(l.admit("r", "host", "/bin/x", kTwoPer10s, t0 + 9s).admitted);
  // At t0+10s the first admission leaves the window: one slot, not two (the t0+6s one still counts).
  const auto after = l.admit("r", "host", "/bin/x", kTwoPer10s, t0 + 10s);
  EXPECT_TRUE(after.admitted);
  EXPECT_EQ(after.suppressed, 0u);
  EXPECT_EQ(after.suppressed_total, 1u);
  EXPECT_FALSE(l.admit("r", "host", "/bin/x", kTwoPer10s, t0 + 15s).admitted);
  // The running count restarted after the admission; the total did not.
  const auto again = l.admit("r", "host", "/bin/x", kTwoPer10s, t0 + 15s);
  EXPECT_EQ(again.suppressed, 2u);
  EXPECT_EQ(again.suppressed_total, 3u);
  EXPECT_TRUE(l.admit("r", "host", "/bin/x", kTwoPer10s, t0 + 16s).admitted);
}

TEST(DumpRateLimiter, ExecutablesRulesAndContainersCountSeparately) {
  DumpRateLimiter l;
  const RateLimit one{1, 60s};
  EXPECT_TRUE(l.admit("r", "docker:a", "/bin/x", one, t0).admitted);
  EXPECT_FALSE(l.admit("r", "docker:a", "/bin/x", one, t0).admitted);
  EXPECT_TRUE(l.admit("r", "docker:a", "/bin/y", one, t0).admitted);   // another executable
  EXPECT_TRUE(l.admit("r2", "docker:a", "/bin/x", one, t0).admitted);  // another rule
  EXPECT_TRUE(l.admit("r", "docker:b", "/bin/x", one, t0).admitted);   // another container
  EXPECT_FALSE(l.admit("r", "docker:a", "/bin/y", one, t0).admitted);
  EXPECT_EQ(l.keys(), 4u);
}

TEST(DumpRateLimiter, ZeroLimitAdmitsEverythingAndTracksNothing) {
  DumpRateLimiter l;
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(l.admit("r", "host", "/bin/x", RateLimit{}, t0).admitted);
  EXPECT_EQ(l.keys(), 0u);
}

TEST(DumpRateLimiter, IdleKeysAreForgottenWhenFull) {
  DumpRateLimiter l;
  const RateLimit one{1, 10s};
  for (std::size_t i = 0; i < DumpRateLimiter::kMaxKeys; ++i)
    l.admit("r", "host", "/bin/" + std::to_string(i), one, t0);
  EXPECT_EQ(l.keys(), DumpRateLimiter::kMaxKeys);
  // Still inside every window: nothing can go, the new key is added.
  l.admit("r", "host", "/bin/new", one, t0 + 5s);
  EXPECT_EQ(l.keys(), DumpRateLimiter::kMaxKeys + 1);
  // All but /bin/new left their window: they are dropped.
  l.admit("r", "host", "/bin/newer", one, t0 + 11s);
  EXPECT_EQ(l.keys(), 2u);
}
