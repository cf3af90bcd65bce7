// The index's thin layer over SQLite's C API: prepared statements with bound values, and the
// IndexError every failure becomes. Internal to store/ (index.cc, index_schema.cc).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>

#include "store/index.h"

namespace coredumpd::sqlite {

/// SQLite's message for the last error on `db` ("out of memory" without a handle).
inline std::string errmsg(sqlite3* db) {
  return db ? sqlite3_errmsg(db) : "out of memory";
}

/// Throws IndexError("index <path>: <what>: <SQLite's message>").
[[noreturn]] inline void fail(sqlite3* db, const std::string& path, const std::string& what) {
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
  /// A BLOB, or NULL for std::nullopt.
  void bind_opt_blob(int i, const std::optional<std::string>& v) {
    if (v) {
      bind_blob(i, *v);
    } else {
      bind_null(i);
    }
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

  /// Makes the statement ready to step again (bindings are kept until bound anew).
  void reset() { sqlite3_reset(st_); }

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
  /// bytes(col), or std::nullopt for NULL.
  std::optional<std::string> opt_bytes(int col) const {
    if (is_null(col)) return std::nullopt;
    return bytes(col);
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

inline void exec(sqlite3* db, const std::string& path, const char* sql, const char* what) {
  if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) fail(db, path, what);
}

}  // namespace coredumpd::sqlite
