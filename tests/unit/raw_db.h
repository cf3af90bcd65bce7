// A raw SQLite connection to a store's index, bypassing Index: for tests that build older
// schemas or look at columns Index does not show.
#pragma once

#include <sqlite3.h>

#include <cstddef>
#include <string>

#include <gtest/gtest.h>

namespace coredumpd::testing_db {

/// Opens `path` read-write; EXPECT-fails (does not throw) on SQLite errors.
class RawDb {
 public:
  explicit RawDb(const std::string& path) { EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK); }
  ~RawDb() { sqlite3_close(db_); }
  RawDb(const RawDb&) = delete;
  RawDb& operator=(const RawDb&) = delete;

  /// Runs `sql` (any number of statements).
  void exec(const std::string& sql) {
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "") << sql;
    sqlite3_free(err);
  }
  /// The first column of the first row, as text ("NULL" for NULL, "(no row)" for none).
  std::string scalar(const std::string& sql) {
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sql;
    std::string out = "(no row)";
    if (sqlite3_step(st) == SQLITE_ROW) {
      const auto* p = static_cast<const char*>(sqlite3_column_blob(st, 0));
      out = sqlite3_column_type(st, 0) == SQLITE_NULL
                ? "NULL"
                : std::string(p ? p : "", static_cast<std::size_t>(sqlite3_column_bytes(st, 0)));
    }
    sqlite3_finalize(st);
    return out;
  }

 protected:
  sqlite3* db_ = nullptr;
};

}  // namespace coredumpd::testing_db
