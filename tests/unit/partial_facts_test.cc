// Unit tests of what a handshake keeps when its deadline overtakes a stalled collector
// (daemon/proc/partial_facts.h) and of the pool that keeps one stalled read from holding up the
// collection of other crashes (daemon/proc/collector_pool.h).
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "daemon/proc/collect.h"
#include "daemon/proc/collector_pool.h"
#include "daemon/proc/partial_facts.h"
#include "daemon/proc/proc_dir.h"

using namespace coredumpd;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> names_after(const std::string& first) {
  std::vector<std::string> out;
  bool on = false;
  for (const char* n : handshake_collector_names()) {
    on = on || first == n;
    if (on) out.emplace_back(n);
  }
  return out;
}

// A live child, held until the test ends (its /proc entry is what the collectors read).
struct Child {
  pid_t pid = -1;
  int pidfd = -1;
  int release = -1;
  Child() {
    int p[2];
    if (::pipe(p) != 0) return;
    pid = ::fork();
    if (pid == 0) {
      ::close(p[1]);
      char c;
      (void)!::read(p[0], &c, 1);
      ::_exit(0);
    }
    ::close(p[0]);
    release = p[1];
    pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  }
  // Its /proc directory, proven by its pidfd; std::nullopt (with a test failure) if it cannot be had.
  std::optional<ProcDir> proc() const {
    std::string error;
    auto dir = pidfd >= 0 ? ProcDir::open(pidfd, pid, error) : std::nullopt;
    EXPECT_TRUE(dir) << error;
    return dir;
  }
  ~Child() {
    ::close(release);
    ::waitpid(pid, nullptr, 0);
    ::close(pidfd);
  }
};

}  // namespace

TEST(PartialFacts, MergeKeepsEarlierFieldsAndJoinsObjects) {
  HandshakeFacts into;
  into.comm = "crasher";
  into.proc["limits"] = "L";
  into.errors["cwd"] = "cwd: EACCES";
  HandshakeFacts delta;
  delta.exe = "/usr/bin/crasher";
  delta.argv = {"crasher", "--x"};
  delta.rlimit_core = 0;  // a set optional, even when 0, is a fact
  delta.proc["maps"] = "M";
  delta.timings_us["exe"] = 12;
  merge_facts(into, std::move(delta));
  EXPECT_EQ(into.comm, "crasher");
  EXPECT_EQ(into.exe, "/usr/bin/crasher");
  EXPECT_EQ(into.argv.size(), 2u);
  EXPECT_EQ(into.rlimit_core, 0u);
  EXPECT_EQ(into.proc["limits"], "L");
  EXPECT_EQ(into.proc["maps"], "M");
  EXPECT_EQ(into.errors["cwd"], "cwd: EACCES");
  EXPECT_EQ(into.timings_us["exe"], 12);
}

TEST(PartialFacts, SnapshotNamesEveryCollectorNotFinished) {
  PartialFacts p;
  HandshakeFacts comm;
  comm.comm = "crasher";
  p.publish("comm", std::move(comm));
  p.note_error("exe", "exe: ESRCH");  // ran and failed, but never finished: still missed
  const auto snap = p.snapshot("missed: handshake deadline");
  EXPECT_EQ(snap.comm, "crasher");
  EXPECT_FALSE(p.finished());
  EXPECT_EQ(snap.missed, names_after("exe"));
  EXPECT_EQ(snap.errors["exe"], "exe: ESRCH") << "a collector's own error is kept";
  EXPECT_EQ(snap.errors["cmdline"], "missed: handshake deadline");
  EXPECT_FALSE(snap.errors.contains("comm"));
  // The snapshot is a copy: later publishing does not change it, and the next one sees more.
  HandshakeFacts exe;
  exe.exe = "/bin/x";
  p.publish("exe", std::move(exe));
  EXPECT_TRUE(snap.exe.empty());
  EXPECT_EQ(p.snapshot("x").missed, names_after("cmdline"));
}

// A live collection whose "cwd" read stalls past the deadline: the snapshot taken at the deadline
// (on another thread, as the session does) has what the collectors before cwd read.
TEST(PartialFacts, StalledCollectorKeepsWhatCameBefore) {
  Child child;
  auto proc = child.proc();
  ASSERT_TRUE(proc);
  CollectLimits limits;
  limits.deadline = std::chrono::steady_clock::now() + 30s;
  limits.test_delay = 3s;
  limits.test_delay_collector = "cwd";
  PartialFacts partial;
  std::thread collector([&] { collect_handshake_facts(*proc, limits, partial); });
  // The deadline: once comm, exe and cmdline are in (they do not stall), before cwd can finish.
  HandshakeFacts snap;
  for (int i = 0; i < 2000; ++i) {
    snap = partial.snapshot("missed: handshake deadline");
    if (snap.missed.front() == "cwd") break;
    std::this_thread::sleep_for(1ms);
  }
  collector.join();
  ASSERT_EQ(snap.missed.front(), "cwd");
  EXPECT_EQ(snap.missed, names_after("cwd"));
  EXPECT_FALSE(snap.comm.empty());
  EXPECT_FALSE(snap.exe.empty());
  EXPECT_FALSE(snap.argv.empty());
  EXPECT_TRUE(snap.cwd.empty());
  EXPECT_EQ(snap.errors["cwd"], "missed: handshake deadline");
  // Run to its end, the same collection misses nothing.
  const auto all = partial.take("unused");
  EXPECT_TRUE(all.missed.empty());
  EXPECT_FALSE(all.cwd.empty());
  EXPECT_TRUE(all.verified);
}

// A collector whose turn comes after the deadline is skipped and stays missed.
TEST(PartialFacts, CollectorsAfterTheDeadlineAreMissed) {
  Child child;
  auto proc = child.proc();
  ASSERT_TRUE(proc);
  CollectLimits limits;
  limits.test_delay = 300ms;
  limits.test_delay_collector = "cmdline";
  limits.deadline = std::chrono::steady_clock::now() + 100ms;
  const auto f = collect_handshake_facts(*proc, limits);
  EXPECT_FALSE(f.comm.empty());
  EXPECT_FALSE(f.argv.empty()) << "cmdline started before the deadline and finished";
  EXPECT_EQ(f.missed, names_after("cwd"));
  EXPECT_EQ(f.errors["cwd"], "skipped: handshake deadline");
}

TEST(CollectorPool, StuckJobsDoNotHoldUpOthers) {
  CollectorPool pool(2, 16, 50ms);
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> ran{0};
  // Six jobs that all block until every one of them has started: with a fixed pool of two
  // threads, four would wait in the queue for ever.
  for (int i = 0; i < 6; ++i)
    pool.post([&] {
      std::unique_lock lock(mu);
      ++ran;
      cv.notify_all();
      cv.wait(lock, [&] { return release; });
    });
  {
    std::unique_lock lock(mu);
    EXPECT_TRUE(cv.wait_for(lock, 20s, [&] { return ran == 6; })) << ran << " of 6 started";
    release = true;
    cv.notify_all();
  }
  EXPECT_GE(pool.load().peak, 6u);
  // Idle threads above the warm two exit again.
  for (int i = 0; i < 400 && pool.load().threads > 2; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(pool.load().threads, 2u);
  pool.join();
  EXPECT_EQ(pool.load().threads, 0u);
}

TEST(CollectorPool, JobsBeyondTheCapWaitTheirTurn) {
  CollectorPool pool(1, 2);
  std::promise<void> release;
  auto released = release.get_future().share();
  std::atomic<int> done{0};
  for (int i = 0; i < 3; ++i)
    pool.post([&, released] {
      released.wait();
      ++done;
    });
  for (int i = 0; i < 400 && pool.load().busy < 2; ++i) std::this_thread::sleep_for(5ms);
  const auto load = pool.load();
  EXPECT_EQ(load.threads, 2u);
  EXPECT_EQ(load.queued, 1u);
  release.set_value();
  pool.join();
  EXPECT_EQ(done, 3) << "join() runs what was queued";
}
