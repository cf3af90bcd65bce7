// Unit tests of the /proc parsers used by the handshake collectors, and of a live collection.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "daemon/proc/collect.h"
#include "daemon/proc/proc_dir.h"

using namespace coredumpd;

TEST(Cmdline, EmptyArgumentsAndOddBytesSurvive) {
  const std::string raw("crasher\0with space\0\0new\nline\0\xff\xfe\0", 31);
  const auto argv = split_cmdline(raw);
  ASSERT_EQ(argv.size(), 5u);
  EXPECT_EQ(argv[0], "crasher");
  EXPECT_EQ(argv[1], "with space");
  EXPECT_EQ(argv[2], "");
  EXPECT_EQ(argv[3], "new\nline");
  EXPECT_EQ(argv[4], "\xff\xfe");
  EXPECT_TRUE(split_cmdline("").empty());
  EXPECT_EQ(split_cmdline(std::string("a\0\0", 3)), (std::vector<std::string>{"a", ""}));
}

TEST(Status, NSpidGivesHostAndInnermostIds) {
  EXPECT_EQ(parse_nspid("Name:\tx\nNSpid:\t9055\t2\nX: 1\n")->host_tid, 9055);
  EXPECT_EQ(parse_nspid("Name:\tx\nNSpid:\t9055\t40\t2\n")->ns_tid, 2);
  EXPECT_EQ(parse_nspid("Name:\tx\nNSpid:\t77\n")->ns_tid, 77);
  EXPECT_FALSE(parse_nspid("Name:\tx\n").has_value());
}

TEST(Limits, RlimitCoreSoftValue) {
  const std::string unlimited =
      "Limit                     Soft Limit           Hard Limit           Units     \n"
      "Max core file size        unlimited            unlimited            bytes     \n";
  EXPECT_EQ(parse_rlimit_core(unlimited), UINT64_MAX);
  const std::string zero = "Max core file size        0                    unlimited            bytes     \n";
  EXPECT_EQ(parse_rlimit_core(zero), 0u);
  EXPECT_FALSE(parse_rlimit_core("nothing here").has_value());
}

TEST(Locks, OnlyThisPidsLinesIncludingBlockedWaiters) {
  const std::string locks =
      "1: POSIX  ADVISORY  WRITE 1234 fe:00:55 0 EOF\n"
      "1: -> POSIX  ADVISORY  WRITE 1234 fe:00:55 0 EOF\n"
      "2: FLOCK  ADVISORY  WRITE 12345 fe:00:56 0 EOF\n"
      "3: OFDLCK ADVISORY  READ  -1 fe:00:57 0 EOF\n";
  const auto mine = locks_of_pid(locks, 1234);
  ASSERT_EQ(mine.size(), 2u);
  EXPECT_NE(mine[1].find("->"), std::string::npos);
  EXPECT_EQ(locks_of_pid(locks, 12345).size(), 1u);
}

TEST(Maps, EstimateCountsAnonymousWholeAndFilesOnePage) {
  const std::string maps =
      "00400000-00500000 r-xp 00000000 fe:00 123 /usr/bin/x\n"
      "7f0000000000-7f0000100000 rw-p 00000000 00:00 0 \n"
      "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]\n"
      "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]\n";
  EXPECT_EQ(estimate_core_bytes(maps), 4096u + 0x100000u + 0x21000u);
}

// A live run on a child process, as a handshake would do it (the child is alive, not crashing).
TEST(Collect, LiveChildIsDescribed) {
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(pipefd[1]);
    char c;
    (void)!::read(pipefd[0], &c, 1);  // wait until the parent is done
    ::_exit(0);
  }
  ::close(pipefd[0]);
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, child, 0));
  ASSERT_GE(pidfd, 0);
  std::string error;
  auto proc = ProcDir::open(pidfd, child, error);
  ASSERT_TRUE(proc) << error;
  CollectLimits limits;
  limits.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  const auto f = collect_handshake_facts(*proc, limits);
  EXPECT_TRUE(f.verified);
  EXPECT_FALSE(f.comm.empty());
  EXPECT_FALSE(f.exe.empty());
  EXPECT_FALSE(f.argv.empty());
  EXPECT_FALSE(f.hostname.empty());
  ASSERT_EQ(f.threads.size(), 1u);
  EXPECT_EQ(f.threads[0].host_tid, child);
  ASSERT_TRUE(f.proc.contains("fds"));
  bool saw_pipe = false;
  for (const auto& fd : f.proc["fds"]) saw_pipe |= fd.value("target", std::string()).rfind("pipe:", 0) == 0;
  EXPECT_TRUE(saw_pipe);
  EXPECT_TRUE(f.proc["namespaces"].contains("uts"));
  EXPECT_GT(f.estimated_core_bytes.value_or(0), 0u);
  EXPECT_EQ(f.proc["locks"], nlohmann::json::array()) << "the child holds no lock";

  // A deadline already passed skips every collector and says so.
  limits.deadline = std::chrono::steady_clock::now();
  const auto late = collect_handshake_facts(*proc, limits);
  EXPECT_EQ(late.errors.value("fds", ""), "skipped: handshake deadline");
  EXPECT_TRUE(late.comm.empty());

  ::close(pipefd[1]);
  int st = 0;
  ::waitpid(child, &st, 0);
  // Once reaped, the pidfd no longer proves anything: opening fails.
  EXPECT_FALSE(ProcDir::open(pidfd, child, error).has_value());
  ::close(pidfd);
}

// A child holding a POSIX lock on one file and a flock on another: both show in its fdinfo lock
// lines and both of its /proc/locks entries are collected (the fdinfo shortcut must not hide them).
TEST(Collect, LocksOfALiveChild) {
  char posix_path[] = "/tmp/coredumpd-collect-posix.XXXXXX";
  char flock_path[] = "/tmp/coredumpd-collect-flock.XXXXXX";
  const int posix_fd = ::mkstemp(posix_path);
  const int flock_fd = ::mkstemp(flock_path);
  ASSERT_GE(posix_fd, 0);
  ASSERT_GE(flock_fd, 0);
  int ready[2], done[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(done), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    struct flock fl{};
    fl.l_type = F_WRLCK;
    if (::fcntl(posix_fd, F_SETLK, &fl) < 0 || ::flock(flock_fd, LOCK_EX) < 0) ::_exit(1);
    (void)!::write(ready[1], "r", 1);
    char c;
    (void)!::read(done[0], &c, 1);
    ::_exit(0);
  }
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, child, 0));
  ASSERT_GE(pidfd, 0);
  std::string error;
  auto proc = ProcDir::open(pidfd, child, error);
  ASSERT_TRUE(proc) << error;
  CollectLimits limits;
  limits.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  const auto f = collect_handshake_facts(*proc, limits);
  (void)!::write(done[1], "d", 1);
  ::waitpid(child, nullptr, 0);
  ::close(pidfd);
  ::unlink(posix_path);
  ::unlink(flock_path);

  int with_lock_lines = 0;
  for (const auto& fd : f.proc["fds"]) with_lock_lines += fd.contains("locks") ? 1 : 0;
  EXPECT_EQ(with_lock_lines, 2) << f.proc["fds"].dump();
  ASSERT_EQ(f.proc["locks"].size(), 2u) << f.proc["locks"].dump();
  std::string all;
  for (const auto& l : f.proc["locks"]) all += l.get<std::string>() + "\n";
  EXPECT_NE(all.find("POSIX"), std::string::npos) << all;
  EXPECT_NE(all.find("FLOCK"), std::string::npos) << all;
}
