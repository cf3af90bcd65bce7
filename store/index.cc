#include "store/index.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include "store/container_ref.h"
#include "store/index_schema.h"
#include "store/record_extras.h"
#include "store/sqlite_stmt.h"
#include "util/unique_fd.h"

namespace coredumpd {

namespace {

using sqlite::exec;
using sqlite::fail;
using sqlite::Stmt;

constexpr const char* kDbName = "index.sqlite";

// Column order shared by INSERT, UPDATE and SELECT: bind_record() and read_record() follow it.
// The columns of schema version 2 come last (see select_sql()).
constexpr const char* kSelectV1Columns =
    "SELECT id, state, reason, timestamp_us, pid, tid, uid, gid, euid, egid, comm, exe, argv, argc,"
    " cwd, cgroup, hostname, boot_id, coredump_mask, signal, crashing_tid_ns, core_size,"
    " stored_size, compression, path, extra";

constexpr const char* kInsert =
    "INSERT INTO dumps (id, state, reason, timestamp_us, pid, tid, uid, gid, euid, egid, comm, exe,"
    " argv, argc, cwd, cgroup, hostname, boot_id, coredump_mask, signal, crashing_tid_ns,"
    " core_size, stored_size, compression, path, extra, rule, container_key)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19,"
    " ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28)";

constexpr const char* kUpdate =
    "UPDATE dumps SET state = ?2, reason = ?3, timestamp_us = ?4, pid = ?5, tid = ?6, uid = ?7,"
    " gid = ?8, euid = ?9, egid = ?10, comm = ?11, exe = ?12, argv = ?13, argc = ?14, cwd = ?15,"
    " cgroup = ?16, hostname = ?17, boot_id = ?18, coredump_mask = ?19, signal = ?20,"
    " crashing_tid_ns = ?21, core_size = ?22, stored_size = ?23, compression = ?24, path = ?25,"
    " extra = ?26, rule = ?27, container_key = ?28 WHERE id = ?1";

/// The name to give sqlite3_open_v2: a relative "file:..." path would be taken as a URI by builds
/// with SQLITE_USE_URI, so such paths get a "./" prefix.
std::string sqlite_name(const std::string& path) {
  return path.rfind("file:", 0) == 0 ? "./" + path : path;
}

/// "file:<path>?immutable=1", the path percent-encoded where a URI needs it.
std::string immutable_uri(const std::string& path) {
  std::string out = "file:";
  for (const unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '.' || c == '-' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      static constexpr char kHex[] = "0123456789ABCDEF";
      out += {'%', kHex[c >> 4], kHex[c & 15]};
    }
  }
  return out + "?immutable=1";
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
  st.bind_text(27, r.rule);
  st.bind_opt_blob(28, r.container_key);
}

/// The record at the current row of a statement from select_sql(). A database of schema version 1
/// (opened read-only, so not migrated) has no rule and container_key columns: they are derived
/// from extra, as the migration does.
DumpRecord read_record(const Stmt& st, const std::string& path, int version) {
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
  if (version >= 2) {
    r.rule = st.bytes(26);
    r.container_key = st.opt_bytes(27);
  } else {
    r.rule = rule_from_extra(r.extra);
    r.container_key = container_key_from_extra(r.extra);
  }
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

std::unique_ptr<Index> Index::open_best(const std::string& store_dir, std::string& note) {
  note.clear();
  try {
    return std::make_unique<Index>(store_dir, true);
  } catch (const IndexError& e) {
    note = e.what();
  }
  try {
    return std::make_unique<Index>(store_dir, false);
  } catch (const IndexError& e) {
    note += std::string("; read-only: ") + e.what();
  }
  return std::unique_ptr<Index>(new Index(db_path(store_dir)));
}

bool Index::writable() const {
  std::lock_guard lock(mu_);
  return writable_;
}

void Index::reopen_writable() {
  std::lock_guard lock(mu_);
  if (writable_) return;
  sqlite3* const old = db_;
  const int old_version = version_;
  db_ = nullptr;
  try {
    open_writable();
  } catch (...) {
    sqlite3_close_v2(db_);
    db_ = old;
    version_ = old_version;
    throw;
  }
  sqlite3_close_v2(old);
}

void Index::require_open() const {
  if (!db_) throw IndexError("index " + path_ + " is not open (the store was unusable when coredumpd started)");
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
  if (!UniqueFd(::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640))) {
    throw IndexError("index " + path_ + ": cannot create: " + std::strerror(errno));
  }

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
    index_schema::upgrade(db_, path_, v);  // creates or migrates; nothing if current
    exec(db_, path_, "COMMIT", "commit schema");
    version_ = kSchemaVersion;
    writable_ = true;
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
  try {
    connect_read_only(sqlite_name(path_), SQLITE_OPEN_READONLY);
  } catch (const IndexError&) {
    // A WAL database needs its -shm file, which SQLite cannot create on a read-only or full
    // filesystem. With no -wal file either, every row is in the database file and no writer is
    // active (it would have made one), so the file is read as immutable. On a read-only
    // filesystem it is read so too; rows still in a left-over -wal (a writer killed before its
    // checkpoint) are then not seen.
    struct statvfs vfs {};
    struct stat wal {};
    const bool read_only_fs = ::statvfs(path_.c_str(), &vfs) == 0 && (vfs.f_flag & ST_RDONLY);
    if (!read_only_fs && ::stat((path_ + "-wal").c_str(), &wal) == 0) throw;
    sqlite3_close_v2(db_);
    db_ = nullptr;
    connect_read_only(immutable_uri(path_), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
  }
}

void Index::connect_read_only(const std::string& name, int flags) {
  if (sqlite3_open_v2(name.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    fail(db_, path_, "open");
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, kBusyTimeoutMs);
  const int v = user_version();
  if (v > kSchemaVersion) refuse_newer(path_, v);
  if (v == 0) {
    throw IndexError("index " + path_ + " has no coredumpd schema: is this a coredumpd store?");
  }
  version_ = v;  // an older version is read as it is: migrating needs a writable open
}

std::string Index::select_sql() const {
  return std::string(kSelectV1Columns) + (version_ >= 2 ? ", rule, container_key" : "") + " FROM dumps";
}

void Index::store(const DumpRecord& r, bool is_update) {
  std::lock_guard lock(mu_);
  require_open();
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
  require_open();
  Stmt st(db_, path_, (select_sql() + " ORDER BY timestamp_us, rowid").c_str());
  std::vector<DumpRecord> out;
  while (st.step("list")) out.push_back(read_record(st, path_, version_));
  return out;
}

std::vector<DumpRecord> Index::list_container_candidates(const std::string& ref) const {
  if (version_ < 2) return list();  // no container_key column: the caller's match decides
  std::lock_guard lock(mu_);
  require_open();
  // A row matches container_ref_matches() by its key (the column), its name or an id prefix (in
  // extra.container). Names and ids that are byte arrays (not UTF-8) are left to the caller.
  const std::string c = std::string("'$.") + extras::kContainer + ".";
  const std::string name = c + extras::kContainerName + "'";
  const std::string id = c + extras::kContainerId + "'";
  const std::string sql =
      select_sql() + " WHERE container_key = ?1 OR (container_key IS NOT NULL AND json_valid(extra) AND ("
      " json_type(extra, " + name + ") = 'array' OR json_type(extra, " + id + ") = 'array'"
      " OR json_extract(extra, " + name + ") = ?2"
      " OR (?3 AND instr(json_extract(extra, " + id + "), ?2) = 1)))"
      " ORDER BY timestamp_us, rowid";
  Stmt st(db_, path_, sql.c_str());
  st.bind_blob(1, ref);
  st.bind_text(2, ref);
  st.bind(3, ref.size() >= kMinContainerIdPrefix ? 1 : 0);
  std::vector<DumpRecord> out;
  while (st.step("list by container")) out.push_back(read_record(st, path_, version_));
  return out;
}

std::vector<RowSummary> Index::list_summaries() const {
  std::lock_guard lock(mu_);
  require_open();
  // extra is always valid JSON when written by insert()/update(); json_valid() guards the
  // json_type() call (which fails on malformed text) against a hand-edited database. CASE only
  // evaluates the branch it takes.
  const std::string sql = std::string("SELECT id, state, timestamp_us, uid, stored_size, path, ") +
                          index_schema::rule_expression(version_) +
                          ", CASE WHEN json_valid(extra) AND json_type(extra, '$." + extras::kVacuumed +
                          "') = 'object' THEN 1 ELSE 0 END FROM dumps ORDER BY timestamp_us, rowid";
  Stmt st(db_, path_, sql.c_str());
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
  require_open();
  Stmt st(db_, path_, (select_sql() + " WHERE id = ?1").c_str());
  st.bind_text(1, id);
  if (!st.step("get")) return std::nullopt;
  return read_record(st, path_, version_);
}

bool Index::remove(const std::string& id) {
  std::lock_guard lock(mu_);
  require_open();
  Stmt st(db_, path_, "DELETE FROM dumps WHERE id = ?1");
  st.bind_text(1, id);
  st.step("remove");
  return sqlite3_changes(db_) == 1;
}

int Index::mark_in_progress_interrupted(const std::string& reason) {
  std::lock_guard lock(mu_);
  require_open();
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
