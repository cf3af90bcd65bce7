// The SQL of Index::scan() (store/index_scan.cc): a RecordQuery's conditions as a WHERE clause, its
// order and limit. Internal to store/; its own header so that a test can check the query plans.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "store/index.h"
#include "store/sqlite_stmt.h"

namespace coredumpd::index_scan {

/// One value bound to a `?` of ScanSql::sql, in order.
struct Bound {
  enum class Type { Integer, Text, Blob } type = Type::Integer;
  std::int64_t integer = 0;
  std::string bytes;  ///< Text or Blob
};

/// A statement of a scan: its SQL and the values of its `?`s.
struct ScanSql {
  std::string sql;
  std::vector<Bound> values;
  /// Some condition is not in SQL (a match on a field no column holds): each decoded row must be
  /// checked with record_matches(), and an SQL LIMIT cannot count the selected rows.
  bool decode_check = false;
  /// A condition can never hold (PID=abc, an empty COMM): nothing is selected.
  bool never = false;
};

/// The conditions of `s` (its query's time range, matches and visibility) as " WHERE ..." ("" when
/// none), for a database of schema `version`.
ScanSql where_of(const IndexScan& s, int version);

/// The statement of `s`'s next page: the rows of where_of() after s.last (from s.first on), in the
/// query's order, each row's columns (index_rows::select_columns(), the `extra` reduced unless
/// with_extra) and its rowid last; at most `limit` rows in SQL unless decode_check.
ScanSql page_sql(const IndexScan& s, int version, std::size_t limit);

/// The statement that finds s.first without decoding rows (when !decode_check): timestamp_us and
/// rowid of the `n`-th newest row (n >= 1) of where_of().
ScanSql nth_newest_sql(const IndexScan& s, int version, std::size_t n);

/// Binds `sql.values` to `st` in order.
void bind_all(sqlite::Stmt& st, const ScanSql& sql);

}  // namespace coredumpd::index_scan
