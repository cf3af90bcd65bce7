// Opening the index (store/index.h): writable (creating and migrating the schema), read-only
// (also on a read-only or full filesystem), and the daemon's open of a store that may be unusable.
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

#include "store/index_schema.h"
#include "store/sqlite_stmt.h"
#include "store/sqlite_vfs.h"
#include "util/unique_fd.h"

namespace coredumpd {

namespace {

using sqlite::exec;
using sqlite::fail;
using sqlite::Stmt;

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

}  // namespace

Index::Index(const std::string& store_dir, bool writable) : path_(db_path(store_dir)) {
  use_nonblocking_random_vfs();  // before the first sqlite3_open: start-up must not wait for the random pool
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

namespace {

// True if the filesystem under `dir` refuses writes: mounted read-only, (almost) full, or refusing
// to create a file (ext4 after an error, while statvfs still says rw); or missing (its filesystem
// not mounted yet in early boot: docs/EARLY_BOOT.md).
bool filesystem_unwritable(const std::string& dir) {
  struct statvfs vfs {};
  if (::statvfs(dir.c_str(), &vfs) != 0) return errno == ENOENT;
  if ((vfs.f_flag & ST_RDONLY) || static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize < (1U << 20)) return true;
  const UniqueFd probe(::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600));
  return !probe && (errno == EROFS || errno == ENOSPC || errno == EDQUOT || errno == EIO);
}

}  // namespace

std::unique_ptr<Index> Index::open_best(const std::string& store_dir, std::string& note) {
  note.clear();
  try {
    return std::make_unique<Index>(store_dir, true);
  } catch (const IndexError& e) {
    if (!filesystem_unwritable(store_dir)) throw;  // not the store's state: a newer schema, a bad file
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

void Index::reopen_writable(bool again) {
  std::lock_guard lock(mu_);
  if (writable_ && !again) return;
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
  // A reader scans the index once in time order or fetches a row by id: SQLite's default 2 MiB page
  // cache buys it nothing, and dumpctl list's memory is bounded (bench/README.md, dumpctl list).
  exec(db_, path_, "PRAGMA cache_size=-256", "set the page cache of a reader");
  const int v = user_version();
  if (v > kSchemaVersion) refuse_newer(path_, v);
  if (v == 0) {
    throw IndexError("index " + path_ + " has no coredumpd schema: is this a coredumpd store?");
  }
  version_ = v;  // an older version is read as it is: migrating needs a writable open
}

}  // namespace coredumpd
