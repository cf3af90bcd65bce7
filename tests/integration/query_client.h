// A small client of the query service (store/query_protocol.h) for the tests: connect, send one
// request line, read the reply's lines (and a passed descriptor), with deadlines throughout.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/fd_passing.h"
#include "util/unique_fd.h"

namespace coredumpd::test {

/// Connects to the AF_UNIX stream socket `path`; an empty UniqueFd (errno set) on failure.
inline UniqueFd connect_query(const std::string& path) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return UniqueFd();
  return fd;
}

/// Reads from `fd` until a whole line is buffered in `buf`, EOF, an error, or `timeout`. Returns the
/// line (without '\n'), or std::nullopt. A descriptor that arrives is stored in `*passed`.
inline std::optional<std::string> read_line(int fd, std::string& buf, std::chrono::milliseconds timeout,
                                            UniqueFd* passed = nullptr) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (const auto nl = buf.find('\n'); nl != std::string::npos) {
      std::string line = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      return line;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char chunk[65536];
    UniqueFd got;
    const ssize_t n = recv_with_fd(fd, chunk, sizeof(chunk), &got);
    if (n <= 0) return std::nullopt;
    if (got && passed) *passed = std::move(got);
    buf.append(chunk, static_cast<std::size_t>(n));
  }
}

/// Sends `line` (with its '\n') and reads one reply line as JSON (null on timeout or EOF).
inline nlohmann::json ask(int fd, const std::string& line, UniqueFd* passed = nullptr,
                          std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  if (::send(fd, line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size())) return nullptr;
  std::string buf;
  auto reply = read_line(fd, buf, timeout, passed);
  if (!reply) return nullptr;
  return nlohmann::json::parse(*reply, nullptr, false);
}

/// Sends a list request and collects the envelopes; std::nullopt unless header and trailer came
/// and the trailer's count matches.
inline std::optional<std::vector<nlohmann::json>> ask_list(int fd, const std::string& request = "{\"op\":\"list\"}\n") {
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) return std::nullopt;
  std::string buf;
  auto header = read_line(fd, buf, std::chrono::seconds(20));
  if (!header) return std::nullopt;
  const auto h = nlohmann::json::parse(*header, nullptr, false);
  if (!h.is_object() || h.value("ok", false) != true) return std::nullopt;
  std::vector<nlohmann::json> out;
  for (;;) {
    auto line = read_line(fd, buf, std::chrono::seconds(20));
    if (!line) return std::nullopt;
    auto j = nlohmann::json::parse(*line, nullptr, false);
    if (j.contains("end")) {
      if (j.value("count", std::size_t{0}) != out.size()) return std::nullopt;
      return out;
    }
    out.push_back(std::move(j));
  }
}

}  // namespace coredumpd::test
