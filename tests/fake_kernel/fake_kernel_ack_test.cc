// Every hostile or malformed ack of docs/PROTOCOL.md §11.2 group C and the accepted sizes of group B: the
// marker the fake kernel sends and what the server reads next (ECONNRESET or EOF), per §11.3.
#include "tests/fake_kernel/fake_kernel.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include <gtest/gtest.h>

#include "tests/fake_kernel/test_support.h"

namespace coredumpd::fake_kernel {
namespace {

using namespace coredumpd::fake_kernel::testing;
using protocol::COREDUMP_KERNEL;
using protocol::COREDUMP_MEMORY_TYPES;
using protocol::COREDUMP_RECORDS;
using protocol::COREDUMP_REJECT;
using protocol::COREDUMP_SPARSE;
using protocol::COREDUMP_USERSPACE;
using protocol::COREDUMP_WAIT;

// ---------------------------------------------------------------------------------------------
// Acks: docs/PROTOCOL.md §11.2 groups C and B, against §11.3

struct AckCase {
  std::string name;
  bool next_kernel = false;         // VER1 request / NEXT mask instead of 6.18's
  std::vector<std::byte> ack;       // bytes the server sends
  std::uint32_t marker = 0;         // expected marker
  int after = 0;                    // expected next server read: 0 (EOF) or ECONNRESET
};

class FakeKernelAck : public ::testing::TestWithParam<AckCase> {};

TEST_P(FakeKernelAck, MarkerAndHangupMatchTheKernel) {
  const AckCase& tc = GetParam();
  Seen seen;
  ScriptedServer server([&](ServerConn& c) {
    seen.request = c.read_request();
    c.send(tc.ack);
    seen.marker = c.read_marker();
    seen.after = c.next_read();
  });
  const Options o = tc.next_kernel ? next_kernel(server) : options_for(server);
  const Result r = run(o);
  server.join();

  EXPECT_EQ(seen.marker, tc.marker) << describe(r);
  EXPECT_EQ(seen.after, tc.after) << std::strerror(seen.after > 0 ? seen.after : 0);
  EXPECT_TRUE(r.marker_sent);
  EXPECT_EQ(r.marker, tc.marker);
  ASSERT_TRUE(r.verdict);
  EXPECT_EQ(static_cast<std::uint32_t>(*r.verdict), tc.marker);
  ASSERT_TRUE(r.ack_size_field);
  const bool size_refusal = tc.marker == 1 && tc.after == ECONNRESET;
  const bool size_verdict = size_refusal || tc.marker == 2;
  // MINSIZE/MAXSIZE from the size field: the ack stays unread (that is what makes ECONNRESET).
  EXPECT_EQ(r.ack_consumed, !size_verdict);
  EXPECT_EQ(r.ack_raw.size(), size_verdict ? 4u : *r.ack_size_field);
  if (tc.marker == 0) {
    EXPECT_TRUE(task_released(r));
    EXPECT_TRUE(r.wcoredump);
  } else {
    EXPECT_EQ(r.outcome, Outcome::Refused);
    EXPECT_FALSE(r.wcoredump);
    EXPECT_FALSE(r.mode);
    EXPECT_EQ(r.bytes_streamed, 0u);
  }
}

AckCase ver0(std::string name, std::vector<std::byte> ack, std::uint32_t marker, int after) {
  return {std::move(name), false, std::move(ack), marker, after};
}
AckCase next(std::string name, std::vector<std::byte> ack, std::uint32_t marker, int after) {
  return {std::move(name), true, std::move(ack), marker, after};
}

INSTANTIATE_TEST_SUITE_P(
    Spec6C, FakeKernelAck,
    ::testing::Values(
        // Row 11: size checks on the peeked field → MINSIZE/MAXSIZE, then ECONNRESET.
        ver0("Size8IsMinsize", make_ack(8, COREDUMP_KERNEL, 8), 1, ECONNRESET),
        ver0("Size24OverSizeAck16IsMaxsize", make_ack(24, COREDUMP_KERNEL, 24), 2, ECONNRESET),
        ver0("Field4096With16BytesIsMaxsize", make_ack(4096, COREDUMP_KERNEL, 16), 2, ECONNRESET),
        ver0("Field20With16BytesIsMaxsize", make_ack(20, COREDUMP_KERNEL, 16), 2, ECONNRESET),
        // Row 12: unknown bits / spare → UNSUPPORTED, ack consumed → clean EOF.
        ver0("Mask0x11IsUnsupported", make_ack(16, COREDUMP_KERNEL | COREDUMP_RECORDS), 3, 0),
        ver0("Bit63IsUnsupported", make_ack(16, COREDUMP_KERNEL | (1ULL << 63)), 3, 0),
        ver0("Spare1IsUnsupported", make_ack(16, COREDUMP_KERNEL, 16, /*spare=*/1), 3, 0),
        // Row 13: not exactly one mode → CONFLICTING.
        ver0("KernelRejectIsConflicting", make_ack(16, COREDUMP_KERNEL | COREDUMP_REJECT), 4, 0),
        ver0("KernelUserspaceWaitIsConflicting",
             make_ack(16, COREDUMP_KERNEL | COREDUMP_USERSPACE | COREDUMP_WAIT), 4, 0),
        ver0("WaitAloneIsConflicting", make_ack(16, COREDUMP_WAIT), 4, 0),
        ver0("MaskZeroIsConflicting", make_ack(16, 0), 4, 0),
        // Row 14 (RFC): dependencies, memory types.
        next("UserspaceRecordsIsConflicting", make_ack(24, COREDUMP_USERSPACE | COREDUMP_RECORDS), 4, 0),
        next("KernelSparseIsConflicting", make_ack(24, COREDUMP_KERNEL | COREDUMP_SPARSE), 4, 0),
        next("UserspaceMemoryTypesIsConflicting",
             make_ack(24, COREDUMP_USERSPACE | COREDUMP_MEMORY_TYPES), 4, 0),
        next("RejectCloseFilesIsConflicting", make_ack(24, COREDUMP_REJECT | kCloseFiles), 4, 0),
        next("MemoryTypesInAck16IsMinsize", make_ack(16, COREDUMP_KERNEL | COREDUMP_MEMORY_TYPES), 1, 0),
        next("MemoryTypesInAck20IsMinsize", make_ack(20, COREDUMP_KERNEL | COREDUMP_MEMORY_TYPES), 1, 0),
        next("MemoryTypesWithoutFlagIsUnsupported", make_ack(24, COREDUMP_KERNEL, 24, 0, 0x1), 3, 0),
        next("UnknownMemoryTypeIsUnsupported",
             make_ack(24, COREDUMP_KERNEL | COREDUMP_MEMORY_TYPES, 24, 0, 0x200), 3, 0),
        next("Ack32OverSizeAck24IsMaxsize", make_ack(32, COREDUMP_KERNEL, 32), 2, ECONNRESET),
        // Row 9: sizes 16, 20 (between fields) and size_ack accepted without memory types.
        next("Ack16Accepted", make_ack(16, COREDUMP_KERNEL), 0, 0),
        next("Ack20Accepted", make_ack(20, COREDUMP_KERNEL), 0, 0),
        next("Ack24Accepted", make_ack(24, COREDUMP_KERNEL), 0, 0),
        ver0("Ver0Ack16Accepted", make_ack(16, COREDUMP_KERNEL), 0, 0)),
    [](const ::testing::TestParamInfo<AckCase>& case_info) { return case_info.param.name; });

// Row 15: no ack / half an ack, then the server hangs up → no marker, EOF, no dump.
TEST(FakeKernelAckHangup, NoAckThenShutWrGivesNoMarker) {
  ReadEnd rest;
  ScriptedServer server([&](ServerConn& c) {
    c.read_request();
    c.shutdown_write();
    rest = c.read_to_end();
  });
  const Result r = run(options_for(server));
  server.join();
  EXPECT_EQ(r.outcome, Outcome::HungUpBeforeAck) << describe(r);
  EXPECT_FALSE(r.marker_sent);
  EXPECT_FALSE(r.ack_size_field);
  EXPECT_FALSE(r.wcoredump);
  EXPECT_TRUE(rest.data.empty());
  EXPECT_EQ(rest.end_errno, 0);
  EXPECT_FALSE(rest.timed_out);
}

TEST(FakeKernelAckHangup, HalfAckThenShutWrGivesNoMarker) {
  ReadEnd rest;
  ScriptedServer server([&](ServerConn& c) {
    c.read_request();
    const auto ack = make_ack(16, COREDUMP_KERNEL);
    c.send(std::span(ack).first(8));
    c.shutdown_write();
    rest = c.read_to_end();
  });
  const Result r = run(options_for(server));
  server.join();
  EXPECT_EQ(r.outcome, Outcome::HungUpBeforeAck) << describe(r);
  EXPECT_FALSE(r.marker_sent);
  EXPECT_EQ(r.ack_size_field, 16u);
  EXPECT_EQ(r.ack_raw.size(), 8u);
  EXPECT_FALSE(r.ack_consumed);
  EXPECT_TRUE(rest.data.empty());
  EXPECT_EQ(rest.end_errno, 0);
}

TEST(FakeKernelAckHangup, TwoBytesOfSizeFieldThenCloseGivesNoMarker) {
  ScriptedServer server([&](ServerConn& c) {
    c.read_request();
    const auto ack = make_ack(16, COREDUMP_KERNEL);
    c.send(std::span(ack).first(2));
    c.close();
  });
  const Result r = run(options_for(server));
  server.join();
  EXPECT_EQ(r.outcome, Outcome::HungUpBeforeAck) << describe(r);
  EXPECT_FALSE(r.ack_size_field);
  EXPECT_EQ(r.ack_raw.size(), 2u);
  EXPECT_FALSE(r.marker_sent);
}

}  // namespace
}  // namespace coredumpd::fake_kernel
