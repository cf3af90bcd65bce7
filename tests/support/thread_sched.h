// Scheduling facts of another process's threads, read from /proc: what the tests of the
// compressor's SCHED_IDLE and nice 10 (README.md) compare with.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/test_support.h"

namespace coredumpd::test {

/// One thread of a process as the kernel describes it.
struct ThreadSched {
  pid_t tid = 0;
  int policy = -1;  ///< /proc/<pid>/task/<tid>/stat field 41: 0 SCHED_OTHER, 3 SCHED_BATCH, 5 SCHED_IDLE
  int nice = 0;     ///< field 19, -20..19
};

/// The threads of `pid` whose name (/proc/<pid>/task/<tid>/comm) is `comm`, with their policy and
/// nice. Threads that end while being read are left out; an unreadable process gives none.
inline std::vector<ThreadSched> threads_named(pid_t pid, const std::string& comm) {
  std::vector<ThreadSched> found;
  const std::string task = "/proc/" + std::to_string(pid) + "/task";
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(task, ec)) {
    const auto name = read_file(e.path() / "comm");
    if (!name || *name != comm + "\n") continue;
    const auto f = proc_stat_fields(e.path() / "stat");
    if (f.size() < 41) continue;
    found.push_back({static_cast<pid_t>(std::stol(e.path().filename().string())), std::stoi(f[40]), std::stoi(f[18])});
  }
  return found;
}

}  // namespace coredumpd::test
