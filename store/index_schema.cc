#include "store/index_schema.h"

#include <cstdint>
#include <optional>
#include <vector>

#include "store/index.h"
#include "store/record_extras.h"
#include "store/sqlite_stmt.h"

namespace coredumpd::index_schema {

namespace {

using sqlite::exec;
using sqlite::Stmt;

// Version 1, as coredumpd wrote it up to commit 04ca55a: never change it (migrations start here).
constexpr const char* kSchemaV1 =
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

constexpr const char* kMigrateV2 =
    "ALTER TABLE dumps ADD COLUMN rule TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE dumps ADD COLUMN container_key BLOB;"
    "CREATE INDEX dumps_container ON dumps(container_key);";

// Version 3: the analysis of the stored core (Index::set_analysis()). NULL until analysed; no
// back-fill (an older row was never analysed).
constexpr const char* kMigrateV3 =
    "ALTER TABLE dumps ADD COLUMN signature TEXT;"
    "ALTER TABLE dumps ADD COLUMN signature_text TEXT;"
    "ALTER TABLE dumps ADD COLUMN analysis TEXT;"
    "CREATE INDEX dumps_signature ON dumps(signature);";

// Version 4: the upload queue (store/upload_row.h), one row per dump being or having been sent
// to S3 and the fleet index; `upload_origin` keeps the time from which dumps are sent.
constexpr const char* kMigrateV4 =
    "CREATE TABLE uploads ("
    " id TEXT PRIMARY KEY NOT NULL,"
    " mode TEXT NOT NULL,"
    " state TEXT NOT NULL,"
    " upload_id TEXT NOT NULL DEFAULT '',"
    " object_key TEXT NOT NULL DEFAULT '',"
    " record_key TEXT NOT NULL DEFAULT '',"
    " core_bytes INTEGER NOT NULL DEFAULT 0,"
    " attempts INTEGER NOT NULL DEFAULT 0,"
    " next_try_us INTEGER NOT NULL DEFAULT 0,"
    " last_error TEXT NOT NULL DEFAULT '',"
    " queued_us INTEGER NOT NULL,"
    " done_us INTEGER NOT NULL DEFAULT 0"
    ");"
    "CREATE INDEX uploads_due ON uploads(state, next_try_us);"
    "CREATE TABLE upload_origin (since_us INTEGER NOT NULL);";

/// Version 2's columns of one row, derived from its extra.
struct DerivedColumns {
  std::int64_t rowid = 0;
  std::string rule;
  std::optional<std::string> container_key;
};

/// Fills `rule` and `container_key` of every row from its extra, as a writer of version 2 would
/// have set them. A row whose extra does not parse (a hand-edited database) gets "" and NULL.
void back_fill_v2(sqlite3* db, const std::string& path) {
  std::vector<DerivedColumns> rows;
  {
    Stmt st(db, path, "SELECT rowid, extra FROM dumps");
    while (st.step("read extras to back-fill")) {
      const auto extra = nlohmann::json::parse(st.bytes(1), nullptr, /*allow_exceptions=*/false);
      rows.push_back({st.int64(0), rule_from_extra(extra), container_key_from_extra(extra)});
    }
  }
  Stmt update(db, path, "UPDATE dumps SET rule = ?1, container_key = ?2 WHERE rowid = ?3");
  for (const auto& r : rows) {
    update.bind_text(1, r.rule);
    update.bind_opt_blob(2, r.container_key);
    update.bind(3, r.rowid);
    update.step("back-fill rule and container_key");
    update.reset();
  }
}

}  // namespace

void upgrade(sqlite3* db, const std::string& path, int version) {
  static_assert(Index::kSchemaVersion == 4, "add the migration to the new version here");
  if (version >= Index::kSchemaVersion) return;
  if (version < 1) exec(db, path, kSchemaV1, "create schema");
  if (version < 2) {
    exec(db, path, kMigrateV2, "add columns rule, container_key");
    back_fill_v2(db, path);
  }
  if (version < 3) exec(db, path, kMigrateV3, "add columns signature, signature_text, analysis");
  if (version < 4) exec(db, path, kMigrateV4, "add tables uploads, upload_origin");
  exec(db, path, "PRAGMA user_version = 4", "set schema version");
}

const char* rule_expression(int version) {
  if (version >= 2) return "rule";
  // json_valid() guards json_type() (which fails on malformed text) against a hand-edited
  // database; CASE evaluates only the branch it takes.
  return "CASE WHEN json_valid(extra) AND json_type(extra, '$.rule') = 'text'"
         " THEN json_extract(extra, '$.rule') ELSE '' END";
}

}  // namespace coredumpd::index_schema

namespace coredumpd::index_schema {

const char* upload_expression(int version) {
  if (version < 4) return "0";
  // A core is pending while its row is not finished and sends a core (or may: the signature is
  // not decided yet); uploaded once done with an object key.
  return "COALESCE((SELECT CASE"
         " WHEN u.state = 'done' AND u.object_key != '' THEN 2"
         " WHEN u.state NOT IN ('done', 'skipped') AND u.mode != 'metadata' THEN 1"
         " ELSE 0 END FROM uploads u WHERE u.id = dumps.id), 0)";
}

}  // namespace coredumpd::index_schema
