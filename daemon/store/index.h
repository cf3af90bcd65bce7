// The crash-safe index of dumps: an SQLite database (WAL mode) in the store directory.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "daemon/store/dump_record.h"

struct sqlite3;

namespace coredumpd {

/// Errors from the index (SQLite failures, schema mismatch); what() names the operation and SQLite's message.
class IndexError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The SQLite index `<store>/index.sqlite`. One instance may be shared by threads: every call takes
/// an internal mutex. Writers use WAL mode and a busy timeout, so dumpctl can read while the daemon
/// writes.
class Index {
 public:
  /// Opens (creating if `writable`) the index in `store_dir`. Read-only opens never create or
  /// modify anything. Throws IndexError if the database cannot be opened or has an unknown schema.
  Index(const std::string& store_dir, bool writable);
  ~Index();
  Index(const Index&) = delete;
  Index& operator=(const Index&) = delete;

  /// Inserts a new record (its id must be new). Throws IndexError.
  void insert(const DumpRecord& r);
  /// Replaces every field of the record with id r.id. Throws IndexError if no such row.
  void update(const DumpRecord& r);
  /// All records, oldest first by timestamp. Throws IndexError.
  std::vector<DumpRecord> list() const;
  /// The record with this id, or std::nullopt.
  std::optional<DumpRecord> get(const std::string& id) const;
  /// Marks every InProgress row Interrupted with `reason` (called at daemon start). Returns how many.
  int mark_in_progress_interrupted(const std::string& reason);

 private:
  sqlite3* db_ = nullptr;
  mutable std::mutex mu_;
};

}  // namespace coredumpd
