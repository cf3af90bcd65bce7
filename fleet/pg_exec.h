// libpq, owned and checked: a PGresult freed by its owner, and one statement with text parameters
// that either returns its result or throws FleetIndexError with libpq's message.
#pragma once

#include <libpq-fe.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace coredumpd::fleet {

struct PgResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
/// A PGresult that PQclear()s itself.
using PgResult = std::unique_ptr<PGresult, PgResultDeleter>;

/// Parameters in libpq's text format; std::nullopt is SQL NULL.
using PgParams = std::vector<std::optional<std::string>>;

/// Runs `sql` ($1.. bound to `params`) on `conn` and returns its result (PGRES_COMMAND_OK or
/// PGRES_TUPLES_OK). Throws FleetIndexError "fleet index: <what>: <libpq's message>" otherwise;
/// the connection's PQstatus() then tells a lost server (CONNECTION_BAD) from an SQL error.
/// `cancelled`, when set, is asked about once a second while the server has not answered: when it
/// returns true, pg_exec() throws FleetIndexError "... cancelled" at once, the statement still in
/// flight (the connection is then unusable: close it). Without it, the wait is libpq's own.
PgResult pg_exec(PGconn* conn, const char* what, const std::string& sql, const PgParams& params = {},
                 const std::function<bool()>& cancelled = {});

/// libpq's message of the last failure on `conn` (PQerrorMessage), without its trailing newline.
std::string pg_error(PGconn* conn);

/// The text of column `col` of row `row` ("" for NULL).
std::string pg_text(const PGresult* r, int row, int col);
/// Column `col` of row `row` as an integer (0 for NULL). Throws FleetIndexError if it is not one.
long long pg_int(const PGresult* r, int row, int col);

}  // namespace coredumpd::fleet
