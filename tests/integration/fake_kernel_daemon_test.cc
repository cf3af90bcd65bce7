// Integration tests: a real coredumpd (started with --allow-unverified-peers, since the fake kernel's
// pidfd never shows PIDFD_COREDUMPED) driven by the fake kernel through every part of the protocol
// this 6.18 kernel cannot exercise: VER1 requests, CLOSE_FILES, RECORDS/SPARSE, MEMORY_TYPES, error
// markers, hostile timing.
#include <gtest/gtest.h>

#include "tests/integration/fake_kernel_daemon_fixture.h"

using namespace coredumpd;
using namespace coredumpd::test;

namespace {

TEST_F(FakeKernelDaemon, Ver0KernelWaitStoresTheExactCore) {
  auto o = options();
  const auto res = fk::run(o);
  ASSERT_TRUE(fk::task_released(res));
  ASSERT_TRUE(res.ack);
  EXPECT_EQ(res.ack->mask, cp::COREDUMP_KERNEL | cp::COREDUMP_WAIT);
  EXPECT_EQ(res.ack->size, 16u);
  EXPECT_TRUE(res.waited);
  EXPECT_EQ(res.wait_end, fk::WaitEnd::Eof);
  EXPECT_FALSE(res.server_sent_data) << "the daemon must never send bytes after the ack";

  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, DumpState::Complete) << r->reason;
  EXPECT_EQ(r->core_size, o.core.size());
  EXPECT_EQ(r->pid, ::getpid());
  EXPECT_EQ(r->extra["negotiation"]["close_files"], "not offered");
  EXPECT_EQ(r->extra["negotiation"]["wait"], "granted");
  EXPECT_TRUE(r->extra.value("unverified_peer", false));
  EXPECT_EQ(stored_core(*r), plain(o.core));
}

TEST_F(FakeKernelDaemon, LongerRequestOfANewerKernelIsReadAndItsTailDiscarded) {
  auto o = options();
  o.request_size = 48;
  o.size_ack = 40;
  o.mask = fk::MASK_NEXT;
  const auto res = fk::run(o);
  ASSERT_TRUE(fk::task_released(res));
  EXPECT_EQ(res.ack->size, 24u);  // min(sizeof our ack, size_ack)
  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->extra["request"]["size"], 48);
  EXPECT_EQ(r->state, DumpState::Complete) << r->reason;
}

TEST_F(FakeKernelDaemon, RequestBelow16IsRefusedAndNothingStored) {
  auto o = options();
  o.size_field = 8;
  const auto res = fk::run(o);
  EXPECT_EQ(res.outcome, fk::Outcome::HungUpBeforeAck);
  EXPECT_TRUE(wait_until([&] { return daemon_->log().find("below the minimum") != std::string::npos; }, 5s));
  EXPECT_TRUE(records().empty());
}

TEST_F(FakeKernelDaemon, SilentPeerIsDroppedAtTheHandshakeDeadline) {
  auto o = options();
  o.stalls.push_back({fk::Point::Connected, std::chrono::seconds(6)});
  const auto res = fk::run(o);
  EXPECT_FALSE(res.marker_sent);
  EXPECT_TRUE(wait_until([&] { return daemon_->log().find("no complete coredump_req within") != std::string::npos; }, 5s));
  EXPECT_TRUE(records().empty());
}

// Acked, but the marker never comes within the deadline (a storm's late kernel, a killed task):
// the crash happened, so it keeps a record, failed and saying why.
TEST_F(FakeKernelDaemon, AnAckWithoutAMarkerKeepsAFailedRecord) {
  start(R"({"handshake_timeout_ms": 500})");
  auto o = options();
  o.stalls.push_back({fk::Point::AckRead, std::chrono::seconds(3)});
  fk::run(o);
  const auto all = settled_records(1);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].state, DumpState::Failed);
  EXPECT_NE(all[0].reason.find("did not answer the coredump_ack within 500 ms"), std::string::npos) << all[0].reason;
  EXPECT_EQ(all[0].pid, ::getpid());
}

// CLOSE_FILES offered: requested; the "kernel" closes the task's descriptors after the ack (here:
// the lock file of this test process, which is the peer), and the record still lists the fd and
// its lock, captured before the ack.
TEST_F(FakeKernelDaemon, CloseFilesIsRequestedAndFdsAreCapturedBeforeTheAck) {
  const std::string lock_path = *dir_ / "held.lock";
  int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(lock_fd, 0);
  struct flock fl{};
  fl.l_type = F_WRLCK;
  ASSERT_EQ(::fcntl(lock_fd, F_SETLK, &fl), 0);

  auto o = options();
  o.request_size = 32;
  o.size_ack = 24;
  o.mask = cp::COREDUMP_MASK_VER0 | kCloseFiles;
  bool closed_before_stream = false;
  o.close_files = [&] {
    ::close(lock_fd);  // the RFC kernel switches the task to an empty fd table here
    lock_fd = -1;
  };
  o.hook = [&](fk::Point p, int) {
    if (p == fk::Point::StreamDone) closed_before_stream = lock_fd == -1;
  };
  const auto res = fk::run(o);
  ASSERT_TRUE(fk::task_released(res));
  EXPECT_TRUE(res.close_files_acked);
  EXPECT_TRUE(res.ack->mask & kCloseFiles);
  EXPECT_TRUE(res.close_files_called);
  EXPECT_TRUE(closed_before_stream);
  ASSERT_TRUE(res.timeline.files_closed && res.timeline.first_stream_byte);
  EXPECT_LE(*res.timeline.files_closed, *res.timeline.first_stream_byte);

  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->extra["negotiation"]["close_files"], "granted");
  bool listed = false;
  for (const auto& fd : r->extra["proc"]["fds"]) {
    if (fd.value("target", std::string()) != lock_path) continue;
    listed = true;
    ASSERT_TRUE(fd.contains("locks")) << fd.dump();
    EXPECT_NE(fd["locks"][0].get<std::string>().find("POSIX  ADVISORY  WRITE"), std::string::npos);
  }
  EXPECT_TRUE(listed) << "the lock file was not captured: " << r->extra["proc"]["fds"].dump();
  bool in_proc_locks = false;
  for (const auto& l : r->extra["proc"]["locks"]) in_proc_locks |= l.get<std::string>().find(std::to_string(::getpid())) != std::string::npos;
  EXPECT_TRUE(in_proc_locks);
}

TEST_F(FakeKernelDaemon, CloseFilesNotOfferedIsNeverSent) {
  auto o = options();
  o.mask = fk::MASK_NEXT;  // everything but CLOSE_FILES
  o.request_size = 32;
  o.size_ack = 24;
  const auto res = fk::run(o);
  ASSERT_TRUE(fk::task_released(res));
  EXPECT_FALSE(res.ack->mask & kCloseFiles);
  EXPECT_FALSE(res.close_files_called);
  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->extra["negotiation"]["close_files"], "not offered");
}

TEST_F(FakeKernelDaemon, CloseFilesDeclinedByPolicy) {
  start(R"({"defaults": {"close_files": false}})");
  auto o = options();
  o.mask = cp::COREDUMP_MASK_VER0 | kCloseFiles;
  const auto res = fk::run(o);
  ASSERT_TRUE(fk::task_released(res));
  EXPECT_FALSE(res.ack->mask & kCloseFiles);
  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->extra["negotiation"]["close_files"], "declined by policy");
}

TEST_F(FakeKernelDaemon, ConfiguredCloseFilesBitIsUsed) {
  start(R"({"close_files_bit": 4096})");
  auto o = options();
  o.mask = cp::COREDUMP_MASK_VER0 | 4096;
  o.close_files_bit = 4096;
  const auto res = fk::run(o);
  ASSERT_TRUE(fk::task_released(res));
  EXPECT_TRUE(res.close_files_acked);
}

TEST_F(FakeKernelDaemon, RejectByPolicyStoresNothingAndReadsNoBytes) {
  start(R"({"rules": [{"name": "no-tests", "match": {"comm": ")" + read_file("/proc/self/comm").value().substr(0, read_file("/proc/self/comm")->size() - 1) + R"("}, "action": "reject"}]})");
  auto o = options();
  o.mask = cp::COREDUMP_MASK_VER0 | kCloseFiles;
  const auto res = fk::run(o);
  EXPECT_EQ(res.outcome, fk::Outcome::Rejected) << res.error;
  EXPECT_EQ(res.ack->mask, cp::COREDUMP_REJECT) << "REJECT carries neither WAIT nor CLOSE_FILES";
  EXPECT_EQ(res.bytes_streamed, 0u);
  EXPECT_FALSE(res.wcoredump);
  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, DumpState::Rejected);
  EXPECT_EQ(r->extra["rule"], "no-tests");
  EXPECT_EQ(r->rule, "no-tests") << "the index's rule column";
  EXPECT_TRUE(r->container_key.has_value()) << "the index's container_key column";
  EXPECT_TRUE(r->path.empty());
}

TEST_F(FakeKernelDaemon, MetadataOnlyUsesUserspaceMode) {
  start(R"({"defaults": {"action": "metadata-only"}})");
  const auto res = fk::run(options());
  EXPECT_TRUE(fk::task_released(res));
  EXPECT_EQ(*res.mode, cp::Mode::Userspace);
  EXPECT_EQ(res.bytes_streamed, 0u);
  EXPECT_TRUE(res.wcoredump);
  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, DumpState::MetadataOnly);
  EXPECT_TRUE(r->path.empty());
  EXPECT_FALSE(r->exe.empty()) << "metadata was collected";
}

TEST_F(FakeKernelDaemon, SparseRecordsReassembleToThePlainCore) {
  auto o = options(4 << 20);
  o.mask = fk::MASK_NEXT;
  o.request_size = 32;
  o.size_ack = 24;
  const auto res = fk::run(o);
  ASSERT_TRUE(fk::task_released(res));
  EXPECT_TRUE(res.records_acked);
  EXPECT_TRUE(res.sparse_acked);
  EXPECT_LT(res.bytes_streamed, o.core.size()) << "zero pages were sent as ZERO records";
  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, DumpState::Complete) << r->reason;
  EXPECT_EQ(r->core_size, o.core.size());
  EXPECT_GT(r->extra.value("records", 0), 1);
  EXPECT_EQ(stored_core(*r), plain(o.core));
}

TEST_F(FakeKernelDaemon, RecordsWithoutSparse) {
  auto o = options(1 << 20);
  o.mask = cp::COREDUMP_MASK_VER0 | cp::COREDUMP_RECORDS;
  o.request_size = 32;
  o.size_ack = 24;
  const auto res = fk::run(o);
  ASSERT_TRUE(fk::task_released(res));
  EXPECT_TRUE(res.records_acked);
  EXPECT_FALSE(res.sparse_acked);
  EXPECT_GT(res.bytes_streamed, o.core.size());
  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->extra["negotiation"]["sparse"], "not offered");
  EXPECT_EQ(stored_core(*r), plain(o.core));
}

TEST_F(FakeKernelDaemon, RecordsStreamCutWithoutEndIsTruncated) {
  auto o = options(2 << 20);
  o.mask = fk::MASK_NEXT;
  o.request_size = 32;
  o.size_ack = 24;
  o.kill_after_bytes = 100'000;
  const auto res = fk::run(o);
  EXPECT_EQ(res.outcome, fk::Outcome::Killed);
  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, DumpState::Truncated);
  EXPECT_NE(r->reason.find("without an END"), std::string::npos) << r->reason;
}

TEST_F(FakeKernelDaemon, MalformedRecordsFailWithAReasonAndNoFile) {
  const struct { fk::RecordFault fault; const char* expect; } cases[] = {
      {{fk::RecordFault::Kind::OffsetGap, 2, 4096}, "gap or overlap"},
      {{fk::RecordFault::Kind::Type, 1, 9}, "unknown record type 9"},
      {{fk::RecordFault::Kind::Flags, 0, 1}, "non-zero flags"},
      {{fk::RecordFault::Kind::HeaderSize, 0, 8}, "< 32"},
  };
  for (const auto& c : cases) {
    start();
    auto o = options(1 << 20);
    o.mask = fk::MASK_NEXT;
    o.request_size = 32;
    o.size_ack = 24;
    o.records.faults.push_back(c.fault);
    EXPECT_NE(fk::run(o).outcome, fk::Outcome::NotReleased) << c.expect << ": a failed dump still releases the task";
    const auto r = only_record();
    ASSERT_TRUE(r) << c.expect;
    EXPECT_EQ(r->state, DumpState::Failed) << c.expect;
    EXPECT_NE(r->reason.find(c.expect), std::string::npos) << r->reason;
    EXPECT_TRUE(r->path.empty());
    // No core file is left in the store.
    const auto [st, ls] = run_capture({"/bin/ls", "-A", store_});
    EXPECT_EQ(ls.find(".zst"), std::string::npos) << ls;
  }
}

TEST_F(FakeKernelDaemon, MemoryTypesSentOnlyWhenTheAckHasRoom) {
  start(R"({"defaults": {"memory_types": ["anon_private", "elf_headers", "dax_shared"]}})");
  auto o = options();
  o.mask = fk::MASK_NEXT;
  o.request_size = 32;
  o.size_ack = 24;
  o.memory_types_mask = 0x3F;  // this kernel knows no DAX types
  auto res = fk::run(o);
  ASSERT_TRUE(fk::task_released(res));
  EXPECT_TRUE(res.memory_types_acked);
  EXPECT_EQ(res.ack->memory_types, 0x11u) << "restricted to the kernel's memory_types_mask";
  EXPECT_EQ(res.effective_memory_types, 0x11u);

  start(R"({"defaults": {"memory_types": 17}})");
  o = options();
  o.mask = fk::MASK_NEXT;
  o.request_size = 32;
  o.size_ack = 16;  // no room for the memory_types field
  res = fk::run(o);
  ASSERT_TRUE(fk::task_released(res));
  EXPECT_FALSE(res.memory_types_acked);
  EXPECT_EQ(res.ack->size, 16u);
  EXPECT_EQ(res.effective_memory_types, fk::DEFAULT_COREDUMP_FILTER);
}

// The kernel may answer any marker; each refusal is logged with its reason and nothing is stored
// as complete.
TEST_F(FakeKernelDaemon, EveryRefusalMarkerIsRecordedAsFailed) {
  for (std::uint32_t marker : {1u, 2u, 3u, 4u, 9u}) {
    start();
    auto o = options();
    o.force_marker = marker;
    const auto res = fk::run(o);
    EXPECT_EQ(res.outcome, fk::Outcome::Refused) << marker;
    const auto r = only_record();
    ASSERT_TRUE(r) << marker;
    EXPECT_EQ(r->state, DumpState::Failed);
    const char* names[] = {"", "MINSIZE", "MAXSIZE", "UNSUPPORTED", "CONFLICTING"};
    EXPECT_NE(r->reason.find(marker < 5 ? names[marker] : "UNKNOWN"), std::string::npos) << r->reason;
    EXPECT_TRUE(r->path.empty());
  }
}

}  // namespace
