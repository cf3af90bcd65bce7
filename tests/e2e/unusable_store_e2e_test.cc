// Real-kernel tests of an unusable store (issue 20, item 4): a real crash on a full store keeps its
// record (in the pending journal) while its core is refused with the reason, and the record moves
// into the index once space returns; keep_free holds while a real core is written.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "store/pending_journal.h"
#include "store/record_extras.h"
#include "tests/e2e/real_kernel_fixture.h"

using namespace coredumpd;
using namespace coredumpd::test;
namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t kMebi = 1 << 20;

class UnusableStoreE2E : public RealKernel {
 protected:
  // Moves the store onto a tmpfs of `size` (the daemon is stopped); false if it cannot be mounted.
  bool store_on_tmpfs(const std::string& size) {
    pattern_.reset();
    daemon_->stop();
    fs::create_directories(store_);
    if (::mount("tmpfs", store_.c_str(), "tmpfs", 0, ("size=" + size + ",mode=0750").c_str()) != 0) return false;
    mounted_ = true;
    return true;
  }
  void TearDown() override {
    RealKernel::TearDown();  // stops the daemon before the tmpfs goes
    if (mounted_) ::umount2(store_.c_str(), MNT_DETACH);
  }
  std::string config(const std::string& extra = "") {
    pending_ = *dir_ / "pending";
    // No fallback (on by default): a refused core, not one kept on /run (early_boot_store_e2e_test.cc).
    return R"({"defaults": {"post_dump": []}, "fallback_max_bytes": 0, "pending_dir": ")" + pending_ + "\"" + extra + "}";
  }
  std::uint64_t free_bytes() {
    struct statvfs sv{};
    if (::statvfs(store_.c_str(), &sv) != 0) return 0;
    return static_cast<std::uint64_t>(sv.f_bavail) * sv.f_frsize;
  }

  bool mounted_ = false;
  std::string pending_;
};

TEST_F(UnusableStoreE2E, CrashOnAFullStoreKeepsItsRecordUntilSpaceReturns) {
  if (!store_on_tmpfs("16m")) GTEST_SKIP() << "cannot mount a tmpfs here";
  restart_daemon(config());
  pid_t first = 0;
  ASSERT_TRUE(complete_dump_of_crash({"--mode", "segv"}, &first));

  // Full to the last byte while the daemon is down (its index's WAL is gone at a clean stop).
  pattern_.reset();
  daemon_->stop();
  {
    const int fd = ::open((store_ + "/filler").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::fallocate(fd, 0, 0, static_cast<off_t>(free_bytes())), 0) << std::strerror(errno);
    ::close(fd);
  }
  restart_daemon(config());
  EXPECT_TRUE(wait_until([&] { return daemon_->log().find("store filesystem is full") != std::string::npos; }, 5s))
      << daemon_->log();

  pid_t refused = 0;
  const auto st = crash({"--mode", "segv", "--touch-mib", "8"}, &refused);
  ASSERT_TRUE(st.exited);
  EXPECT_EQ(st.term_signal(), SIGSEGV);
  EXPECT_FALSE(st.core_dumped()) << "REJECT: the kernel made no core";
  PendingContents pending;
  ASSERT_TRUE(wait_until([&] { return (pending = read_pending_journal(pending_)).entries.size() == 1; }, 15s))
      << daemon_->log();
  const DumpRecord kept = pending.entries[0].record;
  EXPECT_EQ(kept.pid, refused);
  EXPECT_EQ(kept.state, DumpState::Rejected);
  EXPECT_NE(kept.reason.find("store filesystem is full"), std::string::npos) << kept.reason;
  EXPECT_EQ(fs::path(kept.exe).filename(), "crasher");
  // The log line of the refusal names the executable, not only the pid.
  // The signal is known at the handshake only where the kernel reports it (PIDFD_INFO_COREDUMP_SIGNAL,
  // 6.19+: scripts/vm-test.sh's 7.3); 6.18 leaves it to a core that was refused.
  const std::string sig = kept.signal ? "SIGSEGV" : "signal unknown";
  EXPECT_NE(daemon_->log().find("(" + kept.exe + ") " + sig + ": rejecting the core: store filesystem is full"),
            std::string::npos)
      << daemon_->log();

  fs::remove(store_ + "/filler");  // space returns: the next crash is stored, the journal moved in
  pid_t after = 0;
  ASSERT_TRUE(complete_dump_of_crash({"--mode", "segv"}, &after));
  const auto moved = Index(store_, false).get(kept.id);
  ASSERT_TRUE(moved) << daemon_->log();
  EXPECT_EQ(moved->pid, refused);
  EXPECT_EQ(moved->state, DumpState::Rejected);
  EXPECT_TRUE(moved->extra.contains(extras::kJournaled)) << moved->extra.dump();
  EXPECT_TRUE(read_pending_journal(pending_).entries.empty());
  EXPECT_EQ(Index(store_, false).list().size(), 3u);
}

TEST_F(UnusableStoreE2E, KeepFreeHoldsWhileARealCoreIsWritten) {
  if (!store_on_tmpfs("96m")) GTEST_SKIP() << "cannot mount a tmpfs here";
  restart_daemon(config(R"(, "retention": {"keep_free": "40M"})"));
  pid_t pid = 0;
  const auto st = crash({"--mode", "segv", "--touch-mib", "80", "--fill", "random"}, &pid);
  ASSERT_TRUE(st.exited);
  EXPECT_TRUE(st.core_dumped());
  const auto rec = stored_dump_of(pid, 60s);
  ASSERT_TRUE(rec);
  ASSERT_EQ(rec->state, DumpState::Truncated) << rec->reason;
  expect_released_promptly(*rec);
  EXPECT_EQ(rec->reason.rfind("keep_free reached: ", 0), 0u) << rec->reason;
  const auto kept = rec->extra.value(extras::kStoredCoreBytes, std::uint64_t{0});
  EXPECT_GT(kept, 0u);
  EXPECT_LT(kept, rec->core_size);
  EXPECT_TRUE(fs::exists(store_ + "/" + rec->path)) << "a truncated core keeps what came";
  EXPECT_GE(free_bytes(), 40 * kMebi);
}

}  // namespace
