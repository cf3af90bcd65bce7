// Unit tests of the uploader's endpoint-wide back-off (daemon/upload/peer_backoff.h) on an
// injected clock and jitter: closed, open, one probe at a time, doubling to the cap, closing.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>

#include "daemon/upload/peer_backoff.h"

namespace coredumpd::upload {
namespace {

using Admit = PeerBackoff::Admit;
using Kind = PeerBackoff::Change::Kind;
constexpr std::chrono::seconds kMax(8);
constexpr std::int64_t kS = 1'000'000;

struct Fixture {
  std::int64_t now = 1000 * kS;
  double jitter = 0.999999;  // the back-off's whole length (it is [d/2, d))
  PeerBackoff gate{[this] { return now; }, [this] { return jitter; }};

  // Opens the breaker as a failed request does.
  void open() { ASSERT_EQ(gate.report(PeerAnswer::Unavailable, false, kMax).kind, Kind::Opened); }
};

TEST(PeerBackoff, ClosedPassesEveryRequest) {
  Fixture f;
  for (int i = 0; i < 5; ++i) EXPECT_EQ(f.gate.admit(), Admit::Pass);
  EXPECT_FALSE(f.gate.open());
  EXPECT_TRUE(f.gate.admits());
  EXPECT_EQ(f.gate.wait_us(), 0);
  // A per-object refusal (Answered) and a request that never left (None) change nothing.
  EXPECT_EQ(f.gate.report(PeerAnswer::Answered, false, kMax).kind, Kind::None);
  EXPECT_EQ(f.gate.report(PeerAnswer::None, false, kMax).kind, Kind::None);
  EXPECT_FALSE(f.gate.open());
}

TEST(PeerBackoff, AnUnavailablePeerOpensItAndRequestsWait) {
  Fixture f;
  f.open();
  EXPECT_TRUE(f.gate.open());
  EXPECT_EQ(f.gate.admit(), Admit::Wait);
  EXPECT_FALSE(f.gate.admits());
  EXPECT_GT(f.gate.wait_us(), kS - 10);
  EXPECT_LE(f.gate.wait_us(), kS);
  // Requests sent before it opened that fail late neither extend it nor count as probes.
  EXPECT_EQ(f.gate.report(PeerAnswer::Unavailable, false, kMax).kind, Kind::None);
  EXPECT_LE(f.gate.wait_us(), kS);
}

TEST(PeerBackoff, OneProbeAtATimeAfterTheBackOff) {
  Fixture f;
  f.open();
  f.now += kS;
  EXPECT_TRUE(f.gate.admits());
  EXPECT_EQ(f.gate.admit(), Admit::Probe);
  // While the probe is out every other worker waits, however long it takes.
  f.now += 100 * kS;
  EXPECT_EQ(f.gate.admit(), Admit::Wait);
  EXPECT_FALSE(f.gate.admits());
  EXPECT_EQ(f.gate.wait_us(), -1);
}

TEST(PeerBackoff, FailedProbesDoubleTheBackOffUpToTheCap) {
  Fixture f;
  f.open();
  std::int64_t expected = 1;
  for (int probe = 0; probe < 6; ++probe) {
    f.now += f.gate.wait_us();
    ASSERT_EQ(f.gate.admit(), Admit::Probe) << probe;
    f.now += kS / 10;  // the probe's own duration does not count
    EXPECT_EQ(f.gate.report(PeerAnswer::Unavailable, true, kMax).kind, Kind::None);
    expected = std::min<std::int64_t>(expected * 2, kMax.count());
    EXPECT_GT(f.gate.wait_us(), expected * kS - 10) << probe;
    EXPECT_LE(f.gate.wait_us(), expected * kS) << probe;
    EXPECT_EQ(f.gate.admit(), Admit::Wait);
  }
}

TEST(PeerBackoff, JitterShortensTheBackOffToAtMostHalf) {
  Fixture f;
  f.jitter = 0.0;
  f.open();
  EXPECT_EQ(f.gate.wait_us(), kS / 2);
  f.now += kS / 2;
  ASSERT_EQ(f.gate.admit(), Admit::Probe);
  f.jitter = 0.5;
  f.gate.report(PeerAnswer::Unavailable, true, kMax);
  EXPECT_EQ(f.gate.wait_us(), 2 * kS * 3 / 4);
}

TEST(PeerBackoff, AnAnsweredProbeClosesItAndSaysForHowLong) {
  Fixture f;
  f.open();
  f.now += kS;
  ASSERT_EQ(f.gate.admit(), Admit::Probe);
  f.gate.report(PeerAnswer::Unavailable, true, kMax);  // one failed probe
  f.now += 2 * kS;
  ASSERT_EQ(f.gate.admit(), Admit::Probe);
  // A 404 is an answer: the endpoint is up even if that object is not.
  const auto change = f.gate.report(PeerAnswer::Answered, true, kMax);
  EXPECT_EQ(change.kind, Kind::Closed);
  EXPECT_EQ(change.open_us, 3 * kS);
  EXPECT_EQ(change.probes, 1);
  EXPECT_FALSE(f.gate.open());
  EXPECT_EQ(f.gate.admit(), Admit::Pass);
  // Opened again later, it starts over at 1 s.
  f.open();
  EXPECT_LE(f.gate.wait_us(), kS);
}

TEST(PeerBackoff, AProbeThatSentNothingIsGivenBack) {
  Fixture f;
  f.open();
  f.now += kS;
  ASSERT_EQ(f.gate.admit(), Admit::Probe);
  // A local error (the core unreadable) or a stop: no request reached the peer.
  EXPECT_EQ(f.gate.report(PeerAnswer::None, true, kMax).kind, Kind::None);
  EXPECT_TRUE(f.gate.open());
  EXPECT_EQ(f.gate.admit(), Admit::Probe);  // at once, by another worker
}

TEST(PeerBackoff, ALateAnswerOfARequestSentBeforeItOpenedClosesIt) {
  Fixture f;
  f.open();
  const auto change = f.gate.report(PeerAnswer::Answered, false, kMax);
  EXPECT_EQ(change.kind, Kind::Closed);
  EXPECT_EQ(f.gate.admit(), Admit::Pass);
}

TEST(PeerBackoff, AMaximumBelowOneSecondIsOneSecond) {
  Fixture f;
  ASSERT_EQ(f.gate.report(PeerAnswer::Unavailable, false, std::chrono::seconds(0)).kind, Kind::Opened);
  EXPECT_GT(f.gate.wait_us(), kS - 10);
  EXPECT_LE(f.gate.wait_us(), kS);
}

TEST(PeerBackoff, AResetClosesItAndAProbeStillOutChangesNothing) {
  Fixture f;
  EXPECT_FALSE(f.gate.reset());
  f.open();
  f.now += kS;
  ASSERT_EQ(f.gate.admit(), Admit::Probe);
  EXPECT_TRUE(f.gate.reset());  // a reload with another endpoint
  EXPECT_EQ(f.gate.admit(), Admit::Pass);
  // The old endpoint's probe answers late: a failure reopens it (the new one is down too), a success is nothing new.
  EXPECT_EQ(f.gate.report(PeerAnswer::Answered, true, kMax).kind, Kind::None);
  EXPECT_EQ(f.gate.admit(), Admit::Pass);
}

}  // namespace
}  // namespace coredumpd::upload
