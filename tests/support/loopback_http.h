// A loopback HTTP peer for tests of the S3 client and the uploader: it answers each request with
// whatever the test writes, deliberately by hand (the replies are the malformed bytes under test).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <functional>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "util/unique_fd.h"

namespace coredumpd::test {

/// Writes all of `s` to `fd`; false if the peer went away.
inline bool send_all(int fd, const std::string& s) {
  return ::send(fd, s.data(), s.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(s.size());
}

/// One loopback listener on a free port; each accepted connection, one at a time, gets its request
/// request read (its head, and its body by Content-Length), then `reply(fd, request)`.
class LoopbackHttp {
 public:
  explicit LoopbackHttp(std::function<void(int fd, const std::string& head)> reply) : reply_(std::move(reply)) {
    listener_ = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listener_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socklen_t len = sizeof a;
    ::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    EXPECT_EQ(::listen(listener_.get(), 8), 0);
    thread_ = std::thread([this] { serve(); });
  }
  ~LoopbackHttp() {
    stop_ = true;
    thread_.join();
  }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int requests() const { return requests_; }
  std::atomic<bool> stop_{false};

 private:
  void serve() {
    while (!stop_) {
      pollfd p{listener_.get(), POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      const UniqueFd c(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!c) continue;
      std::string head;
      char buf[4096];
      while (head.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::recv(c.get(), buf, sizeof buf, 0);
        if (n <= 0) break;
        head.append(buf, static_cast<std::size_t>(n));
      }
      // The body (Content-Length's bytes) too: a socket closed with unread bytes sends an RST,
      // which may reach the client before the reply does.
      const auto end = head.find("\r\n\r\n");
      std::string lower = head.substr(0, end == std::string::npos ? head.size() : end);
      for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      if (const auto cl = lower.find("\r\ncontent-length:"); cl != std::string::npos && end != std::string::npos) {
        const std::size_t want = end + 4 + std::stoull(lower.substr(cl + 17));
        // As S3 does: libcurl waits up to 1 s for this before it sends a PUT's body.
        if (lower.find("\r\nexpect: 100-continue") != std::string::npos && head.size() < want)
          send_all(c.get(), "HTTP/1.1 100 Continue\r\n\r\n");
        while (head.size() < want) {
          const ssize_t n = ::recv(c.get(), buf, sizeof buf, 0);
          if (n <= 0) break;
          head.append(buf, static_cast<std::size_t>(n));
        }
      }
      ++requests_;
      reply_(c.get(), head);
    }
  }

  std::function<void(int, const std::string&)> reply_;
  UniqueFd listener_;
  int port_ = 0;
  std::atomic<int> requests_{0};
  std::thread thread_;
};


}  // namespace coredumpd::test
