// close-files-bench: how long a crashed process keeps its lock, with and without
// COREDUMP_CLOSE_FILES, for a core of N MiB — on the fake kernel, since Linux 6.18 cannot offer
// the flag. Not a test: it reports, it asserts nothing.
//
// The "crashing task" is a child process holding a POSIX write lock. The fake kernel plays its
// dump against a real coredumpd. With CLOSE_FILES acked, the fake kernel's close-files step ends
// the child (its fd table goes, the lock with it), as the RFC kernel does before the first dump
// byte; without it, the child lives until the dump is over and the daemon has released the task
// (the lock goes at exit). A watcher polls the lock with F_OFD_SETLK every 200 us.
//
//   close-files-bench --coredumpd PATH [--core-mib 1024] [--reps 3]
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/fake_kernel/fake_kernel.h"
#include "tests/support/test_support.h"
#include "util/unique_fd.h"

namespace fk = coredumpd::fake_kernel;
namespace cp = coredumpd::protocol;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

// A child that takes a write lock on `path`, says so on `ready`, and waits to be killed.
pid_t start_lock_holder(const std::string& path) {
  int ready[2];
  if (::pipe(ready) < 0) std::exit(1);
  coredumpd::UniqueFd ready_read(ready[0]), ready_write(ready[1]);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0600);
    struct flock fl{};
    fl.l_type = F_WRLCK;
    if (fd < 0 || ::fcntl(fd, F_SETLK, &fl) < 0) ::_exit(1);
    (void)!::write(ready_write.get(), "r", 1);
    for (;;) ::pause();
  }
  char c;
  ready_write.reset();
  if (::read(ready_read.get(), &c, 1) != 1) std::exit(1);
  return pid;
}

void end_child(pid_t pid) {
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

struct Sample {
  double lock_released_ms = 0;  // crash -> lock free
  double dump_done_ms = 0;      // crash -> task released by the daemon (fake kernel's WAIT ended)
  bool ok = false;
};

Sample run_once(const std::string& socket, const std::string& lock_path, std::uint64_t core_bytes, bool close_files) {
  const pid_t holder = start_lock_holder(lock_path);
  std::atomic<bool> stop{false};
  Clock::time_point released{};
  const coredumpd::UniqueFd probe(::open(lock_path.c_str(), O_RDWR));
  const auto crashed = Clock::now();
  std::thread watcher([&] {
    struct flock fl{};
    fl.l_type = F_WRLCK;
    while (!stop) {
      if (::fcntl(probe.get(), F_OFD_SETLK, &fl) == 0) {
        released = Clock::now();
        return;
      }
      std::this_thread::sleep_for(200us);
    }
  });

  fk::Options o;
  o.socket_path = socket;
  o.request_size = cp::COREDUMP_REQ_SIZE_VER1;
  o.size_ack = cp::COREDUMP_ACK_SIZE_VER1;
  o.mask = cp::COREDUMP_MASK_VER0 | (close_files ? cp::COREDUMP_CLOSE_FILES_DEFAULT : 0);
  o.core = fk::CoreSource::pattern(core_bytes);
  o.chunk_size = 1 << 20;
  o.timeout = 300s;
  o.close_files = [&] { end_child(holder); };  // the RFC kernel drops the task's fd table here
  const auto res = fk::run(o);
  const auto done = Clock::now();
  if (!res.close_files_called) end_child(holder);  // the task exits: its locks go now
  watcher.join();
  stop = true;

  Sample s;
  s.ok = res.outcome == fk::Outcome::Dumped && res.close_files_acked == close_files;
  s.lock_released_ms = std::chrono::duration<double, std::milli>(released - crashed).count();
  s.dump_done_ms = std::chrono::duration<double, std::milli>(done - crashed).count();
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string coredumpd;
  std::uint64_t core_mib = 1024;
  int reps = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--coredumpd") coredumpd = argv[i + 1];
    else if (a == "--core-mib") core_mib = std::stoull(argv[i + 1]);
    else if (a == "--reps") reps = std::stoi(argv[i + 1]);
  }
  if (coredumpd.empty()) {
    std::fprintf(stderr, "usage: close-files-bench --coredumpd PATH [--core-mib N] [--reps N]\n");
    return 2;
  }
  coredumpd::test::TempDir dir;
  coredumpd::test::ScopedCoreLimit unlimited(~0ULL);  // the peer is this process: its RLIMIT_CORE counts
  std::ofstream(dir / "config.json") << R"({"defaults": {"post_dump": []}})";
  coredumpd::test::Daemon daemon(coredumpd, dir / "s", dir / "store", dir / "coredumpd.log",
                                 {"--allow-unverified-peers", "--config", dir / "config.json"});

  std::vector<double> with_lock, with_done, without_lock, without_done;
  int failures = 0;
  for (int r = 0; r < reps; ++r) {
    for (const bool cf : {true, false}) {  // interleaved, so drift hits both
      const auto s = run_once(dir / "s", dir / "held.lock", core_mib << 20, cf);
      failures += s.ok ? 0 : 1;
      (cf ? with_lock : without_lock).push_back(s.lock_released_ms);
      (cf ? with_done : without_done).push_back(s.dump_done_ms);
    }
  }
  std::printf("close-files-bench: %llu MiB core, %d reps each, medians (coredumpd %s)\n",
              static_cast<unsigned long long>(core_mib), reps, coredumpd.c_str());
  std::printf("| CLOSE_FILES | crash -> lock released (ms) | crash -> task released (ms) |\n|---|---|---|\n");
  std::printf("| granted | %.1f | %.1f |\n", median(with_lock), median(with_done));
  std::printf("| not offered | %.1f | %.1f |\n", median(without_lock), median(without_done));
  std::printf("lock held %.1fx longer without CLOSE_FILES; %d failed runs\n",
              median(without_lock) / std::max(median(with_lock), 0.001), failures);
  return failures == 0 ? 0 : 1;
}
