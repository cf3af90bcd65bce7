// The S3 client (s3/s3_client.h) against a hostile endpoint: a loopback server in this program that
// answers each request with what a broken or malicious S3 could send (radosgw cannot be made to).
// The server is deliberately hand-written: its replies are the malformed bytes under test.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "s3/s3_client.h"
#include "util/unique_fd.h"

namespace coredumpd {
namespace {

/// One loopback listener; each accepted connection gets its request head read, then `reply(fd)`.
class HostileServer {
 public:
  explicit HostileServer(std::function<void(int fd, const std::string& head)> reply) : reply_(std::move(reply)) {
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
  ~HostileServer() {
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

S3Credentials creds() { return {"AKIDHOSTILE", "secret-never-sent", ""}; }

bool send_all(int fd, const std::string& s) {
  return ::send(fd, s.data(), s.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(s.size());
}

// A 200 whose body never ends: the client keeps at most 1 MiB of a reply, and must also stop
// reading it (a worker that reads for ever is a worker lost). The server counts what it could
// send before the client hung up; it gives up itself at 256 MiB.
TEST(S3Hostile, EndlessReplyIsCutShort) {
  std::atomic<std::uint64_t> sent{0};
  std::atomic<bool> client_hung_up{false};
  S3Result r;
  {
    HostileServer server([&](int fd, const std::string&) {
      send_all(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\n\r\n<ListPartsResult>");
      const std::string chunk(64 * 1024, ' ');
      while (sent < (256u << 20)) {
        if (!send_all(fd, chunk)) {
          client_hung_up = true;
          return;
        }
        sent += chunk.size();
      }
    });
    S3Client c(S3Location{server.endpoint(), "us-east-1", "b"}, creds());
    std::vector<S3Client::Part> parts;
    r = c.list_parts("k", "id", &parts);
  }  // the server's thread has finished its reply
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.retryable) << r.error;
  EXPECT_NE(r.error.find("larger than"), std::string::npos) << r.error;
  EXPECT_TRUE(client_hung_up) << "the client read all " << sent << " bytes";
  // The cap (1 MiB) plus what the loopback socket buffers hold.
  EXPECT_LT(sent.load(), 32u << 20);
}

// A 3xx to another host is not followed: the signed request (and the access key in it) goes
// nowhere but the configured endpoint, and the redirect is an error the operator sees.
TEST(S3Hostile, RedirectElsewhereIsNotFollowed) {
  HostileServer elsewhere([](int fd, const std::string&) {
    send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
  });
  const std::string to = elsewhere.endpoint() + "/b/k";
  HostileServer server([&](int fd, const std::string&) {
    send_all(fd, "HTTP/1.1 307 Temporary Redirect\r\nLocation: " + to + "\r\nContent-Length: 0\r\n\r\n");
  });
  S3Client c(S3Location{server.endpoint(), "us-east-1", "b"}, creds());
  const S3Result r = c.put_object("k", "{}", "application/json");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.http_status, 307);
  EXPECT_FALSE(r.retryable);
  EXPECT_EQ(elsewhere.requests(), 0);
}

// A server that takes the request and never answers: the daemon's stop (set_cancel) ends the
// request; nothing waits for the 60 s low-speed limit.
TEST(S3Hostile, SilentServerIsCancelled) {
  std::atomic<bool> release{false};
  HostileServer server([&](int, const std::string&) {
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  });
  S3Client c(S3Location{server.endpoint(), "us-east-1", "b"}, creds());
  c.set_cancel([&] { return server.requests() > 0; });  // stopped once the request waits on the server
  const S3Result r = c.put_object("k", "{}", "application/json");
  release = true;
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "cancelled");
  EXPECT_FALSE(r.retryable);
}

}  // namespace
}  // namespace coredumpd
