// Unit tests of the outcome counters (daemon/report/stats.h): each Outcome counts on its own, and
// summary() keeps the text sd_notify STATUS= and the shutdown log have always shown.
#include <gtest/gtest.h>

#include <cstddef>

#include "daemon/report/stats.h"

using namespace coredumpd;

TEST(Stats, SummaryOfNothing) {
  const Stats s;
  EXPECT_EQ(s.summary(),
            "stored 0, truncated 0, failed 0, rejected 0, impostors 0, bad requests 0, overloaded 0, "
            "store unavailable 0, rate limited 0, forwarded 0, forward fallbacks 0, received forwarded 0, "
            "kept in fallback 0, moved from fallback 0, analyzed 0, analysis unavailable 0, analysis queue full 0, "
            "analysis not recorded 0, journal entries written 0, journal entries failed 0, uploaded 0, upload retries 0, "
            "uploads deferred 0, upload outages 0");
}

TEST(Stats, EachOutcomeHasItsOwnCounterAndLabel) {
  Stats s;
  // Outcome i counted i + 1 times: every counter distinct, so a label on the wrong counter shows.
  for (std::size_t i = 0; i < kOutcomeCount; ++i)
    for (std::size_t n = 0; n <= i; ++n) s.count(static_cast<Outcome>(i));
  for (std::size_t i = 0; i < kOutcomeCount; ++i) EXPECT_EQ(s.get(static_cast<Outcome>(i)), i + 1) << i;
  EXPECT_EQ(s.summary(),
            "stored 2, truncated 3, failed 4, rejected 5, impostors 7, bad requests 8, overloaded 12, "
            "store unavailable 13, rate limited 14, forwarded 15, forward fallbacks 16, received forwarded 17, "
            "kept in fallback 20, moved from fallback 21, analyzed 22, analysis unavailable 23, analysis queue full 24, "
            "analysis not recorded 25, journal entries written 26, journal entries failed 27, uploaded 28, upload retries 29, "
            "uploads deferred 30, upload outages 31");
}

TEST(Stats, OutcomeNames) {
  EXPECT_EQ(outcome_name(Outcome::Accepted), "accepted");
  EXPECT_EQ(outcome_name(Outcome::ForwardFallback), "forward_fallback");
  EXPECT_EQ(outcome_name(Outcome::ForwardedIn), "forwarded_in");
}
