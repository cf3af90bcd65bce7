// Unit tests of the verdict on a finished dump (daemon/dump/outcome.h): each way judge_dump()
// decides from the drain's and the compressor's reports, and the verdict when the index cannot
// record a kept core.
#include <gtest/gtest.h>

#include <csignal>
#include <optional>
#include <string>

#include "daemon/dump/outcome.h"

using namespace coredumpd;

namespace {

// A plain core stream that came whole and was all spooled: 1000 bytes, stored in 300.
DrainReport whole_stream() {
  DrainReport d;
  d.total = 1000;
  d.spooled = 1000;
  d.stream.eof = true;
  return d;
}

CompressReport stored(std::uint64_t bytes = 300) {
  CompressReport c;
  c.stored = bytes;
  return c;
}

// Checks every field of `v` and the counter it goes to.
void expect_verdict(const DumpVerdict& v, DumpState state, const std::string& reason, std::uint64_t stored_size,
                    bool forward_fallback, Outcome outcome) {
  EXPECT_EQ(v.state, state);
  EXPECT_EQ(v.reason, reason);
  EXPECT_EQ(v.stored_size, stored_size);
  EXPECT_EQ(v.forward_fallback, forward_fallback);
  EXPECT_EQ(v.outcome(), outcome);
}

}  // namespace

TEST(DumpOutcome, WholeStreamStoredIsComplete) {
  expect_verdict(judge_dump(whole_stream(), stored()), DumpState::Complete, "", 300, false, Outcome::Stored);
}

TEST(DumpOutcome, WholeRecordStreamWithEndIsComplete) {
  auto d = whole_stream();
  d.records = true;
  d.records_ended = true;
  EXPECT_EQ(judge_dump(d, stored()).state, DumpState::Complete);
}

TEST(DumpOutcome, StreamStoppedBeforeEofIsTruncatedWithTheDrainsReason) {
  auto d = whole_stream();
  d.stream.eof = false;
  d.stream.error = "core stream stalled for 100 ms";
  expect_verdict(judge_dump(d, stored()), DumpState::Truncated, "core stream stalled for 100 ms", 300, false,
                 Outcome::Truncated);
}

TEST(DumpOutcome, RecordStreamWithoutEndIsTruncated) {
  auto d = whole_stream();
  d.records = true;
  d.records_ended = false;
  const auto v = judge_dump(d, stored());
  EXPECT_EQ(v.state, DumpState::Truncated);
  EXPECT_EQ(v.reason, "record stream ended without an END record (task killed mid-dump?)");
}

TEST(DumpOutcome, CutAtMaxCoreBytesIsTruncated) {
  auto d = whole_stream();
  d.total = 5000;
  d.spooled = 1000;
  const auto v = judge_dump(d, stored());
  EXPECT_EQ(v.state, DumpState::Truncated);
  EXPECT_EQ(v.reason, "core of 5000 bytes cut at max_core_bytes 1000");
  EXPECT_EQ(v.stored_size, 300u);
}

TEST(DumpOutcome, ShortStreamReasonWinsOverTheCut) {
  auto d = whole_stream();
  d.total = 5000;
  d.stream.eof = false;
  d.stream.error = "reading the core stream: Connection reset by peer";
  EXPECT_EQ(judge_dump(d, stored()).reason, "reading the core stream: Connection reset by peer");
}

TEST(DumpOutcome, CompressionErrorFails) {
  CompressReport c;
  c.error = "writing the core: No space left on device";
  expect_verdict(judge_dump(whole_stream(), c), DumpState::Failed, "writing the core: No space left on device", 0,
                 false, Outcome::Failed);
}

TEST(DumpOutcome, SpoolErrorFailsAndNamesTheSpoolFirst) {
  auto d = whole_stream();
  d.spool_error = "spool: No space left on device";
  CompressReport c;
  c.error = "no spool";
  const auto v = judge_dump(d, c);
  EXPECT_EQ(v.state, DumpState::Failed);
  EXPECT_EQ(v.reason, "spool: No space left on device");
}

TEST(DumpOutcome, MalformedRecordStreamFailsEvenWhenCutShort) {
  auto d = whole_stream();
  d.records = true;
  d.malformed = true;
  d.record_error = "unknown record type 7";
  d.stream.eof = false;  // the drain stopped at the bad record
  d.total = 5000;
  expect_verdict(judge_dump(d, stored()), DumpState::Failed, "malformed record stream: unknown record type 7", 0, false,
                 Outcome::Failed);
}

TEST(DumpOutcome, DeliveredForwardIsForwardedWithoutACore) {
  auto d = whole_stream();
  d.forward.attempted = true;
  d.forward.delivered = true;
  d.forward.bytes = 1000;
  CompressReport c;  // nothing compressed: the receiver has the core
  expect_verdict(judge_dump(d, c), DumpState::Forwarded, "", 0, false, Outcome::Forwarded);
}

TEST(DumpOutcome, FailedForwardFallsBackToTheHostsStore) {
  auto d = whole_stream();
  d.forward.attempted = true;
  d.forward.error = "the receiver hung up after 200 bytes";
  const auto v = judge_dump(d, stored());
  EXPECT_EQ(v.state, DumpState::Complete);
  EXPECT_TRUE(v.forward_fallback);
  EXPECT_EQ(v.stored_size, 300u);
}

TEST(DumpOutcome, FailedForwardOfAShortStreamIsATruncatedFallback) {
  auto d = whole_stream();
  d.forward.attempted = true;
  d.stream.eof = false;
  d.stream.error = "core stream stalled for 100 ms";
  const auto v = judge_dump(d, stored());
  EXPECT_EQ(v.state, DumpState::Truncated);
  EXPECT_TRUE(v.forward_fallback);
}

TEST(DumpOutcome, FailedForwardWhoseStoreFailsIsAFailedFallback) {
  auto d = whole_stream();
  d.forward.attempted = true;
  CompressReport c;
  c.error = "creating the core file: Read-only file system";
  const auto v = judge_dump(d, c);
  EXPECT_EQ(v.state, DumpState::Failed);
  EXPECT_TRUE(v.forward_fallback);
}

TEST(DumpOutcome, CoreTheIndexCannotRecordBecomesFailed) {
  auto d = whole_stream();
  d.total = 5000;  // a truncated core, say
  d.forward.attempted = true;
  const auto kept = judge_dump(d, stored());
  ASSERT_EQ(kept.state, DumpState::Truncated);
  // Still counted as a fallback.
  expect_verdict(core_not_indexed(kept), DumpState::Failed,
                 "the index could not record the stored core (store full?); core deleted", 0, true, Outcome::Failed);
}

// ---- A plain stream whose EOF comes before what the core's program headers promise ----

namespace {

// A stream that reached EOF after 1000 of the 5000 bytes its headers promise.
DrainReport short_stream(std::optional<int> exit_status, std::string exit_error = "") {
  auto d = whole_stream();
  d.core_facts.promised_size = 5000;
  d.task_exit.status = exit_status;
  d.task_exit.error = std::move(exit_error);
  return d;
}

const std::string kShortPrefix = "core stream ended after 1000 of the 5000 bytes its program headers promise: ";

}  // namespace

TEST(DumpOutcome, ShortStreamKilledBySigkillIsTruncatedAndNamesTheCause) {
  const auto v = judge_dump(short_stream(SIGKILL), stored());
  expect_verdict(v, DumpState::Truncated, kShortPrefix + "the crashing task was killed by SIGKILL while its core streamed",
                 300, false, Outcome::Truncated);
  EXPECT_EQ(v.expected_size, 5000u);  // the stored partial core is kept (stored_size above)
}

TEST(DumpOutcome, ShortStreamWithoutAnExitStatusSaysWhyTheCauseIsUnknown) {
  const auto v = judge_dump(short_stream(std::nullopt, "no exit status from PIDFD_INFO_EXIT within 250 ms"), stored());
  EXPECT_EQ(v.state, DumpState::Truncated);
  EXPECT_EQ(v.reason, kShortPrefix + "cause unknown (no exit status from PIDFD_INFO_EXIT within 250 ms)");
}

TEST(DumpOutcome, ShortStreamCausesFromOtherExitStatuses) {
  EXPECT_EQ(short_stream_cause({SIGSEGV | 0x80, ""}),
            "the kernel stopped writing early yet reports the core dumped (task ended by SIGSEGV)");
  EXPECT_EQ(short_stream_cause({SIGSEGV, ""}), "the kernel gave up the dump (task ended by SIGSEGV, no core dumped)");
  EXPECT_EQ(short_stream_cause({3 << 8, ""}), "the task exited with status 3 while its core streamed");
  EXPECT_EQ(short_stream_cause({}), "cause unknown (no exit status)");
}

TEST(DumpOutcome, StreamHoldingAllItsHeadersPromiseIsComplete) {
  for (const std::uint64_t promised : {0u, 999u, 1000u}) {  // 0: the headers were never read
    auto d = whole_stream();
    d.core_facts.promised_size = promised;
    const auto v = judge_dump(d, stored());
    EXPECT_EQ(v.state, DumpState::Complete) << promised;
    EXPECT_EQ(v.expected_size, 0u) << promised;
  }
}

TEST(DumpOutcome, ShortStreamCutAtMaxCoreBytesNamesTheShortStream) {
  auto d = short_stream(SIGKILL);
  d.spooled = 500;
  const auto v = judge_dump(d, stored());
  EXPECT_EQ(v.state, DumpState::Truncated);
  EXPECT_EQ(v.reason, kShortPrefix + "the crashing task was killed by SIGKILL while its core streamed");
}

TEST(DumpOutcome, StalledStreamKeepsTheDrainsReasonAndPromisesNothing) {
  auto d = short_stream(std::nullopt);
  d.stream.eof = false;
  d.stream.error = "core stream stalled for 100 ms";
  const auto v = judge_dump(d, stored());
  EXPECT_EQ(v.reason, "core stream stalled for 100 ms");
  EXPECT_EQ(v.expected_size, 0u);
}
