#include "fleet/pg_exec.h"

#include <charconv>

#include "fleet/fleet_index.h"

namespace coredumpd::fleet {

PgResult pg_exec(PGconn* conn, const char* what, const std::string& sql, const PgParams& params) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
  // PQexec for a script without parameters: PQexecParams refuses several statements in one string.
  PgResult r(params.empty() ? PQexec(conn, sql.c_str())
                            : PQexecParams(conn, sql.c_str(), static_cast<int>(values.size()), nullptr,
                                           values.data(), nullptr, nullptr, 0));
  const ExecStatusType st = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return r;
  std::string msg = r ? PQresultErrorMessage(r.get()) : "";
  if (msg.empty()) msg = PQerrorMessage(conn);
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  throw FleetIndexError(std::string("fleet index: ") + what + ": " + msg);
}

std::string pg_text(const PGresult* r, int row, int col) {
  if (PQgetisnull(r, row, col)) return {};
  return std::string(PQgetvalue(r, row, col), static_cast<std::size_t>(PQgetlength(r, row, col)));
}

long long pg_int(const PGresult* r, int row, int col) {
  if (PQgetisnull(r, row, col)) return 0;
  const char* s = PQgetvalue(r, row, col);
  const char* end = s + PQgetlength(r, row, col);
  long long v = 0;
  auto [p, ec] = std::from_chars(s, end, v);
  if (ec != std::errc() || p != end)
    throw FleetIndexError(std::string("fleet index: column ") + PQfname(r, col) + " is not an integer: " + s);
  return v;
}

}  // namespace coredumpd::fleet
