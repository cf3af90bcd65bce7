// Integration tests of issue 20.2 under the fake kernel: six crashes at once while one /proc read
// stalls for 1 s ("testing": {"collector_delay_ms": 1000, "collector_delay_in": "cwd"}). The peer
// is this test process (--allow-unverified-peers), so its /proc entry is what the collectors read.
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <memory>
#include <thread>

#include "store/index.h"
#include "store/record_extras.h"
#include "tests/fake_kernel/fake_kernel.h"
#include "tests/support/test_support.h"

using namespace coredumpd;
using namespace coredumpd::test;
namespace fk = coredumpd::fake_kernel;

namespace {

constexpr int kCrashes = 6;

class SlowProc : public ::testing::Test {
 protected:
  void start(const std::string& config) {
    dir_ = std::make_unique<TempDir>();
    socket_ = *dir_ / "s";
    store_ = *dir_ / "store";
    std::ofstream(*dir_ / "config.json") << config;
    daemon_ = std::make_unique<Daemon>(COREDUMPD_BIN, socket_, store_, *dir_ / "log",
                                       std::vector<std::string>{"--allow-unverified-peers", "--config", *dir_ / "config.json"});
  }
  void TearDown() override {
    if (HasFailure() && daemon_) std::fprintf(stderr, "coredumpd log:\n%s\n", daemon_->log().c_str());
  }

  // kCrashes fake-kernel crashes at once; each must be dumped.
  void crash_all_at_once() {
    std::vector<std::thread> threads;
    std::atomic<int> dumped{0};
    for (int i = 0; i < kCrashes; ++i)
      threads.emplace_back([&] {
        fk::Options o;
        o.socket_path = socket_;
        o.core = fk::CoreSource::pattern(256 * 1024, 3, 4096, 7, true);
        o.timeout = std::chrono::milliseconds(15'000);
        if (fk::run(o).outcome == fk::Outcome::Dumped) ++dumped;
      });
    for (auto& t : threads) t.join();
    EXPECT_EQ(dumped, kCrashes);
  }

  // Every record, once kCrashes exist and none is in progress (bounded wait).
  std::vector<DumpRecord> settled_records() {
    std::vector<DumpRecord> all;
    wait_until(
        [&] {
          try {
            all = Index(store_, false).list();
          } catch (const IndexError&) {
            all.clear();
          }
          return all.size() == kCrashes && std::none_of(all.begin(), all.end(), [](const DumpRecord& r) {
                   return r.state == DumpState::InProgress;
                 });
        },
        30s);
    return all;
  }

  std::unique_ptr<TempDir> dir_;
  std::string socket_, store_;
  std::unique_ptr<Daemon> daemon_;
  ScopedCoreLimit core_limit_{~0ULL};  // the peer is this process: its RLIMIT_CORE is policy input
};

// The stall outlasts the handshake (800 ms): every crash is acked at its deadline with what the
// collectors before cwd found, and the record names the collectors that missed.
TEST_F(SlowProc, EveryRecordKeepsWhatWasCollectedBeforeTheStall) {
  start(R"({"handshake_timeout_ms": 800, "testing": {"collector_delay_ms": 1000, "collector_delay_in": "cwd"}})");
  crash_all_at_once();
  const auto all = settled_records();
  ASSERT_EQ(all.size(), static_cast<std::size_t>(kCrashes));
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
  EXPECT_EQ(lines, static_cast<std::size_t>(kCrashes)) << log;
  EXPECT_NE(log.find("pid " + std::to_string(::getpid())), std::string::npos);
  EXPECT_NE(log.find("missed: cwd, cgroup, limits, fds"), std::string::npos) << log;
}

// The stall ends just as the handshake deadline expires (both 1000 ms): whichever comes first, the
// ack is sent and every crash stored. The deadline used to close the socket under an ack being
// written when the collection came back at that moment.
TEST_F(SlowProc, ACollectionReturningAtTheDeadlineStillAcks) {
  start(R"({"handshake_timeout_ms": 1000, "testing": {"collector_delay_ms": 1000, "collector_delay_in": "cwd"}})");
  crash_all_at_once();
  const auto all = settled_records();
  ASSERT_EQ(all.size(), static_cast<std::size_t>(kCrashes));
  for (const auto& r : all) {
    EXPECT_EQ(r.state, DumpState::Complete) << r.reason;
    EXPECT_FALSE(r.comm.empty());
    EXPECT_TRUE(r.extra.contains(extras::kMetadataIncomplete)) << "cgroup and later ran after the 800 ms collection deadline";
  }
}

// The stall is shorter than the collection deadline (80 % of 3000 ms). With two collector threads
// serving every handshake, the six collections ran two at a time behind the stalled reads, and the
// last two reached their deadline; each now has a thread of its own, so none misses anything.
TEST_F(SlowProc, AStalledReadDoesNotStarveOtherCrashes) {
  start(R"({"handshake_timeout_ms": 3000, "collector_threads": 2,
            "testing": {"collector_delay_ms": 1000, "collector_delay_in": "cwd"}})");
  crash_all_at_once();
  const auto all = settled_records();
  ASSERT_EQ(all.size(), static_cast<std::size_t>(kCrashes));
  for (const auto& r : all) {
    SCOPED_TRACE(r.id);
    EXPECT_EQ(r.state, DumpState::Complete) << r.reason;
    EXPECT_FALSE(r.extra.contains(extras::kMetadataIncomplete)) << r.extra[extras::kMetadataIncomplete].dump();
    EXPECT_FALSE(r.cwd.empty());
    EXPECT_FALSE(r.cgroup.empty());
    EXPECT_TRUE(r.extra[extras::kProc].contains("maps"));
  }
}

}  // namespace
