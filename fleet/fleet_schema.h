// The fleet index's schema as a list of migrations, applied in order, each once.
#pragma once

#include <libpq-fe.h>

namespace coredumpd::fleet {

/// The schema version after every migration has run (the number of migrations).
int fleet_schema_version();

/// Brings the database on `conn` up to fleet_schema_version(): each migration not yet recorded in
/// the table fleet_schema_migrations runs in its own transaction, under a transaction-scoped
/// advisory lock (pg_advisory_xact_lock), so hosts that start together apply each one exactly once
/// and never see a half-made table. Idempotent. Throws FleetIndexError with libpq's message, and
/// when the database is newer than this program (a version above fleet_schema_version()).
void migrate_fleet_schema(PGconn* conn);

}  // namespace coredumpd::fleet
