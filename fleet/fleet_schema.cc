#include "fleet/fleet_schema.h"

#include <array>
#include <string>

#include "fleet/fleet_index.h"
#include "fleet/pg_exec.h"

namespace coredumpd::fleet {
namespace {

// The key of the advisory lock that serialises migrations: any constant unique to this schema
// (the ASCII of "cdfleet1"); other applications' locks on the same database use other keys.
constexpr const char* kMigrationLock = "7161961923169580081";

// Append only: a released migration never changes; a new schema change is a new entry.
constexpr std::array kMigrations = {
    // 1: one row per crash per host. Times are UTC µs as in the local store (DumpRecord); the
    // prefix indexes (text_pattern_ops) serve `dumpctl fleet crashes <sig-prefix>` and
    // `fleet fetch <id-prefix>` through LIKE 'prefix%'.
    R"sql(
CREATE TABLE fleet_crashes (
  host_id        text    NOT NULL,
  machine_id     text    NOT NULL DEFAULT '',
  dump_id        text    NOT NULL,
  timestamp_us   bigint  NOT NULL,
  exe            text    NOT NULL DEFAULT '',
  comm           text    NOT NULL DEFAULT '',
  signal         integer NOT NULL DEFAULT 0,
  signature      text    NOT NULL DEFAULT '',
  signature_text text    NOT NULL DEFAULT '',
  build_ids      text[]  NOT NULL DEFAULT '{}',
  package        text    NOT NULL DEFAULT '',
  container      text    NOT NULL DEFAULT '',
  object_key     text    NOT NULL DEFAULT '',
  record_key     text    NOT NULL DEFAULT '',
  core_bytes     bigint  NOT NULL DEFAULT 0 CHECK (core_bytes >= 0),
  state          text    NOT NULL
                 CHECK (state IN ('metadata', 'uploading', 'uploaded', 'skipped', 'failed')),
  inserted_at    timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (host_id, dump_id)
);
CREATE INDEX fleet_crashes_time ON fleet_crashes (timestamp_us);
CREATE INDEX fleet_crashes_signature ON fleet_crashes (signature text_pattern_ops, timestamp_us);
CREATE INDEX fleet_crashes_dump_id ON fleet_crashes (dump_id text_pattern_ops);
)sql",
};

}  // namespace

int fleet_schema_version() { return static_cast<int>(kMigrations.size()); }

void migrate_fleet_schema(PGconn* conn) {
  for (int version = 1; version <= fleet_schema_version(); ++version) {
    pg_exec(conn, "begin migration", "BEGIN");
    try {
      // Held until COMMIT/ROLLBACK: a second host waits here, then sees the version recorded.
      pg_exec(conn, "lock for migration", "SELECT pg_advisory_xact_lock($1::bigint)", {kMigrationLock});
      pg_exec(conn, "create the migrations table",
              "CREATE TABLE IF NOT EXISTS fleet_schema_migrations ("
              " version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())");
      const PgResult newest =
          pg_exec(conn, "read the schema version", "SELECT coalesce(max(version), 0) FROM fleet_schema_migrations");
      const long long have = pg_int(newest.get(), 0, 0);
      if (have > fleet_schema_version())
        throw FleetIndexError("fleet index: the database's schema is version " + std::to_string(have) +
                              ", newer than this program's " + std::to_string(fleet_schema_version()) +
                              "; upgrade coredumpd");
      if (have < version) {
        pg_exec(conn, ("migration " + std::to_string(version)).c_str(), kMigrations[version - 1]);
        pg_exec(conn, "record the migration", "INSERT INTO fleet_schema_migrations (version) VALUES ($1)",
                {std::to_string(version)});
      }
      pg_exec(conn, "commit migration", "COMMIT");
    } catch (...) {
      // Best effort: on a lost connection there is nothing to roll back.
      PQclear(PQexec(conn, "ROLLBACK"));
      throw;
    }
  }
}

}  // namespace coredumpd::fleet
