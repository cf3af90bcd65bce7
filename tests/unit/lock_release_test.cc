// daemon/proc/lock_release.h: the locks read from fdinfo and /proc/locks, the verdict rules of
// CLOSE_FILES, and the kcmp scan against real processes sharing an open file or the fd table.
#include "daemon/proc/lock_release.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>

#include <gtest/gtest.h>

namespace coredumpd {
namespace {

using json = nlohmann::json;

TEST(HeldLocks, OneLockPerLineWithEveryDescriptorShowingIt) {
  const json fds = {
      {{"fd", 0}, {"target", "/dev/null"}},
      {{"fd", 3}, {"target", "/tmp/a.lock"}, {"locks", {"1: FLOCK  ADVISORY  WRITE 4242 08:01:77 0 EOF"}}},
      {{"fd", 4}, {"target", "/tmp/a.lock"}, {"locks", {"1: FLOCK  ADVISORY  WRITE 4242 08:01:77 0 EOF"}}},
      {{"fd", 5}, {"target", "/tmp/b.lock"}, {"locks", {"2: POSIX  ADVISORY  READ 4242 08:01:78 0 99", "3: -> POSIX  ADVISORY  WRITE 4242 08:01:78 0 EOF"}}},
  };
  const json proc_locks = {"7: POSIX  ADVISORY  READ 4242 08:01:78 0 99", "8: FLOCK  ADVISORY  WRITE 4242 08:01:90 0 EOF"};
  const auto locks = held_locks(fds, proc_locks);
  ASSERT_EQ(locks.size(), 3u);
  EXPECT_EQ(locks[0].type, "FLOCK");
  EXPECT_EQ(locks[0].access, "WRITE");
  EXPECT_EQ(locks[0].target, "/tmp/a.lock");
  EXPECT_EQ(locks[0].fds, (std::vector<int>{3, 4}));
  EXPECT_EQ(locks[0].line, "FLOCK ADVISORY WRITE 4242 08:01:77 0 EOF");
  EXPECT_EQ(locks[1].type, "POSIX");
  EXPECT_EQ(locks[1].access, "READ");
  EXPECT_EQ(locks[1].fds, (std::vector<int>{5}));  // the /proc/locks line is the same lock; the waiter is none
  EXPECT_EQ(locks[2].target, "08:01:90");
  EXPECT_TRUE(locks[2].fds.empty());
  EXPECT_TRUE(held_locks(json::array(), json::array()).empty());
  EXPECT_TRUE(held_locks("junk", 5).empty());
}

HeldLock lock(const char* type, std::vector<int> fds = {3}) { return {type, "WRITE", "/l", std::string(type) + " ...", std::move(fds)}; }

TEST(CloseFilesVerdict, FollowsTheOwnersOfEachLockFamily) {
  Sharing alone;
  for (const char* t : {"POSIX", "OFDLCK", "FLOCK"}) EXPECT_EQ(close_files_verdict(lock(t), alone).release, Release::Released) << t;

  Sharing forked;  // another process holds the same open file as fd 3
  forked.file_shared_with[3] = 1234;
  EXPECT_EQ(close_files_verdict(lock("POSIX"), forked).release, Release::Released) << "POSIX locks belong to the table";
  const auto flock = close_files_verdict(lock("FLOCK"), forked);
  EXPECT_EQ(flock.release, Release::Kept);
  EXPECT_EQ(flock.why, "open file shared with pid 1234 (flock)");
  EXPECT_EQ(close_files_verdict(lock("OFDLCK"), forked).why, "open file shared with pid 1234 (OFD)");
  EXPECT_EQ(close_files_verdict(lock("FLOCK", {4, 3}), forked).release, Release::Kept) << "any dup shared";
  EXPECT_EQ(close_files_verdict(lock("FLOCK", {4}), forked).release, Release::Released);

  Sharing table;
  table.table_shared_with = 99;
  for (const char* t : {"POSIX", "OFDLCK", "FLOCK"}) {
    const auto v = close_files_verdict(lock(t), table);
    EXPECT_EQ(v.release, Release::Kept);
    EXPECT_EQ(v.why, "fd table shared with pid 99 (CLONE_FILES)");
  }

  Sharing cut;
  cut.incomplete = "stopped after 4096 processes: cap";
  const auto unknown = close_files_verdict(lock("POSIX"), cut);
  EXPECT_EQ(unknown.release, Release::Unknown);
  EXPECT_EQ(unknown.why, "scan of other processes incomplete: stopped after 4096 processes: cap");
  cut.file_shared_with[3] = 7;
  EXPECT_EQ(close_files_verdict(lock("FLOCK"), cut).release, Release::Kept) << "a sharer found decides";

  EXPECT_EQ(close_files_verdict(lock("FLOCK", {}), alone).why, "not held through the crasher's fd table");

  const json j = lock_release_json({lock("FLOCK")}, forked);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["close_files"], "kept");
  EXPECT_EQ(j[0]["fds"], json::array({3}));
  EXPECT_EQ(lock_release_json({lock("POSIX")}, alone)[0].contains("why"), false);
}

// Real processes: children that only pause (async-signal-safe after fork).
class Children {
 public:
  ~Children() {
    for (pid_t g : grandchildren_) ::kill(g, SIGKILL);  // reaped by init once their parent is gone
    for (pid_t p : pids_) {
      ::kill(p, SIGKILL);
      ::waitpid(p, nullptr, 0);
    }
  }
  pid_t fork_pausing() {
    const pid_t p = ::fork();
    if (p == 0)
      for (;;) ::pause();
    pids_.push_back(p);
    return p;
  }
  // A child that clones a CLONE_FILES grandchild (sharing the child's table) and reports its pid.
  std::pair<pid_t, pid_t> fork_with_table_sharer() {
    std::array<int, 2> pipe_fds{};
    if (::pipe(pipe_fds.data()) != 0) return {-1, -1};
    const pid_t p = ::fork();
    if (p == 0) {
      const long g = ::syscall(SYS_clone, CLONE_FILES | SIGCHLD, 0, 0, 0, 0);
      if (g == 0)
        for (;;) ::pause();
      const pid_t gp = static_cast<pid_t>(g);
      (void)!::write(pipe_fds[1], &gp, sizeof(gp));
      for (;;) ::pause();
    }
    pids_.push_back(p);
    pid_t g = -1;
    (void)!::read(pipe_fds[0], &g, sizeof(g));
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    if (g > 0) grandchildren_.push_back(g);
    return {p, g};
  }
  std::vector<pid_t> grandchildren_;

 private:
  std::vector<pid_t> pids_;
};

TEST(ScanSharing, FindsTheProcessHoldingTheSameOpenFile) {
  const int fd = ::open("/proc/self/stat", O_RDONLY);  // not CLOEXEC: both children get this open file
  ASSERT_GE(fd, 0);
  const int other = ::open("/proc/self/stat", O_RDONLY);  // another open file of the same inode
  Children kids;
  const pid_t crasher = kids.fork_pausing();
  const pid_t sharer = kids.fork_pausing();
  ::close(fd);
  ::close(other);
  const std::array<int, 2> mine{fd, other};
  Sharing s = scan_sharing(crasher, mine, {});
  if (s.incomplete.find("kcmp") != std::string::npos) GTEST_SKIP() << "no kcmp here: " << s.incomplete;
  EXPECT_TRUE(s.incomplete.empty()) << s.incomplete;
  EXPECT_EQ(s.not_compared.count(crasher), 0u);
  EXPECT_FALSE(s.table_shared_with);
  ASSERT_TRUE(s.file_shared_with.contains(fd));
  EXPECT_EQ(s.file_shared_with[fd], sharer);
  EXPECT_EQ(s.file_shared_with[other], sharer) << "the sharer has both open files";
  EXPECT_GT(s.processes_scanned, 0u);

  SharingScanLimits none;
  none.max_processes = 0;
  s = scan_sharing(crasher, mine, none);
  EXPECT_EQ(s.incomplete, "stopped after 0 processes: cap");
  EXPECT_TRUE(s.file_shared_with.empty());
}

TEST(ScanSharing, FindsTheProcessSharingTheFdTable) {
  Children kids;
  const auto [crasher, grandchild] = kids.fork_with_table_sharer();
  ASSERT_GT(grandchild, 0);
  const Sharing s = scan_sharing(crasher, {}, {});
  if (s.incomplete.find("kcmp") != std::string::npos) GTEST_SKIP() << "no kcmp here: " << s.incomplete;
  ASSERT_TRUE(s.table_shared_with) << s.incomplete;
  EXPECT_EQ(*s.table_shared_with, grandchild);
  // Unrelated: a plain child shares nothing with the crasher.
  const pid_t loner = kids.fork_pausing();
  const Sharing none = scan_sharing(loner, {}, {});
  EXPECT_FALSE(none.table_shared_with);
}

}  // namespace
}  // namespace coredumpd
