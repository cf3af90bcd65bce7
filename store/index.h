// The crash-safe index of dumps: an SQLite database (WAL mode) in the store directory.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <functional>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "store/dump_record.h"
#include "store/record_query.h"
#include "store/upload_row.h"

struct sqlite3;

namespace coredumpd {

/// Errors from the index (SQLite failures, schema mismatch); what() names the operation and SQLite's message.
class IndexError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The columns retention needs of one row (Index::list_summaries()): listing these skips the blobs
/// and the C++ JSON parsing of list(), which matters when vacuum runs around every store.
struct RowSummary {
  std::string id;
  DumpState state = DumpState::InProgress;
  std::int64_t timestamp_us = 0;  ///< crash time, UTC µs
  std::int64_t uid = -1;          ///< real uid
  std::uint64_t stored_size = 0;  ///< bytes on disk of the stored core
  std::string path;               ///< core file name, or ""
  std::string rule;               ///< DumpRecord::rule (the `rule` column)
  bool vacuumed = false;          ///< extra["vacuumed"] is an object (retention removed the core)
  /// The upload of its core (table `uploads`, schema 4): an upload pending keeps the core from
  /// retention; an uploaded core is evicted before the others.
  enum class Upload { None, CorePending, CoreUploaded } upload = Upload::None;
};

/// A scan of the index that runs a page at a time (Index::scan_page()): the query service answers a
/// list in pages, with no statement, and so no read transaction, open between them. Set `query`
/// (and `visible_to`), leave the rest to scan_page().
struct IndexScan {
  RecordQuery query;
  /// Only the dumps peer_may_see() (store/query_protocol.h) shows this uid: checked in SQL (uid,
  /// euid, gid = egid) and on each record. std::nullopt: every dump.
  std::optional<uid_t> visible_to;

  /// A row's place in the index's order: timestamp_us, then rowid (insertion order).
  struct Key {
    std::int64_t timestamp_us = 0;
    std::int64_t rowid = 0;
  };
  bool started = false;      ///< the first page ran (a limit's first row is known)
  bool done = false;         ///< nothing more to deliver
  std::optional<Key> first;  ///< oldest first with a limit: the oldest of the newest `limit` rows
  std::optional<Key> last;   ///< the last row delivered
  std::size_t delivered = 0;
};

/// The SQLite index `<store>/index.sqlite`. One instance may be shared by threads: every call takes
/// an internal mutex. Writers use WAL mode and a busy timeout, so dumpctl can read while the daemon
/// writes.
///
/// Schema (version 4, kept in `PRAGMA user_version`; the versions and their migrations are in
/// store/index_schema.h): one table `dumps`, a column per DumpRecord field. Strings from the crashing process (comm, exe, cwd, cgroup, hostname) and `reason` are
/// BLOBs holding the exact bytes. `argv` is a BLOB of every argument followed by one NUL byte
/// (the /proc/<pid>/cmdline layout: [] is empty, [""] is one NUL byte) and `argc` is the argument
/// count, checked on read. `extra` is TEXT (compact JSON). `state` is state_name(); optional
/// fields are NULL when unset; the u64 sizes are stored as the same 64 bits in SQLite's signed
/// INTEGER. `rule` is TEXT; `container_key` a BLOB, NULL when no container was recorded.
/// `signature`, `signature_text` and `analysis` (the report's compact JSON) are TEXT, NULL until
/// set_analysis() writes them; update() never touches them. Indices on `timestamp_us`, `pid`,
/// `container_key` and `signature`. Version 4 adds the upload queue: table `uploads`, one row per
/// dump (store/upload_row.h), and `upload_origin`.
class Index {
 public:
  /// The schema version this build reads and writes. A database with a larger `user_version` is
  /// refused (IndexError); version 0 means "no schema yet" (created by writable opens). A writable
  /// open migrates an older database (index_schema::upgrade()); a read-only open reads it as it is.
  static constexpr int kSchemaVersion = 4;
  /// How long a call waits for a lock held by another connection before failing, in milliseconds.
  static constexpr int kBusyTimeoutMs = 10000;

  /// The index file of a store: `<store_dir>/index.sqlite`.
  static std::string db_path(const std::string& store_dir);

  /// Opens (creating if `writable`) the index in `store_dir`. Read-only opens never create or
  /// modify anything (SQLITE_OPEN_READONLY) and work while a writer is active; if the file is
  /// missing they throw IndexError("no index at <path>: is this a coredumpd store?"). A writable
  /// open creates the file with mode 0640 (less if the umask says so), switches it to WAL mode with
  /// synchronous=FULL and creates the schema. Throws IndexError if the database cannot be opened,
  /// is not a coredumpd index, or has a schema version newer than kSchemaVersion. The store
  /// directory itself must exist.
  Index(const std::string& store_dir, bool writable);
  /// The daemon's open: writable if it can be, else read-only (a read-only or full store: the
  /// index can still be listed), else not open at all (no index yet on a read-only filesystem;
  /// every call then throws IndexError). `note` is set to why it is not writable ("" when it is).
  /// Never throws for an unusable store (read-only, full, refusing new files, the directory missing:
  /// not mounted yet); reopen_writable() tries again later. Any other failure of the writable
  /// open (a newer schema, a file that is not an index) throws IndexError, as the constructor does.
  static std::unique_ptr<Index> open_best(const std::string& store_dir, std::string& note);
  ~Index();
  Index(const Index&) = delete;
  Index& operator=(const Index&) = delete;

  /// Inserts a new record (its id must be new). Durable when it returns (synchronous=FULL).
  /// Concurrent insert()/update() calls share one transaction and its fsync (group commit,
  /// index_write.cc): each still returns, or throws, for its own record only.
  /// Throws IndexError on a duplicate id, an id that is not 1..64 lower-case hex characters, a
  /// `path` that is not a plain file name (contains '/', or is "." or ".."), an argv entry
  /// containing NUL (not representable, see the schema), a read-only index or an SQLite failure.
  /// `extra` should hold valid UTF-8 only: invalid sequences in its strings are stored as U+FFFD.
  void insert(const DumpRecord& r);
  /// Replaces every field of the record with id r.id. Throws IndexError if no such row, or for the
  /// same reasons as insert().
  void update(const DumpRecord& r);
  /// All records, oldest first by timestamp (ties: insertion order). Throws IndexError, also for
  /// a row that cannot be decoded (unknown state, bad argv, unparsable extra).
  std::vector<DumpRecord> list() const;
  /// The records that may be in the container `ref` names, in list() order: a superset of those
  /// whose extra.container container_ref_matches() (by key, name, or id prefix): the caller applies
  /// that match. Narrowed in SQL by the container_key column and the recorded name and id (every
  /// row of an index too old to have the column). Throws IndexError like list().
  std::vector<DumpRecord> list_container_candidates(const std::string& ref) const;
  /// Calls `each` with every record `q` selects, in the order and up to the limit it asks for, until
  /// `each` returns false (store/record_query.h; the same answers as record_matches() over list()).
  /// Streams: no more than one record is held. The time range walks the timestamp_us index; the
  /// matches on columns are SQL conditions, the others are checked by record_matches() once the
  /// row is decoded. A limit with oldest-first delivery first finds the oldest of the newest N
  /// (a second pass over the rows when a match needs decoding), then streams from there.
  /// `q.with_extra` false reads, of `extra`, only the small facts (index_scan.cc kListedExtras:
  /// container, owner_may_read, rlimit_core, vacuumed, ...), never the captures; `analysis` is
  /// never read. Throws IndexError like list(); `each`'s exceptions pass through.
  void scan(const RecordQuery& q, const std::function<bool(DumpRecord&&)>& each) const;
  /// The next page of `s`: calls `each` with up to `max_rows` (>= 1) records, from where the last
  /// page stopped; sets s.done when the scan is over. Rows inserted between pages are seen if they
  /// sort after the last one delivered. Throws IndexError like list().
  void scan_page(IndexScan& s, std::size_t max_rows, const std::function<void(DumpRecord&&)>& each) const;
  /// Every row's id, in list() order: short ids are computed against all of them. Throws IndexError.
  std::vector<std::string> list_ids() const;
  /// Every row's RowSummary, in list() order. Throws IndexError (also for an unknown state).
  std::vector<RowSummary> list_summaries() const;
  /// The record with this id, or std::nullopt. Throws IndexError like list().
  std::optional<DumpRecord> get(const std::string& id) const;
  /// Deletes the row with this id (retention's max_age). Returns false if there was no such row.
  /// Throws IndexError on a read-only index or an SQLite failure.
  bool remove(const std::string& id);
  /// Stores the analysis of dump `id` (analysis/crash_report.h): the `analysis` column gets
  /// `report` (compact JSON; null stores NULL), `signature` and `signature_text` theirs ("" stored
  /// as NULL). Replaces an earlier analysis. Durable when it returns (one statement under the
  /// mutex, so never inside another caller's group commit). Returns false if there is no such row.
  /// Throws IndexError on a read-only index, a signature that is neither "" nor 32 lower-case hex
  /// characters, or an SQLite failure.
  bool set_analysis(const std::string& id, const nlohmann::json& report, const std::string& signature,
                    const std::string& signature_text);
  /// Marks every InProgress row Interrupted with `reason` (called at daemon start). Returns how
  /// many. Throws IndexError.
  int mark_in_progress_interrupted(const std::string& reason);

  // The upload queue (schema 4, table `uploads`; store/upload_row.h; index_uploads.cc). Each call
  // is one statement, durable when it returns; each throws IndexError on an SQLite failure or a
  // read-only index (the readers work read-only).

  /// The time from which final dumps are uploaded: set to `now_us` by the first call, then kept
  /// (dumps older than the uploader's first start are not sent).
  std::int64_t upload_origin(std::int64_t now_us);
  /// Ids of dumps that are final (not in_progress), crashed at or after `since_us` and have no
  /// `uploads` row: oldest first, at most `max`.
  std::vector<std::string> upload_candidates(std::int64_t since_us, std::size_t max) const;
  /// Inserts `r` unless its id has a row already. Returns true if inserted.
  bool add_upload(const UploadRow& r);
  /// Replaces the row of r.id. Returns false if there is none.
  bool save_upload(const UploadRow& r);
  /// The row of `id`, or std::nullopt.
  std::optional<UploadRow> get_upload(const std::string& id) const;
  /// Rows neither done nor skipped whose next_try_us <= now_us, soonest first, at most `max`.
  std::vector<UploadRow> due_uploads(std::int64_t now_us, std::size_t max) const;
  /// The same, counting only the rows `take` accepts (called under the index's lock: it must not
  /// call the index). For the uploader, whose rows for a peer that is down are not to be taken.
  std::vector<UploadRow> due_uploads(std::int64_t now_us, std::size_t max,
                                     const std::function<bool(const UploadRow&)>& take) const;
  /// Rows neither done nor skipped; and the soonest next_try_us among them (0 if none).
  std::size_t uploads_waiting(std::int64_t* soonest_us = nullptr) const;

  /// True if this instance was opened writable (or reopened so).
  bool writable() const;
  /// Replaces a read-only or unopened instance's connection with a writable one (the store became
  /// usable again); nothing if already writable, unless `again` (the store's path now leads to
  /// another directory: a filesystem mounted over it). Throws IndexError, and then stays as it was.
  void reopen_writable(bool again = false);

  /// The database file's path (`<store_dir>/index.sqlite`).
  const std::string& path() const { return path_; }

 private:
  explicit Index(std::string path) : path_(std::move(path)) {}  // unopened: see open_best()
  void require_open() const;  // throws IndexError when unopened
  void open_writable();
  void open_read_only();
  void connect_read_only(const std::string& name, int flags);  // sqlite3_open_v2 name, then the version
  int user_version() const;
  /// The SELECT of every column read_record() reads, for this database's schema version; the
  /// analysis column only `with_analysis` (else NULL in its place: a report may be 1 MiB).
  std::string select_sql(bool with_analysis = false) const;
  /// scan_page() and scan(): up to `max_rows` records of `s`'s next page, under the mutex.
  std::vector<DumpRecord> next_page(IndexScan& s, std::size_t max_rows) const;
  /// insert()/update(): queues the write and waits; the first waiter without a leader commits
  /// every queued write in one transaction (group commit), one SAVEPOINT each.
  void store(const DumpRecord& r, bool is_update);
  struct QueuedWrite;
  /// Commits `batch` (mu_ taken here); sets each write's error, if any.
  void commit_batch(const std::vector<QueuedWrite*>& batch);
  /// One record's INSERT or UPDATE; throws IndexError. mu_ held.
  void write_one(const DumpRecord& r, bool is_update);

  std::string path_;
  sqlite3* db_ = nullptr;
  int version_ = 0;  ///< the database's schema version (kSchemaVersion once a writable open migrated it)
  bool writable_ = false;
  mutable std::mutex mu_;
  std::mutex queue_mu_;                  ///< guards queue_, leader_ and QueuedWrite::done
  std::condition_variable queue_cv_;     ///< a batch was committed
  std::vector<QueuedWrite*> queue_;      ///< writes waiting for the next commit
  bool leader_ = false;                  ///< a thread is committing a batch
};

}  // namespace coredumpd
