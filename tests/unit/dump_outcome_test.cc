// Unit tests of the verdict on a finished dump (daemon/dump/outcome.h): each way judge_dump()
// decides from the drain's and the compressor's reports, and the verdict when the index cannot
// record a kept core.
#include <gtest/gtest.h>

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

}  // namespace

TEST(DumpOutcome, WholeStreamStoredIsComplete) {
  const auto v = judge_dump(whole_stream(), stored());
  EXPECT_EQ(v.state, DumpState::Complete);
  EXPECT_EQ(v.reason, "");
  EXPECT_EQ(v.stored_size, 300u);
  EXPECT_FALSE(v.forward_fallback);
  EXPECT_EQ(v.outcome(), Outcome::Stored);
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
  const auto v = judge_dump(d, stored());
  EXPECT_EQ(v.state, DumpState::Truncated);
  EXPECT_EQ(v.reason, "core stream stalled for 100 ms");
  EXPECT_EQ(v.stored_size, 300u);
  EXPECT_EQ(v.outcome(), Outcome::Truncated);
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
  const auto v = judge_dump(whole_stream(), c);
  EXPECT_EQ(v.state, DumpState::Failed);
  EXPECT_EQ(v.reason, "writing the core: No space left on device");
  EXPECT_EQ(v.stored_size, 0u);
  EXPECT_EQ(v.outcome(), Outcome::Failed);
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
  const auto v = judge_dump(d, stored());
  EXPECT_EQ(v.state, DumpState::Failed);
  EXPECT_EQ(v.reason, "malformed record stream: unknown record type 7");
  EXPECT_EQ(v.stored_size, 0u);
}

TEST(DumpOutcome, DeliveredForwardIsForwardedWithoutACore) {
  auto d = whole_stream();
  d.forward.attempted = true;
  d.forward.delivered = true;
  d.forward.bytes = 1000;
  CompressReport c;  // nothing compressed: the receiver has the core
  const auto v = judge_dump(d, c);
  EXPECT_EQ(v.state, DumpState::Forwarded);
  EXPECT_EQ(v.reason, "");
  EXPECT_EQ(v.stored_size, 0u);
  EXPECT_FALSE(v.forward_fallback);
  EXPECT_EQ(v.outcome(), Outcome::Forwarded);
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
  const auto v = core_not_indexed(kept);
  EXPECT_EQ(v.state, DumpState::Failed);
  EXPECT_EQ(v.reason, "the index could not record the stored core (store full?); core deleted");
  EXPECT_EQ(v.stored_size, 0u);
  EXPECT_TRUE(v.forward_fallback) << "still counted as a fallback";
  EXPECT_EQ(v.outcome(), Outcome::Failed);
}
