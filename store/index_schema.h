// The index's schema: the tables of each version and the migrations that bring a database written
// by an older coredumpd up to Index::kSchemaVersion. Internal to store/ (Index's constructor).
//
// Versions (kept in `PRAGMA user_version`; 0 is an empty file):
//   1  table `dumps`, a column per DumpRecord field up to `extra`; indices on timestamp_us, pid.
//   2  columns `rule` (TEXT NOT NULL, "" for the defaults) and `container_key` (BLOB, NULL when no
//      container was recorded), back-filled from each row's extra.rule / extra.container.key;
//      index on container_key.
//   3  columns `signature`, `signature_text` and `analysis` (TEXT, NULL until Index::set_analysis()
//      stores the analysis of the core); index on signature.
#pragma once

#include <string>

struct sqlite3;

namespace coredumpd::index_schema {

/// Brings a database at schema `version` (0: empty) to Index::kSchemaVersion: creates the tables
/// of version 1, then runs each migration in turn, then sets user_version. Must run inside the
/// caller's write transaction (BEGIN IMMEDIATE), `version` read under it. A version that is
/// already current changes nothing. Throws IndexError.
void upgrade(sqlite3* db, const std::string& path, int version);

/// The SQL expression that yields a row's rule in a database of schema `version`: the column
/// (version >= 2), or for an older database (opened read-only, so not migrated) extra.rule as
/// rule_from_extra() reads it.
const char* rule_expression(int version);

}  // namespace coredumpd::index_schema

namespace coredumpd::index_schema {

/// The SQL expression that yields a row's RowSummary::Upload (0 none, 1 core pending, 2 core
/// uploaded) in a database of schema `version`: from the `uploads` table (version >= 4), else 0.
const char* upload_expression(int version);

}  // namespace coredumpd::index_schema
