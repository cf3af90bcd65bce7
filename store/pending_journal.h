// Records the index could not take (a read-only or full store), kept outside the store until it
// can: a small append-only journal of JSON lines, by default under /run (a tmpfs that stays
// writable when the store's filesystem does not).
//
// Why JSON lines and not a second SQLite file: an append of one line with one write(2) and an
// fsync is all a crash needs; a torn last line (a daemon killed mid-append) is found and skipped
// by the line's own parse, without a recovery step; the file stays readable with `cat` and jq
// when the daemon is down. The journal is small and only read whole (at start, on replay, by
// dumpctl), so SQLite's queries and indices would buy nothing.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "store/dump_record.h"

namespace coredumpd {

class Index;

/// One journaled record: the record as last written, why the index refused it, and when.
struct PendingEntry {
  DumpRecord record;
  std::string why;             ///< the index's error when the record was journaled
  std::int64_t journaled_us = 0;  ///< UTC µs since the epoch of the (last) append
};

/// What read_pending_journal() found: one entry per dump id (its last line wins), in the order of
/// their first lines; and the lines it could not use, each "line N: <reason>".
struct PendingContents {
  std::vector<PendingEntry> entries;
  std::vector<std::string> skipped;
};

/// What PendingJournal::replay_into() did.
struct ReplayResult {
  int moved = 0;                     ///< records now in the index
  int left = 0;                      ///< records still in the journal (refused, or their core in the fallback)
  std::vector<std::string> errors;   ///< why records were left ("<id>: <index error>")
  std::vector<std::string> skipped;  ///< corrupt lines dropped, "line N: <reason>"
};

/// The journal file in `dir`: `<dir>/records.jsonl`.
std::string pending_journal_path(const std::string& dir);

/// Reads the journal in `dir` without changing it (dumpctl, and the daemon). A missing file or
/// directory is an empty journal; any other error to open or read it throws std::system_error.
PendingContents read_pending_journal(const std::string& dir);

/// The daemon's journal. Thread-safe: every call takes an internal mutex.
class PendingJournal {
 public:
  /// Default bound on the file, bytes: a few thousand records (a record with its /proc extras is
  /// 1-4 KiB). Beyond it a record is refused (append() says why) rather than filling /run.
  static constexpr std::uint64_t kDefaultMaxBytes = 8ULL << 20;

  /// The journal in directory `dir` (created 0750, with its parents, on the first append),
  /// bounded to `max_bytes`. Opening reads nothing; has_entries() looks at the file's size.
  explicit PendingJournal(std::string dir, std::uint64_t max_bytes = kDefaultMaxBytes);

  /// Appends `r` as one JSON line ({"journaled_us", "why", "record": to_json(r)}) and fsyncs it.
  /// `why` is the index's error. Returns "" when the record is durable in the journal, else why not
  /// (the bound would be exceeded, or an I/O error with errno's text): the caller decides.
  std::string append(const DumpRecord& r, const std::string& why);

  /// True if the journal holds at least one line (cheap: no read; kept by append/replay).
  bool has_entries() const { return has_entries_.load(std::memory_order_relaxed); }

  /// Moves every entry into `index` (update where the id exists, else insert), each marked in
  /// extra.journaled ({"reason", "journaled_us", "moved_us"}); corrupt lines are dropped and
  /// reported. What the index refuses stays in the journal, rewritten to hold only that; so does
  /// a record whose core is still in the fallback (core_in_fallback(), store/fallback_core.h),
  /// which follows its core once that is moved in.
  /// `interrupted_reason`: when not empty (a replay at start, no dump running), an InProgress record
  /// is moved as Interrupted with this reason. Throws std::system_error if the journal cannot be
  /// read or rewritten.
  ReplayResult replay_into(Index& index, std::int64_t now_us, const std::string& interrupted_reason = "");

  const std::string& dir() const { return dir_; }
  const std::string& path() const { return path_; }

 private:
  void rewrite(const std::vector<PendingEntry>& keep);  // under mu_

  std::string dir_;
  std::string path_;
  std::uint64_t max_bytes_;
  std::atomic<bool> has_entries_{false};
  std::mutex mu_;
};

}  // namespace coredumpd
