// RECORDS / SPARSE / MEMORY_TYPES streams over a socket (docs/PROTOCOL.md §6.2, §6.3, §11.2 group
// F) and simulated SIGKILL truncation.
#include "tests/fake_kernel/fake_kernel.h"

#include <algorithm>
#include <functional>

#include <gtest/gtest.h>

#include "tests/fake_kernel/test_support.h"

namespace coredumpd::fake_kernel {
namespace {

using namespace coredumpd::fake_kernel::testing;
using protocol::COREDUMP_KERNEL;
using protocol::COREDUMP_MEMORY_TYPES;
using protocol::COREDUMP_RECORDS;
using protocol::COREDUMP_SPARSE;
using protocol::COREDUMP_WAIT;

// ---------------------------------------------------------------------------------------------
// Records and sparse (docs/PROTOCOL.md §6.2, §11.2 group F)

struct RecordsRun {
  Result result;
  std::optional<std::uint32_t> marker;
  ReadEnd stream;
};

RecordsRun run_records(std::uint64_t ack_mask, Options (*configure)(const ScriptedServer&),
                       const std::function<void(Options&)>& tweak) {
  RecordsRun out;
  ScriptedServer server([&](ServerConn& c) {
    c.read_request();
    c.send(make_ack(24, ack_mask));
    out.marker = c.read_marker();
    out.stream = c.read_to_end();
  });
  Options o = configure(server);
  tweak(o);
  out.result = run(o);
  server.join();
  return out;
}

TEST(FakeKernelRecords, SparseStreamReassemblesToThePlainCore) {
  const auto core = CoreSource::pattern(64 * 4096 + 100, 16, 4096, 5, /*data_last_page=*/true);
  const auto got = run_records(COREDUMP_KERNEL | COREDUMP_RECORDS | COREDUMP_SPARSE, next_kernel,
                               [&](Options& o) { o.core = core; });
  const Result& r = got.result;
  EXPECT_EQ(got.marker, 0u);
  EXPECT_TRUE(task_released(r));
  EXPECT_TRUE(r.records_acked);
  EXPECT_TRUE(r.sparse_acked);
  const auto d = decode_records(got.stream.data, /*sparse_acked=*/true);
  ASSERT_EQ(d.error, "");
  EXPECT_TRUE(d.saw_end);
  EXPECT_EQ(d.core, bytes_of(core));
  EXPECT_EQ(r.records_sent, d.records.size());
  EXPECT_EQ(r.bytes_streamed, got.stream.data.size());
  EXPECT_EQ(r.core_bytes, core.size());
  EXPECT_LT(got.stream.data.size(), core.size());
  const auto zeros = std::count_if(d.records.begin(), d.records.end(), [](const DecodedRecord& rec) {
    return rec.header.type == static_cast<std::uint32_t>(RecordType::Zero);
  });
  EXPECT_GT(zeros, 0);
}

TEST(FakeKernelRecords, RecordsWithoutSparseAckHaveNoZeroRecords) {
  // SPARSE offered but not acked: the kernel elides nothing (docs/PROTOCOL.md §6.2).
  const auto core = CoreSource::pattern(32 * 4096, 8);
  const auto got = run_records(COREDUMP_KERNEL | COREDUMP_RECORDS, next_kernel,
                               [&](Options& o) { o.core = core; });
  EXPECT_TRUE(task_released(got.result));
  EXPECT_FALSE(got.result.sparse_acked);
  const auto d = decode_records(got.stream.data, /*sparse_acked=*/false);
  ASSERT_EQ(d.error, "");
  EXPECT_TRUE(d.saw_end);
  EXPECT_EQ(d.core, bytes_of(core));
  EXPECT_GT(got.stream.data.size(), core.size());
}

TEST(FakeKernelRecords, KillMidStreamTruncatesWithoutEnd) {
  // docs/PROTOCOL.md §6.2: SIGKILL after the first DATA record → EOF without END, WCOREDUMP clear,
  // no WAIT.
  const auto core = CoreSource::pattern(16 * 4096);
  const auto got = run_records(COREDUMP_KERNEL | COREDUMP_RECORDS | COREDUMP_SPARSE | COREDUMP_WAIT,
                               next_kernel, [&](Options& o) {
                                 o.core = core;
                                 o.records.max_data_len = 4096;
                                 o.kill_after_bytes = 32 + 4096 + 32 + 100;
                               });
  const Result& r = got.result;
  EXPECT_EQ(r.outcome, Outcome::Killed) << describe(r);
  EXPECT_TRUE(r.killed);
  EXPECT_FALSE(r.wcoredump);
  EXPECT_FALSE(r.shutdown_sent);
  EXPECT_FALSE(r.waited);
  EXPECT_FALSE(r.stream_complete);
  EXPECT_EQ(r.bytes_streamed, 32u + 4096 + 32 + 100);
  EXPECT_EQ(r.records_sent, 1u);
  EXPECT_EQ(r.core_bytes, 4096u);
  EXPECT_EQ(got.stream.end_errno, 0);  // closed with nothing unread: a clean EOF
  const auto d = decode_records(got.stream.data, true);
  EXPECT_EQ(d.error, "");
  EXPECT_FALSE(d.saw_end);
  EXPECT_TRUE(d.partial_tail);
  EXPECT_EQ(d.core.size(), 4096u + 100);
}

TEST(FakeKernelRecords, PlainStreamKillStopsAtTheExactByte) {
  Seen seen;
  ScriptedServer server([&](ServerConn& c) {
    c.read_request();
    c.send(make_ack(16, COREDUMP_KERNEL | COREDUMP_WAIT));
    seen.marker = c.read_marker();
    seen.stream = c.read_to_end();
  });
  Options o = options_for(server);
  o.core = CoreSource::pattern(1 << 20);
  o.kill_after_bytes = 100'001;
  const Result r = run(o);
  server.join();
  EXPECT_EQ(r.outcome, Outcome::Killed);
  EXPECT_EQ(seen.stream.data.size(), 100'001u);
  EXPECT_EQ(seen.stream.end_errno, 0);
  EXPECT_FALSE(r.wcoredump);
}

TEST(FakeKernelRecords, FaultsAreVisibleToTheServer) {
  const auto core = CoreSource::pattern(4 * 4096);
  const auto got = run_records(COREDUMP_KERNEL | COREDUMP_RECORDS, next_kernel, [&](Options& o) {
    o.core = core;
    o.records.max_data_len = 4096;
    o.records.faults = {{RecordFault::Kind::Type, 1, 9}};
  });
  EXPECT_TRUE(task_released(got.result));
  const auto d = decode_records(got.stream.data, false);
  EXPECT_NE(d.error.find("unknown type 9"), std::string::npos) << d.error;
}

TEST(FakeKernelRecords, MemoryTypesAckCanSelectTheCore) {
  const auto full = CoreSource::pattern(40'000);
  const auto skeleton = CoreSource::pattern(3'000);
  std::uint64_t seen_types = 99;
  const auto got = run_records(COREDUMP_KERNEL | COREDUMP_MEMORY_TYPES, next_kernel, [&](Options& o) {
    o.core = full;
    o.select_core = [&](const protocol::coredump_ack& ack) {
      seen_types = ack.memory_types;
      return ack.memory_types == 0 ? skeleton : full;
    };
  });
  EXPECT_EQ(seen_types, 0u);
  EXPECT_EQ(got.result.effective_memory_types, 0u);
  EXPECT_EQ(got.stream.data, bytes_of(skeleton));
}

}  // namespace
}  // namespace coredumpd::fake_kernel
