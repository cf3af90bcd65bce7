// reaper: the init of a test "container". Runs a command as its child (never as itself, so the
// crash is not that of a pid namespace's init), waits, and reports how each run ended; it always
// exits 0 and never re-raises a child's signal (a parent that does, like unshare --fork or
// nsenter, would crash and dump too).
//
//   reaper [--hostname NAME] [--repeat N] -- COMMAND [ARGS...]
//
// Sets RLIMIT_CORE to unlimited first (as `ulimit -c unlimited` would), then for each of N runs
// (default 1) prints one line to stdout:
//   child_pid=<pid in our pid namespace> uid=<real uid as seen here> signaled=<0|1> signal=<n>
//   core_dumped=<0|1> exit=<n>
// core_dumped is WCOREDUMP of the child's wait status: whether the kernel reported a core dump.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  int i = 1;
  int repeat = 1;
  const char* hostname = nullptr;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--hostname" && i + 1 < argc) hostname = argv[++i];
    else if (a == "--repeat" && i + 1 < argc) repeat = std::atoi(argv[++i]);
    else if (a == "--") { ++i; break; }
    else { std::fprintf(stderr, "reaper: unknown argument %s\n", argv[i]); return 2; }
  }
  if (i >= argc || repeat < 1) {
    std::fprintf(stderr, "usage: reaper [--hostname NAME] [--repeat N] -- COMMAND [ARGS...]\n");
    return 2;
  }
  if (hostname && ::sethostname(hostname, std::strlen(hostname)) != 0) {
    std::perror("reaper: sethostname");
    return 2;
  }
  const rlimit unlimited{RLIM_INFINITY, RLIM_INFINITY};
  if (::setrlimit(RLIMIT_CORE, &unlimited) != 0) {
    std::perror("reaper: setrlimit(RLIMIT_CORE)");
    return 2;
  }
  for (int run = 0; run < repeat; ++run) {
    std::fflush(stdout);
    const pid_t pid = ::fork();
    if (pid < 0) {
      std::perror("reaper: fork");
      return 2;
    }
    if (pid == 0) {
      ::execv(argv[i], argv + i);
      std::perror("reaper: execv");
      ::_exit(127);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) {
      if (errno != EINTR) {
        std::perror("reaper: waitpid");
        return 2;
      }
    }
    std::printf("child_pid=%d uid=%d signaled=%d signal=%d core_dumped=%d exit=%d\n", static_cast<int>(pid),
                static_cast<int>(::getuid()), WIFSIGNALED(status) ? 1 : 0, WIFSIGNALED(status) ? WTERMSIG(status) : 0,
                WIFSIGNALED(status) && WCOREDUMP(status) ? 1 : 0, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  std::fflush(stdout);
  return 0;
}
