#include "fleet/pg_exec.h"

#include <poll.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "fleet/fleet_index.h"

namespace coredumpd::fleet {

namespace {

// PQexec's result (the last one; the first error wins), sent asynchronously and waited for in
// steps of a second, so that `cancelled` is heard: a server that stopped answering (a frozen
// backend, a lost network) would otherwise hold the caller for ever, and the daemon's stop with it.
PgResult exec_cancellable(PGconn* conn, const char* what, const std::string& sql, const std::vector<const char*>& values,
                          const std::function<bool()>& cancelled) {
  const int sent = values.empty() ? PQsendQuery(conn, sql.c_str())
                                  : PQsendQueryParams(conn, sql.c_str(), static_cast<int>(values.size()), nullptr,
                                                      values.data(), nullptr, nullptr, 0);
  if (!sent) return nullptr;  // the caller reports PQerrorMessage()
  PgResult kept;
  for (;;) {
    while (PQisBusy(conn)) {
      if (cancelled()) throw FleetIndexError(std::string("fleet index: ") + what + ": cancelled");
      pollfd p{PQsocket(conn), POLLIN, 0};
      const int n = ::poll(&p, 1, 1000);
      if (n < 0 && errno != EINTR) throw FleetIndexError(std::string("fleet index: ") + what + ": poll: " + std::strerror(errno));
      if (n > 0 && !PQconsumeInput(conn)) break;  // the connection failed: PQgetResult() says so
    }
    PgResult r(PQgetResult(conn));
    if (!r) return kept;
    const auto ok = [](const PGresult* x) {
      return PQresultStatus(x) == PGRES_COMMAND_OK || PQresultStatus(x) == PGRES_TUPLES_OK;
    };
    if (!kept || ok(kept.get())) kept = std::move(r);  // an error, once kept, stays
    if (PQstatus(conn) == CONNECTION_BAD) return kept;
  }
}

}  // namespace

PgResult pg_exec(PGconn* conn, const char* what, const std::string& sql, const PgParams& params,
                 const std::function<bool()>& cancelled) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
  // PQexec for a script without parameters: PQexecParams refuses several statements in one string.
  PgResult r(cancelled ? exec_cancellable(conn, what, sql, values, cancelled).release()
             : params.empty() ? PQexec(conn, sql.c_str())
                              : PQexecParams(conn, sql.c_str(), static_cast<int>(values.size()), nullptr,
                                             values.data(), nullptr, nullptr, 0));
  const ExecStatusType st = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return r;
  std::string msg = r ? PQresultErrorMessage(r.get()) : "";
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  if (msg.empty()) msg = pg_error(conn);
  // A connection lost (the server went away mid-statement) rather than a statement refused.
  throw FleetIndexError(std::string("fleet index: ") + what + ": " + msg, PQstatus(conn) == CONNECTION_BAD);
}

std::string pg_error(PGconn* conn) {
  std::string why = PQerrorMessage(conn);
  while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
  return why;
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
