// Threads for the blocking /proc reads of handshakes (issue 20.2).
//
// A fixed pool lets one stalled read hold its thread for as long as it stalls: with the two threads
// of collector_threads, two stalled 1 s reads made every later crash's collection wait behind them
// until its deadline, and 4 of 6 simultaneous crashes lost all their metadata. Here a job never
// waits behind a busy thread: an idle thread takes it, or a new thread is started for it, up to a
// cap. A stalled read then costs one thread (its stack: 8 MiB of mostly untouched virtual memory,
// a few KiB resident) and delays no other crash. The cap bounds that cost when reads stall for good
// (a task stuck in D state holds its mmap_lock); jobs beyond it wait in order, bounded by their
// own handshake deadline. Threads above the warm count exit after an idle spell.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>

namespace coredumpd {

/// Most collector threads at once: 64 stalled handshakes cost about 64 × 8 MiB of virtual stack
/// (not resident), while the kernel's own handshakes are bounded by the listen backlog and the
/// handshake deadline.
inline constexpr std::size_t kCollectorThreadsMax = 64;

/// A thread pool that grows instead of queueing while its threads are stuck. Thread-safe.
class CollectorPool {
 public:
  /// Keeps `warm` threads (at least 1) ready; starts more on demand up to max(warm, `max`); a
  /// thread above `warm` exits after `idle_exit` without work.
  CollectorPool(std::size_t warm, std::size_t max = kCollectorThreadsMax,
                std::chrono::milliseconds idle_exit = std::chrono::seconds(10));
  /// join()s.
  ~CollectorPool();
  CollectorPool(const CollectorPool&) = delete;
  CollectorPool& operator=(const CollectorPool&) = delete;

  /// Runs `job` on an idle thread, else on a new thread, else (all max threads busy) queues it.
  /// A job must not throw (one that does ends the process, as in any std::thread). After join(),
  /// the job is dropped.
  void post(std::function<void()> job);

  /// Runs what is queued, then waits for every thread to exit. Further post()s are dropped.
  void join();

  /// Threads now, threads busy with a job, jobs waiting, and the most threads there ever were.
  struct Load {
    std::size_t threads = 0, busy = 0, queued = 0, peak = 0;
  };
  Load load() const;

 private:
  void start_thread();  // with mu_ held
  void work();

  const std::size_t warm_, max_;
  const std::chrono::milliseconds idle_exit_;
  mutable std::mutex mu_;
  std::condition_variable wake_;     // a job or stop for idle threads
  std::condition_variable exited_;   // a thread exited (join waits for none left)
  std::deque<std::function<void()>> jobs_;
  std::size_t threads_ = 0, idle_ = 0, running_ = 0, peak_ = 0;
  bool stopping_ = false;
};

}  // namespace coredumpd
