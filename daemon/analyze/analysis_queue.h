// The analysis of stored cores, off the crash path: a bounded queue and one worker thread at idle
// CPU priority ("cd-analyze") that runs the sandboxed analyzer on each stored core in turn
// (analysis_job.h) and records the report in the index.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <stop_token>
#include <string>
#include <thread>

#include "daemon/analyze/analysis_job.h"
#include "daemon/policy/analysis_settings.h"

namespace coredumpd {

/// One worker and a queue of at most AnalysisSettings::queue dumps. The settings are read through
/// `settings` (the configuration in force) at each submit and each job, so a reload applies to the
/// jobs that start after it.
class AnalysisQueue {
 public:
  /// The settings in force (called on any thread; must not block).
  using SettingsSource = std::function<AnalysisSettings()>;
  /// Told, on the worker thread, that the analysis of dump `id` ended: `report` is what it found
  /// (recorded in the index, or not when the index refused it), nullptr when no analysis came to
  /// an end (the core was gone). Not called for an analysis the stop cut short. Must not block
  /// for long or throw: the journal entry of the dump is queued from here.
  using Completion = std::function<void(const std::string& id, const analysis::CrashReport* report)>;

  /// Starts the worker thread. `target` (index, store directory, counters) must outlive this.
  /// `on_done` (may be empty) is called after each analysis the worker ran.
  AnalysisQueue(AnalysisTarget target, SettingsSource settings, Completion on_done = {});
  /// stop().
  ~AnalysisQueue();
  AnalysisQueue(const AnalysisQueue&) = delete;
  AnalysisQueue& operator=(const AnalysisQueue&) = delete;

  /// Queues the analysis of `r`, a record whose core is stored. Never waits for the worker or for
  /// room, and never throws. Nothing when analysis is disabled, after stop(), or when the dump is
  /// already queued or being analysed. When the queue is full the dump's analysis is counted
  /// (AnalysisQueueFull) and recorded as unavailable ("analysis queue full (N pending)"): one
  /// index write on the caller's thread, as its record's own. Returns true if queued.
  bool submit(const DumpRecord& r) noexcept;

  /// Asks the worker to queue, before anything else, the stored dumps that have no analysis yet
  /// (a restart loses nothing): the newest first, at most the queue's size. Does nothing when
  /// analysis is disabled. Never blocks.
  void submit_unanalysed() noexcept;

  /// Stops the worker: no new job starts, a running analyzer is killed (SIGKILL) and its dump left
  /// unanalysed for the next start. Returns once the worker has ended. Idempotent.
  void stop();

  /// Dumps waiting (not counting the one being analysed).
  std::size_t pending() const;

 private:
  enum class Queued { Yes, Duplicate, Full, Stopped };
  /// Queues `job` (mu_ held).
  Queued enqueue(AnalysisJob job, std::size_t capacity);
  void work(std::stop_token stop);
  void queue_unanalysed(const AnalysisSettings& s);

  AnalysisTarget target_;
  SettingsSource settings_;
  Completion on_done_;
  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::deque<AnalysisJob> jobs_;
  std::set<std::string> ids_;                    ///< queued or running, for submit()'s dedup
  bool scan_unanalysed_ = false;
  bool stopped_ = false;
  pid_t worker_tid_ = 0;                         ///< the worker's TID once it runs
  bool running_ = false;                         ///< an analysis is in progress
  bool done_ = false;                            ///< the worker has left its loop
  std::jthread worker_;                          ///< last: started once the rest exists
};

}  // namespace coredumpd
