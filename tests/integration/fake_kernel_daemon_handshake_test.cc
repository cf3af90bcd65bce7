// Integration tests: the handshake deadline against slow or blocked collectors, and many crashes at
// once, driven by the fake kernel (fixture: fake_kernel_daemon_fixture.h).
#include <gtest/gtest.h>

#include "tests/integration/fake_kernel_daemon_fixture.h"

using namespace coredumpd;
using namespace coredumpd::test;

namespace {

// A collector that blocks must not keep the task frozen past the handshake deadline. The bounds
// are causal, not speed limits: the ack cannot come before the 1 s deadline, and must come well
// before the 5 s collector returns (load may delay it, by seconds, and still pass).
TEST_F(FakeKernelDaemon, HandshakeDeadlineHoldsWhenACollectorBlocks) {
  start(R"({"handshake_timeout_ms": 1000, "testing": {"collector_delay_ms": 5000}})", {"--enable-test-hooks"});
  const auto res = fk::run(options());
  ASSERT_TRUE(fk::task_released(res));
  ASSERT_TRUE(res.timeline.request_sent && res.timeline.ack_read);
  const auto frozen_us = *res.timeline.ack_read - *res.timeline.request_sent;
  EXPECT_LT(frozen_us, 4'500'000) << "the ack came after " << frozen_us << " us: it waited for the collector";
  EXPECT_GT(frozen_us, 500'000) << "the ack came before the deadline: the delay collector did not run";
  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, DumpState::Complete);
  EXPECT_TRUE(r->extra["collect_errors"].contains("collect")) << r->extra["collect_errors"].dump();
  EXPECT_FALSE(r->extra["handshake_steps_us"].contains("collected")) << "the ack waited for the collection";
}

// Issue 20.2: six crashes at once while one /proc read stalls for 1 s ("testing":
// {"collector_delay_ms": 1000, "collector_delay_in": "cwd"}); the peer is this test process.
constexpr int kSlowProcCrashes = 6;

// The stall outlasts the handshake (800 ms): every crash is acked at its deadline with what the
// collectors before cwd found, and the record names the collectors that missed.
TEST_F(FakeKernelDaemon, EveryRecordKeepsWhatWasCollectedBeforeTheStall) {
  const auto all = crashes_at_once_with_test_hooks(
      R"({"handshake_timeout_ms": 800, "testing": {"collector_delay_ms": 1000, "collector_delay_in": "cwd"}})",
      kSlowProcCrashes);
  ASSERT_EQ(all.size(), static_cast<std::size_t>(kSlowProcCrashes));
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  for (const auto& r : all) {
    SCOPED_TRACE(r.id);
    EXPECT_EQ(r.state, DumpState::Complete) << r.reason;
    EXPECT_EQ(r.pid, ::getpid());
    EXPECT_EQ(r.exe, exe);
    EXPECT_EQ(r.comm, std::filesystem::path(exe).filename().string().substr(0, 15));
    EXPECT_FALSE(r.argv.empty());
    EXPECT_EQ(r.argv[0], ::program_invocation_name);
    EXPECT_TRUE(r.cwd.empty()) << "cwd stalled past the deadline";
    const auto& inc = r.extra[extras::kMetadataIncomplete];
    ASSERT_TRUE(inc.is_object()) << r.extra.dump();
    const auto missed = inc["missed"].get<std::vector<std::string>>();
    ASSERT_FALSE(missed.empty());
    EXPECT_EQ(missed.front(), "cwd");
    EXPECT_NE(std::find(missed.begin(), missed.end(), "cgroup"), missed.end());
    EXPECT_NE(std::find(missed.begin(), missed.end(), "maps"), missed.end());
    EXPECT_EQ(std::find(missed.begin(), missed.end(), "comm"), missed.end());
    EXPECT_EQ(r.extra[extras::kCollectErrors].value("cwd", ""), "missed: handshake deadline");
  }
  // dumpctl info says so.
  const auto [st, info] = run_capture({DUMPCTL_BIN, "--store", store_, "info", all[0].id});
  EXPECT_EQ(st.exit_code(), 0) << info;
  EXPECT_NE(info.find("incomplete (handshake deadline reached while collecting); missed: cwd, cgroup"), std::string::npos)
      << info;
  // And the log, once per crash, with its pid and the missed collectors.
  const std::string log = daemon_->log();
  std::size_t lines = 0;
  for (std::size_t at = 0; (at = log.find("metadata incomplete", at)) != std::string::npos; ++at) ++lines;
  EXPECT_EQ(lines, static_cast<std::size_t>(kSlowProcCrashes)) << log;
  EXPECT_NE(log.find("pid " + std::to_string(::getpid())), std::string::npos);
  EXPECT_NE(log.find("missed: cwd, cgroup, limits, fds"), std::string::npos) << log;
}

// The stall ends just as the handshake deadline expires (both 1000 ms): whichever comes first, the
// ack is sent and every crash stored. The deadline used to close the socket under an ack being
// written when the collection came back at that moment.
TEST_F(FakeKernelDaemon, ACollectionReturningAtTheDeadlineStillAcks) {
  const auto all = crashes_at_once_with_test_hooks(
      R"({"handshake_timeout_ms": 1000, "testing": {"collector_delay_ms": 1000, "collector_delay_in": "cwd"}})",
      kSlowProcCrashes);
  ASSERT_EQ(all.size(), static_cast<std::size_t>(kSlowProcCrashes));
  for (const auto& r : all) {
    EXPECT_EQ(r.state, DumpState::Complete) << r.reason;
    EXPECT_FALSE(r.comm.empty());
    EXPECT_TRUE(r.extra.contains(extras::kMetadataIncomplete)) << "cgroup and later ran after the 800 ms collection deadline";
  }
}

// The stall is shorter than the collection deadline (80 % of 3000 ms). With two collector threads
// serving every handshake, the six collections ran two at a time behind the stalled reads, and the
// last two reached their deadline; each now has a thread of its own, so none misses anything.
TEST_F(FakeKernelDaemon, AStalledReadDoesNotStarveOtherCrashes) {
  const auto all = crashes_at_once_with_test_hooks(R"({"handshake_timeout_ms": 3000, "collector_threads": 2,
            "testing": {"collector_delay_ms": 1000, "collector_delay_in": "cwd"}})",
                                                   kSlowProcCrashes);
  ASSERT_EQ(all.size(), static_cast<std::size_t>(kSlowProcCrashes));
  for (const auto& r : all) {
    SCOPED_TRACE(r.id);
    EXPECT_EQ(r.state, DumpState::Complete) << r.reason;
    EXPECT_FALSE(r.extra.contains(extras::kMetadataIncomplete)) << r.extra[extras::kMetadataIncomplete].dump();
    EXPECT_FALSE(r.cwd.empty());
    EXPECT_FALSE(r.cgroup.empty());
    EXPECT_TRUE(r.extra[extras::kProc].contains("maps"));
  }
}

TEST_F(FakeKernelDaemon, ConcurrentCrashesAreAllStored) {
  std::vector<std::thread> threads;
  std::atomic<int> dumped{0};
  for (int i = 0; i < 12; ++i)
    threads.emplace_back([&] {
      if (fk::task_released(fk::run(options(512 * 1024)))) ++dumped;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(dumped, 12);
  EXPECT_TRUE(wait_until(
      [&] {
        const auto all = records();
        return all.size() == 12 && std::all_of(all.begin(), all.end(), [](const DumpRecord& r) { return r.state == DumpState::Complete; });
      },
      20s));
}

}  // namespace
