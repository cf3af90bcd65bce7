#include "store/index.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

namespace coredumpd {

namespace {

constexpr const char* kDbName = "index.sqlite";

// Column order shared by INSERT, UPDATE and SELECT: bind_record() and read_record() follow it.
constexpr const char* kSelect =
    "SELECT id, state, reason, timestamp_us, pid, tid, uid, gid, euid, egid, comm, exe, argv, argc,"
    " cwd, cgroup, hostname, boot_id, coredump_mask, signal, crashing_tid_ns, core_size,"
    " stored_size, compression, path, extra FROM dumps";

constexpr const char* kInsert =
    "INSERT INTO dumps (id, state, reason, timestamp_us, pid, tid, uid, gid, euid, egid, comm, exe,"
    " argv, argc, cwd, cgroup, hostname, boot_id, coredump_mask, signal, crashing_tid_ns,"
    " core_size, stored_size, compression, path, extra)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19,"
    " ?20, ?21, ?22, ?23, ?24, ?25, ?26)";

constexpr const char* kUpdate =
    "UPDATE dumps SET state = ?2, reason = ?3, timestamp_us = ?4, pid = ?5, tid = ?6, uid = ?7,"
    " gid = ?8, euid = ?9, egid = ?10, comm = ?11, exe = ?12, argv = ?13, argc = ?14, cwd = ?15,"
    " cgroup = ?16, hostname = ?17, boot_id = ?18, coredump_mask = ?19, signal = ?20,"
    " crashing_tid_ns = ?21, core_size = ?22, stored_size = ?23, compression = ?24, path = ?25,"
    " extra = ?26 WHERE id = ?1";

constexpr const char* kSchema =
    "CREATE TABLE dumps ("
    " id TEXT PRIMARY KEY NOT NULL,"
    " state TEXT NOT NULL,"
    " reason BLOB NOT NULL,"
    " timestamp_us INTEGER NOT NULL,"
    " pid INTEGER NOT NULL,"
    " tid INTEGER,"
    " uid INTEGER NOT NULL,"
    " gid INTEGER NOT NULL,"
    " euid INTEGER NOT NULL,"
    " egid INTEGER NOT NULL,"
    " comm BLOB NOT NULL,"
    " exe BLOB NOT NULL,"
    " argv BLOB NOT NULL,"
    " argc INTEGER NOT NULL,"
    " cwd BLOB NOT NULL,"
    " cgroup BLOB NOT NULL,"
    " hostname BLOB NOT NULL,"
    " boot_id TEXT NOT NULL,"
    " coredump_mask INTEGER NOT NULL,"
    " signal INTEGER,"
    " crashing_tid_ns INTEGER,"
    " core_size INTEGER NOT NULL,"
    " stored_size INTEGER NOT NULL,"
    " compression TEXT NOT NULL,"
    " path TEXT NOT NULL,"
    " extra TEXT NOT NULL"
    ");"
    "CREATE INDEX dumps_timestamp ON dumps(timestamp_us);"
    "CREATE INDEX dumps_pid ON dumps(pid);";

std::string errmsg(sqlite3* db) {
  return db ? sqlite3_errmsg(db) : "out of memory";
}

[[noreturn]] void fail(sqlite3* db, const std::string& path, const std::string& what) {
  throw IndexError("index " + path + ": " + what + ": " + errmsg(db));
}

/// A prepared statement, finalized on scope exit. Every value is bound, never spliced into SQL.
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& path, const char* sql) : db_(db), path_(path) {
    if (sqlite3_prepare_v2(db, sql, -1, &st_, nullptr) != SQLITE_OK) fail(db_, path_, "prepare");
  }
  ~Stmt() { sqlite3_finalize(st_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  void bind(int i, std::int64_t v) { check(sqlite3_bind_int64(st_, i, v)); }
  void bind_null(int i) { check(sqlite3_bind_null(st_, i)); }
  template <typename T>
  void bind_opt(int i, const std::optional<T>& v) {
    if (v) {
      bind(i, static_cast<std::int64_t>(*v));
    } else {
      bind_null(i);
    }
  }
  // SQLite copies the bytes (SQLITE_TRANSIENT), so temporaries may be bound.
  void bind_blob(int i, const std::string& v) {
    check(sqlite3_bind_blob64(st_, i, v.data(), v.size(), transient()));
  }
  void bind_text(int i, const std::string& v) {
    check(sqlite3_bind_text64(st_, i, v.data(), v.size(), transient(), SQLITE_UTF8));
  }

  /// Runs one step: true if a row is available, false when done. Throws IndexError.
  bool step(const char* what) {
    const int rc = sqlite3_step(st_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail(db_, path_, what);
  }

  std::int64_t int64(int col) const { return sqlite3_column_int64(st_, col); }
  bool is_null(int col) const { return sqlite3_column_type(st_, col) == SQLITE_NULL; }
  std::optional<std::int64_t> opt_int64(int col) const {
    if (is_null(col)) return std::nullopt;
    return int64(col);
  }
  std::string bytes(int col) const {
    // Ask for the pointer first: sqlite3_column_bytes() then reports the size of that form.
    const void* p = sqlite3_column_blob(st_, col);
    const int n = sqlite3_column_bytes(st_, col);
    if (p == nullptr || n <= 0) return {};
    return std::string(static_cast<const char*>(p), static_cast<std::size_t>(n));
  }

 private:
  // SQLITE_TRANSIENT without the C-style cast of its macro.
  static sqlite3_destructor_type transient() {
    return reinterpret_cast<sqlite3_destructor_type>(static_cast<std::intptr_t>(-1));
  }

  void check(int rc) {
    if (rc != SQLITE_OK) fail(db_, path_, "bind");
  }

  sqlite3* db_;
  const std::string& path_;
  sqlite3_stmt* st_ = nullptr;
};

void exec(sqlite3* db, const std::string& path, const char* sql, const char* what) {
  if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) fail(db, path, what);
}

/// The name to give sqlite3_open_v2: a relative "file:..." path would be taken as a URI by builds
/// with SQLITE_USE_URI, so such paths get a "./" prefix.
std::string sqlite_name(const std::string& path) {
  return path.rfind("file:", 0) == 0 ? "./" + path : path;
}

bool valid_id(const std::string& id) {
  if (id.empty() || id.size() > 64) return false;
  for (const char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool valid_path(const std::string& p) {
  return p.find('/') == std::string::npos && p.find('\0') == std::string::npos && p != "." &&
         p != "..";
}

std::string encode_argv(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (a.find('\0') != std::string::npos)
      throw IndexError("index: argv entry contains a NUL byte");
    out += a;
    out.push_back('\0');
  }
  return out;
}

std::optional<std::vector<std::string>> decode_argv(const std::string& blob, std::int64_t argc) {
  std::vector<std::string> argv;
  std::size_t start = 0;
  while (start < blob.size()) {
    const std::size_t nul = blob.find('\0', start);
    if (nul == std::string::npos) return std::nullopt;  // not NUL-terminated
    argv.emplace_back(blob, start, nul - start);
    start = nul + 1;
  }
  if (argc < 0 || argv.size() != static_cast<std::uint64_t>(argc)) return std::nullopt;
  return argv;
}

void bind_record(Stmt& st, const DumpRecord& r) {
  if (!valid_id(r.id)) throw IndexError("index: invalid dump id (want 1..64 lower-case hex chars)");
  if (!valid_path(r.path)) throw IndexError("index: core path of " + r.id + " is not a file name");
  const std::string argv = encode_argv(r.argv);
  const std::string extra = r.extra.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  st.bind_text(1, r.id);
  st.bind_text(2, state_name(r.state));
  st.bind_blob(3, r.reason);
  st.bind(4, r.timestamp_us);
  st.bind(5, r.pid);
  st.bind_opt(6, r.tid);
  st.bind(7, r.uid);
  st.bind(8, r.gid);
  st.bind(9, r.euid);
  st.bind(10, r.egid);
  st.bind_blob(11, r.comm);
  st.bind_blob(12, r.exe);
  st.bind_blob(13, argv);
  st.bind(14, static_cast<std::int64_t>(r.argv.size()));
  st.bind_blob(15, r.cwd);
  st.bind_blob(16, r.cgroup);
  st.bind_blob(17, r.hostname);
  st.bind_text(18, r.boot_id);
  st.bind(19, static_cast<std::int64_t>(r.coredump_mask));
  st.bind_opt(20, r.signal);
  st.bind_opt(21, r.crashing_tid_ns);
  st.bind(22, static_cast<std::int64_t>(r.core_size));  // same 64 bits; read back as uint64
  st.bind(23, static_cast<std::int64_t>(r.stored_size));
  st.bind_text(24, r.compression);
  st.bind_text(25, r.path);
  st.bind_text(26, extra);
}

DumpRecord read_record(const Stmt& st, const std::string& path) {
  DumpRecord r;
  r.id = st.bytes(0);
  const auto bad = [&](const std::string& what) {
    return IndexError("index " + path + ": dump " + r.id + ": " + what);
  };
  const auto state = parse_state(st.bytes(1));
  if (!state) throw bad("unknown state '" + st.bytes(1) + "'");
  r.state = *state;
  r.reason = st.bytes(2);
  r.timestamp_us = st.int64(3);
  r.pid = st.int64(4);
  r.tid = st.opt_int64(5);
  r.uid = st.int64(6);
  r.gid = st.int64(7);
  r.euid = st.int64(8);
  r.egid = st.int64(9);
  r.comm = st.bytes(10);
  r.exe = st.bytes(11);
  auto argv = decode_argv(st.bytes(12), st.int64(13));
  if (!argv) throw bad("corrupt argv");
  r.argv = std::move(*argv);
  r.cwd = st.bytes(14);
  r.cgroup = st.bytes(15);
  r.hostname = st.bytes(16);
  r.boot_id = st.bytes(17);
  r.coredump_mask = static_cast<std::uint32_t>(st.int64(18));
  if (const auto sig = st.opt_int64(19)) r.signal = static_cast<int>(*sig);
  r.crashing_tid_ns = st.opt_int64(20);
  r.core_size = static_cast<std::uint64_t>(st.int64(21));
  r.stored_size = static_cast<std::uint64_t>(st.int64(22));
  r.compression = st.bytes(23);
  r.path = st.bytes(24);
  r.extra = nlohmann::json::parse(st.bytes(25), nullptr, /*allow_exceptions=*/false);
  if (r.extra.is_discarded()) throw bad("unparsable extra JSON");
  return r;
}

}  // namespace

std::string Index::db_path(const std::string& store_dir) {
  if (!store_dir.empty() && store_dir.back() == '/') return store_dir + kDbName;
  return store_dir + "/" + kDbName;
}

Index::Index(const std::string& store_dir, bool writable) : path_(db_path(store_dir)) {
  try {
    if (writable) {
      open_writable();
    } else {
      open_read_only();
    }
  } catch (...) {
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw;
  }
}

Index::~Index() {
  sqlite3_close_v2(db_);
}

int Index::user_version() const {
  Stmt st(db_, path_, "PRAGMA user_version");
  if (!st.step("read schema version")) throw IndexError("index " + path_ + ": no user_version");
  return static_cast<int>(st.int64(0));
}

namespace {
[[noreturn]] void refuse_newer(const std::string& path, int version) {
  throw IndexError("index " + path + " has schema version " + std::to_string(version) +
                   ", newer than the version " + std::to_string(Index::kSchemaVersion) +
                   " this build understands: upgrade coredumpd/dumpctl");
}
}  // namespace

void Index::open_writable() {
  // Create the file ourselves so that it gets mode 0640 (SQLite would use 0644). The -wal and
  // -shm files SQLite creates later copy the database file's mode.
  const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
  if (fd < 0) {
    throw IndexError("index " + path_ + ": cannot create: " + std::strerror(errno));
  }
  ::close(fd);

  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;  // our mutex serialises calls
  if (sqlite3_open_v2(sqlite_name(path_).c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    fail(db_, path_, "open");
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, kBusyTimeoutMs);

  // Check the version before changing anything in a file written by a newer build.
  if (const int v = user_version(); v > kSchemaVersion) refuse_newer(path_, v);

  {
    Stmt st(db_, path_, "PRAGMA journal_mode=WAL");
    if (!st.step("set WAL mode") || st.bytes(0) != "wal") {
      throw IndexError("index " + path_ + ": cannot switch to WAL mode");
    }
  }
  exec(db_, path_, "PRAGMA synchronous=FULL", "set synchronous=FULL");

  exec(db_, path_, "BEGIN IMMEDIATE", "begin schema transaction");
  try {
    const int v = user_version();  // again, under the write lock: another writer may have won
    if (v > kSchemaVersion) refuse_newer(path_, v);
    if (v == 0) {
      exec(db_, path_, kSchema, "create schema");
      exec(db_, path_, "PRAGMA user_version = 1", "set schema version");
      static_assert(kSchemaVersion == 1, "update the PRAGMA above");
    }
    exec(db_, path_, "COMMIT", "commit schema");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

void Index::open_read_only() {
  struct stat sb {};
  if (::stat(path_.c_str(), &sb) != 0) {
    if (errno == ENOENT) throw IndexError("no index at " + path_ + ": is this a coredumpd store?");
    throw IndexError("index " + path_ + ": " + std::strerror(errno));
  }
  const int flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX;
  if (sqlite3_open_v2(sqlite_name(path_).c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    fail(db_, path_, "open");
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, kBusyTimeoutMs);
  const int v = user_version();
  if (v > kSchemaVersion) refuse_newer(path_, v);
  if (v == 0) {
    throw IndexError("index " + path_ + " has no coredumpd schema: is this a coredumpd store?");
  }
}

void Index::store(const DumpRecord& r, bool is_update) {
  std::lock_guard lock(mu_);
  Stmt st(db_, path_, is_update ? kUpdate : kInsert);
  bind_record(st, r);
  st.step(is_update ? "update" : "insert");
  if (sqlite3_changes(db_) != 1) throw IndexError("index " + path_ + ": no dump with id " + r.id);
}

void Index::insert(const DumpRecord& r) {
  store(r, false);
}

void Index::update(const DumpRecord& r) {
  store(r, true);
}

std::vector<DumpRecord> Index::list() const {
  std::lock_guard lock(mu_);
  Stmt st(db_, path_, (std::string(kSelect) + " ORDER BY timestamp_us, rowid").c_str());
  std::vector<DumpRecord> out;
  while (st.step("list")) out.push_back(read_record(st, path_));
  return out;
}

std::vector<RowSummary> Index::list_summaries() const {
  std::lock_guard lock(mu_);
  // extra is always valid JSON when written by insert()/update(); json_valid() guards the
  // json_type() calls (which fail on malformed text) against a hand-edited database. CASE only
  // evaluates the branch it takes.
  Stmt st(db_, path_,
          "SELECT id, state, timestamp_us, uid, stored_size, path,"
          " CASE WHEN json_valid(extra) AND json_type(extra, '$.rule') = 'text'"
          "  THEN json_extract(extra, '$.rule') ELSE '' END,"
          " CASE WHEN json_valid(extra) AND json_type(extra, '$.vacuumed') = 'object'"
          "  THEN 1 ELSE 0 END"
          " FROM dumps ORDER BY timestamp_us, rowid");
  std::vector<RowSummary> out;
  while (st.step("list summaries")) {
    RowSummary r;
    r.id = st.bytes(0);
    const auto state = parse_state(st.bytes(1));
    if (!state) {
      throw IndexError("index " + path_ + ": dump " + r.id + ": unknown state '" + st.bytes(1) +
                       "'");
    }
    r.state = *state;
    r.timestamp_us = st.int64(2);
    r.uid = st.int64(3);
    r.stored_size = static_cast<std::uint64_t>(st.int64(4));
    r.path = st.bytes(5);
    r.rule = st.bytes(6);
    r.vacuumed = st.int64(7) != 0;
    out.push_back(std::move(r));
  }
  return out;
}

std::optional<DumpRecord> Index::get(const std::string& id) const {
  std::lock_guard lock(mu_);
  Stmt st(db_, path_, (std::string(kSelect) + " WHERE id = ?1").c_str());
  st.bind_text(1, id);
  if (!st.step("get")) return std::nullopt;
  return read_record(st, path_);
}

bool Index::remove(const std::string& id) {
  std::lock_guard lock(mu_);
  Stmt st(db_, path_, "DELETE FROM dumps WHERE id = ?1");
  st.bind_text(1, id);
  st.step("remove");
  return sqlite3_changes(db_) == 1;
}

int Index::mark_in_progress_interrupted(const std::string& reason) {
  std::lock_guard lock(mu_);
  Stmt st(db_, path_, "UPDATE dumps SET state = ?1, reason = ?2 WHERE state = ?3");
  const std::string interrupted = state_name(DumpState::Interrupted);
  const std::string in_progress = state_name(DumpState::InProgress);
  st.bind_text(1, interrupted);
  st.bind_blob(2, reason);
  st.bind_text(3, in_progress);
  st.step("mark interrupted");
  return sqlite3_changes(db_);
}

}  // namespace coredumpd
