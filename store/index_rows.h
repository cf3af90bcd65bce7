// Reading index rows into DumpRecords, shared by index.cc (list, get) and index_scan.cc (scan).
// Internal to store/.
#pragma once

#include <string>

#include "store/dump_record.h"
#include "store/sqlite_stmt.h"

namespace coredumpd::index_rows {

/// "SELECT <every column read_record() reads>" (no FROM) for a database of schema `version`;
/// the analysis column only `with_analysis` (else NULL: a report may be 1 MiB); `extra_expr` in
/// place of the `extra` column (an SQL expression yielding JSON text: "extra" for all of it).
std::string select_columns(int version, bool with_analysis, const std::string& extra_expr = "extra");

/// How many columns select_columns() yields (read_record() reads columns 0..count-1).
inline constexpr int kColumnCount = 31;

/// The record at the current row of a statement from select_columns(). A database of schema
/// version 1 (opened read-only, so not migrated) has no rule and container_key columns: they are
/// derived from extra, as the migration does; one older than 3 has no analysis. Throws IndexError
/// (naming `path` and the dump) for a row that cannot be decoded (unknown state, bad argv,
/// unparsable extra or analysis).
DumpRecord read_record(const sqlite::Stmt& st, const std::string& path, int version);

}  // namespace coredumpd::index_rows
