// close-files-bench: how long a crashed process keeps its lock against the size of its core, with
// and without COREDUMP_CLOSE_FILES, on the fake kernel (Linux 6.18 cannot offer the flag). Not a
// test: it reports, it asserts nothing.
//
// The crashing task is a fake-crasher (tests/fake_kernel/crasher.h): a real process holding a POSIX
// write lock, which makes the connect() to a real coredumpd. With CLOSE_FILES acked, the fake kernel
// closes its fd table before the first dump byte, as the RFC kernel does (every thread switches to
// an empty table; the kernel's lock code releases the lock); without it, the lock goes when the
// task ends, after the dump and the daemon's release. A watcher thread asks F_GETLK every 100 us.
//
//   close-files-bench --coredumpd PATH [--core-mib 16,64,256,1024] [--reps 3]
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "tests/fake_kernel/crasher.h"
#include "tests/fake_kernel/fake_kernel.h"
#include "tests/support/test_support.h"
#include "util/unique_fd.h"

namespace fk = coredumpd::fake_kernel;
namespace cp = coredumpd::protocol;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

struct Sample {
  double lock_released_ms = 0;  // crash (connect) -> lock free
  double task_released_ms = 0;  // crash -> the daemon released the task (the fake kernel's WAIT ended)
  bool ok = false;
};

double ms_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

Sample run_once(const std::string& socket, const std::string& lock_path, std::uint64_t core_bytes, bool close_files) {
  std::string error;
  auto crasher = fk::Crasher::start({FAKE_CRASHER_BIN, lock_path, fk::LockKind::Posix, fk::LockShare::None, 0}, error);
  if (!crasher) {
    std::fprintf(stderr, "close-files-bench: %s\n", error.c_str());
    return {};
  }
  const coredumpd::UniqueFd probe(::open(lock_path.c_str(), O_RDWR | O_CLOEXEC));
  std::atomic<bool> stop{false};
  Clock::time_point released{};
  const auto crashed = Clock::now();
  std::thread watcher([&] {
    while (!stop) {
      struct flock fl{};
      fl.l_type = F_WRLCK;
      if (::fcntl(probe.get(), F_GETLK, &fl) == 0 && fl.l_type == F_UNLCK) {
        released = Clock::now();
        return;
      }
      std::this_thread::sleep_for(100us);
    }
  });

  fk::Options o = fk::rfc_close_files_kernel(socket);
  if (!close_files) o.mask &= ~cp::COREDUMP_CLOSE_FILES_DEFAULT;  // a kernel without the RFC
  o.crasher = &*crasher;
  o.core = fk::CoreSource::pattern(core_bytes);
  o.chunk_size = 1 << 20;
  o.timeout = 300s;
  const auto res = fk::run(o);
  const auto done = Clock::now();
  crasher->end();  // the task exits after its dump: its locks go now at the latest
  watcher.join();
  stop = true;

  Sample s;
  // WAIT is the daemon's choice (policy): without it the task is released when the stream ends.
  s.ok = res.outcome == fk::Outcome::Dumped && res.stream_complete && (!res.wait_acked || res.wait_end == fk::WaitEnd::Eof) &&
         res.close_files_called == close_files;
  if (!s.ok)
    std::fprintf(stderr, "close-files-bench: run failed: outcome %s, wait %s, stream %s, close_files %d: %s\n",
                 std::string(fk::outcome_name(res.outcome)).c_str(), std::string(fk::wait_end_name(res.wait_end)).c_str(),
                 res.stream_complete ? "complete" : "incomplete", res.close_files_called ? 1 : 0, res.error.c_str());
  s.lock_released_ms = ms_between(crashed, released);
  s.task_released_ms = ms_between(crashed, done);
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"close-files-bench: lock hold time against core size, with and without COREDUMP_CLOSE_FILES"};
  std::string coredumpd;
  std::vector<std::uint64_t> sizes{16, 64, 256, 1024};
  int reps = 3;
  app.add_option("--coredumpd", coredumpd, "the coredumpd binary")->required();
  app.add_option("--core-mib", sizes, "core sizes in MiB")->delimiter(',');
  app.add_option("--reps", reps, "runs per size and mode (medians reported)")->check(CLI::Range(1, 100));
  CLI11_PARSE(app, argc, argv);

  coredumpd::test::TempDir dir;
  coredumpd::test::ScopedCoreLimit unlimited(~0ULL);  // the crasher inherits it: its RLIMIT_CORE is policy input
  std::ofstream(dir / "config.json") << R"({"defaults": {"post_dump": []}})";
  coredumpd::test::Daemon daemon(coredumpd, dir / "s", dir / "store", dir / "coredumpd.log",
                                 {"--allow-unverified-peers", "--config", dir / "config.json"});

  std::printf("close-files-bench: POSIX lock of a fake-crasher, medians of %d (coredumpd %s)\n", reps, coredumpd.c_str());
  std::printf("| core (MiB) | CLOSE_FILES granted: lock released (ms) | task released (ms) "
              "| not offered: lock released (ms) | task released (ms) |\n|---|---|---|---|---|\n");
  int failures = 0;
  for (const std::uint64_t mib : sizes) {
    std::vector<double> with_lock, with_task, without_lock, without_task;
    for (int r = 0; r < reps; ++r) {
      for (const bool cf : {true, false}) {  // interleaved, so drift hits both
        const Sample s = run_once(dir / "s", dir / "held.lock", mib << 20, cf);
        failures += s.ok ? 0 : 1;
        (cf ? with_lock : without_lock).push_back(s.lock_released_ms);
        (cf ? with_task : without_task).push_back(s.task_released_ms);
      }
    }
    std::printf("| %llu | %.1f | %.1f | %.1f | %.1f |\n", static_cast<unsigned long long>(mib), median(with_lock),
                median(with_task), median(without_lock), median(without_task));
    std::fflush(stdout);
  }
  std::printf("%d failed runs\n", failures);
  return failures == 0 ? 0 : 1;
}
