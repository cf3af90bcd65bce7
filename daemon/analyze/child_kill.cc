#include "daemon/analyze/child_kill.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <string>

#include "util/unique_fd.h"

namespace coredumpd {

namespace {

std::set<pid_t> children_of(pid_t tid) {
  std::set<pid_t> pids;
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/children");
  for (pid_t pid; in >> pid;) pids.insert(pid);
  return pids;
}

}  // namespace

int kill_children_of_thread(pid_t tid) {
  int killed = 0;
  for (const pid_t pid : children_of(tid)) {
    UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    if (!pidfd) continue;
    // Still listed after the pidfd was opened: the pid was not reaped (it cannot be reused before
    // its parent reaps it), so the pidfd is that child's.
    if (!children_of(tid).contains(pid)) continue;
    if (::syscall(SYS_pidfd_send_signal, pidfd.get(), SIGKILL, nullptr, 0) == 0) ++killed;
  }
  return killed;
}

}  // namespace coredumpd
