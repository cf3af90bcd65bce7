// Unit tests of the log limiter's windows (daemon/report/log_limiter.h) on an injected clock: the
// burst per window, one summary per ended window, asked of the scheduler at the window's end.
#include <gtest/gtest.h>

#include <vector>

#include "daemon/report/log_limiter.h"

using namespace coredumpd;
using namespace std::chrono_literals;

namespace {

struct FakeClock {
  LogLimiter::Clock::time_point t{std::chrono::hours(1)};
  LogLimiter::Now now() {
    return [this] { return t; };
  }
};

}  // namespace

TEST(LogLimiter, BurstThenSuppressedUntilTheWindowEnds) {
  FakeClock clock;
  LogLimiter l(3, 10s, clock.now());
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(l.allow("overload"));
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(l.allow("overload"));
  EXPECT_TRUE(l.allow("other kind")) << "kinds have windows of their own";
  EXPECT_EQ(l.suppressed("overload"), 5u);
  clock.t += 9s;
  EXPECT_FALSE(l.allow("overload"));
  EXPECT_TRUE(l.flush().empty()) << "the window has not ended";
  clock.t += 1s;
  const auto summaries = l.flush();
  ASSERT_EQ(summaries.size(), 1u);
  EXPECT_EQ(summaries[0].kind, "overload");
  EXPECT_EQ(summaries[0].suppressed, 6u);
  EXPECT_EQ(summaries[0].window, 10s);
  EXPECT_TRUE(l.flush().empty()) << "one summary per window";
  EXPECT_TRUE(l.allow("overload")) << "a fresh window, a fresh burst";
  EXPECT_EQ(l.suppressed("overload"), 6u);
}

TEST(LogLimiter, AsksTheSchedulerForAFlushAtTheWindowsEnd) {
  FakeClock clock;
  LogLimiter l(1, 10s, clock.now());
  std::vector<LogLimiter::Clock::time_point> asked;
  l.set_scheduler([&](LogLimiter::Clock::time_point when) { asked.push_back(when); });
  const auto start = clock.t;
  EXPECT_TRUE(l.allow("flood"));
  EXPECT_TRUE(asked.empty()) << "nothing suppressed yet";
  clock.t += 2s;
  EXPECT_FALSE(l.allow("flood"));
  EXPECT_FALSE(l.allow("flood"));
  ASSERT_EQ(asked.size(), 1u) << "once per window, at its first suppressed line";
  EXPECT_EQ(asked[0], start + 10s);
  // The timer fires at the window's end; the summary comes then, not at the next crash.
  clock.t = asked[0];
  const auto s = l.flush();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].suppressed, 2u);
  // A later flood starts a new window, with a new request.
  clock.t += 5min;
  EXPECT_TRUE(l.allow("flood"));
  EXPECT_FALSE(l.allow("flood"));
  ASSERT_EQ(asked.size(), 2u);
  EXPECT_EQ(asked[1], clock.t + 10s);
}

TEST(LogLimiter, WithoutASchedulerTheSummaryComesWithTheNextLine) {
  FakeClock clock;
  LogLimiter l(1, 10s, clock.now());
  EXPECT_TRUE(l.allow("k"));
  EXPECT_FALSE(l.allow("k"));
  clock.t += 11s;
  EXPECT_TRUE(l.allow("k")) << "the ended window's summary is logged, and a new window begins";
  EXPECT_TRUE(l.flush().empty()) << "already summed up by allow()";
}
