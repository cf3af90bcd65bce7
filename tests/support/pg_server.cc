#include "tests/support/pg_server.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>

#include "tests/support/test_support.h"

namespace coredumpd::test {
namespace {

const std::string kScripts = COREDUMPD_SOURCE_DIR "/scripts/fleet/";
const std::string kPgBin = "/usr/lib/postgresql/15/bin";

// A port nobody listens on now (the kernel's choice for port 0); pg-up.sh binds it right after.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error("no free port on 127.0.0.1");
  ::close(fd);
  return ntohs(a.sin_port);
}

void run_script(const std::vector<std::string>& argv, const char* what) {
  auto [status, out] = run_capture(argv, 120s);
  if (status.exit_code() != 0) throw std::runtime_error(std::string(what) + " failed: " + out);
}

}  // namespace

std::optional<std::string> postgres_unavailable() {
  if (::access((kPgBin + "/initdb").c_str(), X_OK) != 0) return "no " + kPgBin + "/initdb (Debian's postgresql-15)";
  if (::geteuid() == 0 && ::system("id -u postgres >/dev/null 2>&1") != 0) return "running as root without a postgres user";
  return std::nullopt;
}

PgServer::PgServer() : dir_("/tmp/cdpg-" + std::to_string(::getpid()) + "-" + std::to_string(free_port())) {
  port_ = free_port();
  std::filesystem::remove_all(dir_);
  run_script({"/usr/bin/env", "PG_DIR=" + dir_, "PG_PORT=" + std::to_string(port_), "PG_DB=fleet",
              kScripts + "pg-up.sh"},
             "pg-up.sh");
}

PgServer::~PgServer() {
  run_capture({"/usr/bin/env", "PG_DIR=" + dir_, kScripts + "pg-down.sh"}, 60s);
}

std::string PgServer::conninfo(const std::string& db) const {
  return "host=" + dir_ + " port=" + std::to_string(port_) + " user=postgres dbname=" + db;
}

std::string PgServer::create_database(const std::string& db) {
  run_script({kPgBin + "/psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", conninfo("postgres"), "-c",
              "CREATE DATABASE \"" + db + "\""},
             "CREATE DATABASE");
  return conninfo(db);
}

void PgServer::stop() {
  run_script({"/usr/bin/env", "PG_DIR=" + dir_, "KEEP=1", kScripts + "pg-down.sh"}, "pg-down.sh");
}

void PgServer::start() {
  run_script({"/usr/bin/env", "PG_DIR=" + dir_, "PG_PORT=" + std::to_string(port_), "PG_REUSE=1",
              kScripts + "pg-up.sh"},
             "pg-up.sh (restart)");
}

}  // namespace coredumpd::test
