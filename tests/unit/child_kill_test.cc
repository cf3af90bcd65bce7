// Unit tests of kill_children_of_thread() (daemon/analyze/child_kill.h): it ends the children of
// the thread named, and only those.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "daemon/analyze/child_kill.h"

using namespace coredumpd;

namespace {

pid_t sleeper() {
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (;;) ::pause();
  }
  return pid;
}

}  // namespace

TEST(ChildKill, KillsTheChildrenOfThatThreadOnly) {
  const pid_t mine = sleeper();  // a child of this thread: must survive
  ASSERT_GT(mine, 0);
  std::promise<pid_t> tid, child;
  std::promise<int> status;
  std::thread t([&] {
    tid.set_value(::gettid());
    const pid_t pid = sleeper();
    child.set_value(pid);
    int st = 0;
    ::waitpid(pid, &st, 0);  // returns once the other thread killed it
    status.set_value(st);
  });
  const pid_t worker = tid.get_future().get();
  const pid_t theirs = child.get_future().get();
  ASSERT_GT(theirs, 0);
  EXPECT_EQ(kill_children_of_thread(worker), 1);
  const int st = status.get_future().get();
  t.join();
  EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) << st;
  EXPECT_EQ(::waitpid(mine, nullptr, WNOHANG), 0) << "this thread's own child was killed";
  EXPECT_EQ(kill_children_of_thread(worker), 0);  // none left
  ::kill(mine, SIGKILL);
  ::waitpid(mine, nullptr, 0);
}
