// pidfd_exit_status() (daemon/proc/peer.h): the wait status PIDFD_INFO_EXIT gives once a task is
// reaped, waited for while its parent gets to it, and the reason when it does not come in time.
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include "daemon/proc/peer.h"
#include "util/unique_fd.h"

namespace coredumpd {
namespace {

using namespace std::chrono_literals;

// A child that sleeps until killed, and a pidfd for it.
struct Child {
  pid_t pid = -1;
  UniqueFd pidfd;
};

// PIDFD_INFO_EXIT came with Linux 6.15.
bool kernel_has_pidfd_info_exit() {
  utsname u{};
  int major = 0, minor = 0;
  return ::uname(&u) == 0 && std::sscanf(u.release, "%d.%d", &major, &minor) == 2 &&
         (major > 6 || (major == 6 && minor >= 15));
}

Child sleeping_child() {
  Child c;
  c.pid = ::fork();
  if (c.pid == 0) {
    for (;;) ::pause();
  }
  c.pidfd.reset(static_cast<int>(::syscall(SYS_pidfd_open, c.pid, 0)));
  return c;
}

TEST(PidfdExit, StatusOfAKilledTaskReapedWhileWaiting) {
  Child c = sleeping_child();
  ASSERT_GE(c.pid, 0);
  ASSERT_TRUE(c.pidfd) << "pidfd_open";
  ASSERT_EQ(::kill(c.pid, SIGKILL), 0);
  std::thread reaper([&] {  // the parent reaps late: the call must wait for it
    std::this_thread::sleep_for(100ms);
    ::waitpid(c.pid, nullptr, 0);
  });
  std::string error;
  const auto status = pidfd_exit_status(c.pidfd.get(), 5s, error);
  reaper.join();
  if (!kernel_has_pidfd_info_exit()) GTEST_SKIP() << "no PIDFD_INFO_EXIT before Linux 6.15: " << error;
  ASSERT_TRUE(status) << error;
  EXPECT_TRUE(WIFSIGNALED(*status));
  EXPECT_EQ(WTERMSIG(*status), SIGKILL);
  EXPECT_FALSE(WCOREDUMP(*status));
}

TEST(PidfdExit, AnUnreapedTaskGivesNoStatusAndSaysWhy) {
  Child c = sleeping_child();
  ASSERT_GE(c.pid, 0);
  ASSERT_TRUE(c.pidfd);
  ASSERT_EQ(::kill(c.pid, SIGKILL), 0);  // a zombie until reaped below
  std::string error;
  const auto status = pidfd_exit_status(c.pidfd.get(), 50ms, error);
  ::waitpid(c.pid, nullptr, 0);
  EXPECT_FALSE(status);
  EXPECT_EQ(error, "no exit status from PIDFD_INFO_EXIT within 50 ms (Linux 6.15+, once the task's parent reaped it)");
}

}  // namespace
}  // namespace coredumpd
