// One journal entry per crash, off the crash path: final records wait here (those whose analysis
// is still to come wait for it), and one thread ("cd-journal") builds each entry
// (journal_fields.h) and hands it to an EntrySink (journal_writer.h), counting the outcome.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>

#include "analysis/crash_report.h"
#include "daemon/journal/journal_writer.h"
#include "daemon/policy/journal_settings.h"
#include "daemon/report/stats.h"
#include "store/dump_record.h"

namespace coredumpd::journal {

/// Records in, entries out: submit() for a final record with nothing more to wait for,
/// await_analysis() + analysis_done() for a stored core whose analysis is queued. Every method
/// may be called from any thread and never waits for the sink.
class JournalQueue {
 public:
  /// The settings in force (called on any thread; must not block).
  using SettingsSource = std::function<JournalSettings()>;

  /// Starts the worker. `sink` and `stats` must outlive this; `store_dir` is the store's directory
  /// (made absolute here: COREDUMP_FILENAME is absolute) and `store_dirfd` the same directory
  /// opened, to check that a core is still there before naming it.
  JournalQueue(EntrySink& sink, Stats& stats, const std::string& store_dir, int store_dirfd, SettingsSource settings);
  /// stop().
  ~JournalQueue();
  JournalQueue(const JournalQueue&) = delete;
  JournalQueue& operator=(const JournalQueue&) = delete;

  /// Queues the entry of `r`, a final record with nothing more to come. Nothing when journal
  /// entries are off, `r`'s state gets none (entry_wanted()), or after stop(). When the queue is
  /// full, the entry is dropped, counted (JournalFailed) and logged (rate-limited).
  void submit(const DumpRecord& r) noexcept;

  /// `r`, a stored core's final record, waits for analysis_done(r.id) before its entry is queued,
  /// so that its MESSAGE has the stack trace; queued at once when the settings want no stack
  /// trace. Call it before queueing the analysis (the analysis may end before submit returns).
  void await_analysis(const DumpRecord& r) noexcept;

  /// The analysis of `id` ended (AnalysisQueue's completion, or the caller when it was not
  /// queued): `report` is its report, or nullptr for none. The waiting record gets it as its
  /// analysis and its entry is queued. An id that is not waiting is ignored (an analysis of a
  /// dump from an earlier run, whose entry that run sent at its stop).
  void analysis_done(const std::string& id, const analysis::CrashReport* report) noexcept;

  /// Stops: no new record is taken; what waits for an analysis is queued as it is (no stack
  /// trace: a stop loses no entry), the queue is sent, then the worker ends. Idempotent.
  void stop();

  /// Records waiting for their analysis, and entries queued (for tests).
  std::size_t awaiting() const;
  std::size_t queued() const;

 private:
  void enqueue(DumpRecord r, std::size_t capacity);  // mu_ held
  void work(std::stop_token stop);
  void send(const DumpRecord& r, const JournalSettings& s);

  EntrySink& sink_;
  Stats& stats_;
  std::string store_dir_;
  int store_dirfd_;
  SettingsSource settings_;
  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::deque<DumpRecord> queue_;
  std::map<std::string, DumpRecord> awaiting_;  ///< by dump id
  bool stopped_ = false;
  bool no_journal_logged_ = false;              ///< worker only
  std::jthread worker_;                         ///< last: started once the rest exists
};

}  // namespace coredumpd::journal
