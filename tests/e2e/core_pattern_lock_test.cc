// CorePatternLock after a holder was killed by SIGKILL (a ctest timeout: no handler, no destructor):
// the dead socket it left in kernel.core_pattern is recovered before the next holder saves the
// pattern, and a pattern someone still listens on, or one outside the test temp dirs, is left alone.
// Real kernel.core_pattern writes: needs root and Linux 6.17+ ("@@"), like the other e2e tests.
#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <csignal>
#include <cstring>
#include <string>

#include "tests/e2e/real_kernel_fixture.h"
#include "tests/support/core_pattern_state.h"
#include "tests/support/test_support.h"

namespace coredumpd::test {
namespace {

constexpr const char* kLockPath = "/run/lock/coredumpd-core_pattern.lock";
constexpr const char* kPatternPath = "/proc/sys/kernel/core_pattern";
// The machine's own pattern during a test: a pipe (never treated as stale) that does nothing, and
// is not "core", so a restore from the state file is told apart from the "core" fallback.
constexpr const char* kOriginal = "|/bin/true coredumpd-test-original";

std::string current_pattern() {
  std::string p = read_file(kPatternPath).value_or("");
  while (!p.empty() && p.back() == '\n') p.pop_back();
  return p;
}

// argv[0] of this process, as /proc/<pid>/cmdline starts.
std::string cmdline_of_self() {
  const std::string c = read_file("/proc/self/cmdline").value_or("");
  return c.substr(0, c.find('\0'));
}

// Sets core_pattern as an administrator would: under the flock, but with no CorePatternLock (no
// state file, no recovery). Returns the pattern it replaced.
std::string set_machine_pattern(const std::string& pattern) {
  const int fd = ::open(kLockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0 || ::flock(fd, LOCK_EX) != 0) throw std::runtime_error("cannot take the core_pattern lock");
  const std::string before = current_pattern();
  const int p = ::open(kPatternPath, O_WRONLY);
  const bool ok = p >= 0 && ::write(p, pattern.data(), pattern.size()) == static_cast<ssize_t>(pattern.size());
  if (p >= 0) ::close(p);
  ::close(fd);
  if (!ok) throw std::runtime_error("cannot write core_pattern " + pattern);
  return before;
}

// A unix stream socket bound at `path`; listening if `listen`, else bound only (connect() is refused).
int bound_socket(const std::string& path, bool listen) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  if (fd < 0 || ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0 ||
      (listen && ::listen(fd, 8) != 0))
    throw std::runtime_error("cannot bind " + path);
  return fd;
}

class StaleCorePattern : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_REAL_KERNEL("core_pattern lock test");
    original_ = set_machine_pattern(kOriginal);
    set_ = true;
  }

  void TearDown() override {
    if (set_) set_machine_pattern(original_);
  }

  // A child takes CorePatternLock(pattern) and is SIGKILLed while holding it, as by a ctest
  // timeout. Expects the dead holder to have left `pattern` in place (the case to recover from).
  void holder_killed_by_sigkill(const std::string& pattern) {
    int ready[2];
    ASSERT_EQ(::pipe2(ready, O_CLOEXEC), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::close(ready[0]);
      try {
        CorePatternLock lock(pattern);
        (void)!::write(ready[1], "1", 1);
        for (;;) ::pause();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child: %s\n", e.what());
        ::_exit(1);
      }
    }
    ::close(ready[1]);
    // The lock may be busy with another build tree's test for minutes: CorePatternLock's own bound.
    pollfd pfd{ready[0], POLLIN, 0};
    const int polled = ::poll(&pfd, 1, 21 * 60 * 1000);
    char byte = 0;
    const bool locked = polled == 1 && ::read(ready[0], &byte, 1) == 1;
    ::close(ready[0]);
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    ASSERT_TRUE(locked) << "the child never held the lock";
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    ASSERT_EQ(current_pattern(), pattern) << "the killed holder did not leave its pattern behind";
  }

  TempDir dir_;
  std::string original_;
  bool set_ = false;
};

TEST_F(StaleCorePattern, RefusedSocketOfAKilledHolderGivesBackWhatItSaved) {
  const std::string sock = dir_ / "dead.sock";
  ::close(bound_socket(sock, false));  // the socket file stays; connect() gets ECONNREFUSED
  holder_killed_by_sigkill("@@" + sock);
  CorePatternLock next("core");
  EXPECT_EQ(next.previous(), kOriginal);
}

TEST_F(StaleCorePattern, MissingSocketOfAKilledHolderGivesBackWhatItSaved) {
  holder_killed_by_sigkill("@" + (dir_ / "never-bound.sock"));  // ENOENT; the older "@" protocol
  CorePatternLock next("core");
  EXPECT_EQ(next.previous(), kOriginal);
}

TEST_F(StaleCorePattern, SocketSomeoneListensOnIsLeftAlone) {
  const std::string sock = dir_ / "live.sock";
  const int listener = bound_socket(sock, true);
  holder_killed_by_sigkill("@@" + sock);
  {
    CorePatternLock next("core");
    EXPECT_EQ(next.previous(), "@@" + sock);
  }
  ::close(listener);
}

TEST_F(StaleCorePattern, WithoutAStateFileATestTempSocketFallsBackToCore) {
  holder_killed_by_sigkill("@@" + (dir_ / "dead.sock"));
  clear_core_pattern_state();  // as if set by a test that records nothing
  CorePatternLock next("@@" + (dir_ / "next.sock"));
  EXPECT_EQ(next.previous(), "core");
}

TEST_F(StaleCorePattern, WithoutAStateFileASocketOutsideTestDirsIsLeftAlone) {
  const std::string foreign = "@@/run/coredumpd-test-not-a-test-dir.sock";  // nobody listens there
  holder_killed_by_sigkill(foreign);
  clear_core_pattern_state();
  CorePatternLock next("core");
  EXPECT_EQ(next.previous(), foreign);
}

// Two CorePatternLocks in one process would wait for each other for the whole bound: the second
// fails at once instead, naming this process (found through /proc/<pid>/fdinfo) as the holder.
TEST_F(StaleCorePattern, ASecondLockInTheSameProcessFailsAtOnceNamingTheHolder) {
  CorePatternLock first("core");
  try {
    CorePatternLock second("core");
    ADD_FAILURE() << "a second CorePatternLock was granted while the first is held";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("pid " + std::to_string(::getpid()) + " (" + cmdline_of_self()), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("this process"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace coredumpd::test
