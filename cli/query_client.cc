#include "cli/query_client.h"

#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>

#include "store/record_json.h"
#include "util/fd_passing.h"
#include "util/text.h"

namespace coredumpd::cli {

namespace {

DumpctlError protocol_error(const std::string& path, const std::string& what) {
  return DumpctlError("unexpected reply from the query service at " + escape_for_display(path) + ": " + what);
}

void set_timeout(int fd, int option, std::chrono::milliseconds t) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(t.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((t.count() % 1000) * 1000);
  ::setsockopt(fd, SOL_SOCKET, option, &tv, sizeof tv);
}

}  // namespace

std::string query_refusal_message(std::optional<QueryErrorCode> code, const std::string& message) {
  const std::string m = escape_for_display(message);
  if (!code) return "the query service refused the request: " + m;
  switch (*code) {
    case QueryErrorCode::NotFound:
      return "no such coredump among those you may see (" + m + ")";
    case QueryErrorCode::NoCore: return m;  // the daemon names the dump, its state and reason
    case QueryErrorCode::Busy: return "the coredumpd query service is busy (" + m + "); try again later";
    case QueryErrorCode::Internal: return "coredumpd could not read its store: " + m;
    case QueryErrorCode::InProgress: return "the coredump is still being received (" + m + "); try again later";
    case QueryErrorCode::BadRequest:
    case QueryErrorCode::TooLarge:
      return "the query service did not understand dumpctl's request (" + m +
             "); are dumpctl and coredumpd the same version?";
  }
  return "the query service refused the request: " + m;
}

QueryClient::QueryClient(const std::string& path, std::chrono::milliseconds timeout) : path_(path) {
  const std::string shown = escape_for_display(path);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path)
    throw DumpctlError("query socket path " + shown + " is empty or too long for a unix socket");
  std::memcpy(addr.sun_path, path.data(), path.size());
  sock_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!sock_) throw DumpctlError(std::string("socket: ") + std::strerror(errno));
  set_timeout(sock_.get(), SO_RCVTIMEO, timeout);
  set_timeout(sock_.get(), SO_SNDTIMEO, timeout);
  int rc = 0;
  do {
    rc = ::connect(sock_.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  } while (rc != 0 && errno == EINTR);
  if (rc == 0) return;
  const int e = errno;
  if (e == ENOENT || e == ECONNREFUSED || e == ENOTSOCK || e == ENOTDIR) {
    throw QueryUnreachable(e, "coredumpd is not running: no query service at " + shown + " (" + std::strerror(e) +
                                  "); root can read the store directly");
  }
  throw DumpctlError("cannot connect to the coredumpd query service at " + shown + ": " + std::strerror(e));
}

void QueryClient::send(const QueryRequest& r) {
  const std::string line = query_request_line(r);
  std::string_view rest = line;
  while (!rest.empty()) {
    const ssize_t n = send_with_fd(sock_.get(), rest, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      // A daemon that refuses a connection (busy) writes why and hangs up: show its reason.
      if (e == EPIPE || e == ECONNRESET) {
        try {
          read_reply("(refusal)");
        } catch (const QueryRefused&) {
          throw;
        } catch (const std::exception&) {
        }
      }
      throw DumpctlError("cannot send to the query service at " + escape_for_display(path_) + ": " + std::strerror(e));
    }
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
}

std::string QueryClient::read_line() {
  std::size_t scanned = 0;
  for (;;) {
    if (const std::size_t nl = buf_.find('\n', scanned); nl != std::string::npos) {
      std::string line = buf_.substr(0, nl);
      buf_.erase(0, nl + 1);
      return line;
    }
    scanned = buf_.size();
    if (buf_.size() > kMaxReplyBytes) throw protocol_error(path_, "a reply line over 64 MiB");
    char chunk[64 * 1024];
    UniqueFd got;
    const ssize_t n = recv_with_fd(sock_.get(), chunk, sizeof chunk, &got);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK)
        throw DumpctlError("the query service at " + escape_for_display(path_) + " did not answer in time");
      throw DumpctlError("cannot read from the query service at " + escape_for_display(path_) + ": " +
                         std::strerror(errno));
    }
    if (got) fd_ = std::move(got);
    if (n == 0) throw DumpctlError("the query service at " + escape_for_display(path_) + " hung up mid-reply");
    buf_.append(chunk, static_cast<std::size_t>(n));
  }
}

nlohmann::json QueryClient::read_reply(const char* op) {
  const std::string line = read_line();
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("ok") || !j["ok"].is_boolean()) throw protocol_error(path_, "not a reply object");
  if (!j["ok"].get<bool>()) {
    const std::string message = j.value("error", std::string("(no message)"));
    const std::optional<QueryErrorCode> code = parse_query_error_code(j.value("code", std::string()));
    throw QueryRefused(code, query_refusal_message(code, message));
  }
  if (j.value("op", std::string()) != op) throw protocol_error(path_, std::string("not the reply to \"") + op + "\"");
  return j;
}

std::vector<DumpRecord> QueryClient::list() {
  std::vector<DumpRecord> out;
  scan(RecordQuery{}, [&](DumpRecord&& r) {
    out.push_back(std::move(r));
    return true;
  });
  return out;
}

void QueryClient::scan(const RecordQuery& q, const std::function<bool(DumpRecord&&)>& each) {
  send(ListRequest{q});
  read_reply("list");
  std::size_t count = 0;
  bool wanted = true;
  for (;;) {
    const nlohmann::json j = nlohmann::json::parse(read_line(), nullptr, false);
    if (!j.is_object()) throw protocol_error(path_, "a list line that is not a JSON object");
    if (j.contains("end")) {
      const auto n = j.find("count");
      if (n == j.end() || !n->is_number_unsigned() || n->get<std::size_t>() != count)
        throw protocol_error(path_, "the list's trailer does not count the records sent");
      return;
    }
    if (const auto ok = j.find("ok"); ok != j.end() && ok->is_boolean() && !ok->get<bool>()) {
      // The store failed midway: the error line takes the trailer's place.
      const std::optional<QueryErrorCode> code = parse_query_error_code(j.value("code", std::string()));
      throw QueryRefused(code, query_refusal_message(code, j.value("error", std::string("(no message)"))));
    }
    ++count;
    if (!wanted) continue;
    DumpRecord r;
    try {
      r = record_from_envelope(j);
    } catch (const std::exception& e) {
      throw protocol_error(path_, std::string("a malformed record: ") + e.what());
    }
    wanted = each(std::move(r));
  }
}

DumpRecord QueryClient::get(const std::string& id) {
  send(GetRequest{id});
  const nlohmann::json j = read_reply("get");
  try {
    return record_from_envelope(j.at("dump"));
  } catch (const std::exception& e) {
    throw protocol_error(path_, std::string("a malformed record: ") + e.what());
  }
}

ReceivedCore QueryClient::core(const std::string& id) {
  fd_.reset();
  send(CoreRequest{id});
  const nlohmann::json j = read_reply("core");
  ReceivedCore c;
  try {
    c.record = record_from_envelope(j.at("dump"));
  } catch (const std::exception& e) {
    throw protocol_error(path_, std::string("a malformed record: ") + e.what());
  }
  if (!fd_) throw protocol_error(path_, "the core's descriptor did not arrive");
  c.fd = std::move(fd_);
  return c;
}

bool QueryClient::remove(const std::string& id) {
  send(DeleteRequest{id});
  const nlohmann::json j = read_reply("delete");
  const auto missing = j.find("file_missing");
  return missing != j.end() && missing->is_boolean() && missing->get<bool>();
}

QueryStatus QueryClient::status() {
  send(StatusRequest{});
  const nlohmann::json j = read_reply("status");
  try {
    return status_from_json(j.at("status"));
  } catch (const std::exception& e) {
    throw protocol_error(path_, std::string("a malformed status: ") + e.what());
  }
}

}  // namespace coredumpd::cli
