// A real PostgreSQL 15 for tests of the fleet index (issue 26), started and stopped with the
// project's scripts/fleet/pg-up.sh and pg-down.sh: its own directory, socket and port.
#pragma once

#include <optional>
#include <string>

namespace coredumpd::test {

/// Why a PostgreSQL server cannot be started here (no postgresql-15), or std::nullopt if it can.
std::optional<std::string> postgres_unavailable();

/// A PostgreSQL cluster in a fresh directory under /tmp, on a unix socket there and a free port
/// on 127.0.0.1, with one database "fleet". Stopped and removed on destruction.
class PgServer {
 public:
  /// Runs pg-up.sh; throws std::runtime_error with its output if the server does not start.
  PgServer();
  ~PgServer();
  PgServer(const PgServer&) = delete;
  PgServer& operator=(const PgServer&) = delete;

  /// libpq connection string of database `db` (default: the one pg-up.sh made).
  std::string conninfo(const std::string& db = "fleet") const;
  /// Creates database `db` (empty) and returns its conninfo. Throws std::runtime_error.
  std::string create_database(const std::string& db);
  /// Stops the server, keeping its data (clients are disconnected).
  void stop();
  /// Starts it again on the same data, socket and port. Throws std::runtime_error.
  void start();
  const std::string& dir() const { return dir_; }
  int port() const { return port_; }

 private:
  std::string dir_;
  int port_ = 0;
};

}  // namespace coredumpd::test
