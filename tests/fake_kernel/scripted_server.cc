#include "tests/fake_kernel/scripted_server.h"

#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "protocol/wire.h"

namespace coredumpd::fake_kernel::testing {

std::vector<std::byte> make_ack(std::uint32_t size_field, std::uint64_t mask, std::size_t send_len,
                                std::uint32_t spare, std::uint64_t memory_types) {
  const protocol::coredump_ack ack{size_field, spare, mask, memory_types};
  std::vector<std::byte> bytes(send_len, std::byte{0});
  std::memcpy(bytes.data(), &ack, std::min(send_len, sizeof(ack)));
  return bytes;
}

std::vector<std::byte> make_ack(std::uint32_t size, std::uint64_t mask) {
  return make_ack(size, mask, size);
}

std::string make_temp_dir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/fake-kernel-test.XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return tmpl;
}

ServerConn::ServerConn(ScopedFd fd) : fd_(std::move(fd)) {
  timeval tv{static_cast<time_t>(kServerIoTimeout.count()), 0};
  ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd_.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

std::vector<std::byte> ServerConn::read_request() {
  std::uint32_t size = 0;
  if (::recv(fd_.get(), &size, sizeof(size), MSG_PEEK | MSG_WAITALL) != sizeof(size)) return {};
  std::vector<std::byte> req(std::min<std::uint32_t>(size, 64 * 1024));
  if (req.empty()) return {};
  const ssize_t n = ::recv(fd_.get(), req.data(), req.size(), MSG_WAITALL);
  if (n != static_cast<ssize_t>(req.size())) return {};
  return req;
}

int ServerConn::queued() const {
  int n = 0;
  return ::ioctl(fd_.get(), FIONREAD, &n) == 0 ? n : -1;
}

bool ServerConn::send(std::span<const std::byte> bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::send(fd_.get(), bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

std::optional<std::uint32_t> ServerConn::read_marker() {
  std::uint32_t marker = 0;
  if (::recv(fd_.get(), &marker, sizeof(marker), MSG_WAITALL) != sizeof(marker)) return std::nullopt;
  return marker;
}

ReadEnd ServerConn::read_to_end(std::size_t max) {
  ReadEnd end;
  std::vector<std::byte> buf(256 * 1024);
  while (end.data.size() < max) {
    const ssize_t n = ::recv(fd_.get(), buf.data(), std::min(buf.size(), max - end.data.size()), 0);
    if (n > 0) {
      end.data.insert(end.data.end(), buf.begin(), buf.begin() + n);
      continue;
    }
    if (n == 0) return end;
    if (errno == EINTR) continue;
    if (errno == EAGAIN) end.timed_out = true;
    else end.end_errno = errno;
    return end;
  }
  return end;
}

int ServerConn::next_read() {
  std::byte b{};
  const ssize_t n = ::recv(fd_.get(), &b, 1, 0);
  if (n == 1) return -1;
  if (n == 0) return 0;
  return errno == EAGAIN ? -2 : errno;
}

bool ServerConn::wait_peer_closed() {
  // events = 0: only POLLHUP/POLLERR wake us, not the readable EOF of a half-close.
  pollfd pfd{fd_.get(), 0, 0};
  const int ms = static_cast<int>(std::chrono::milliseconds(kServerIoTimeout).count());
  return ::poll(&pfd, 1, ms) == 1 && (pfd.revents & POLLHUP) != 0;
}

void ServerConn::shutdown_write() { ::shutdown(fd_.get(), SHUT_WR); }

void ServerConn::close() { fd_.reset(); }

ScriptedServer::ScriptedServer(Script script, int backlog, bool accept)
    : dir_(make_temp_dir()), path_(dir_ + "/kernel.sock") {
  listen_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path_.size() >= sizeof(addr.sun_path)) throw std::runtime_error("socket path too long: " + path_);
  std::memcpy(addr.sun_path, path_.c_str(), path_.size());
  if (::bind(listen_.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listen_.get(), backlog) != 0) {
    throw std::runtime_error("cannot listen on " + path_ + ": " + std::strerror(errno));
  }
  if (!accept) return;
  thread_ = std::thread([this, script = std::move(script)] {
    pollfd pfd{listen_.get(), POLLIN, 0};
    const int ms = static_cast<int>(std::chrono::milliseconds(kServerIoTimeout).count());
    if (::poll(&pfd, 1, ms) != 1) return;
    ScopedFd conn(::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!conn.valid()) return;
    accepted_ = true;
    ServerConn c(std::move(conn));
    script(c);
  });
}

ScriptedServer::~ScriptedServer() {
  join();
  listen_.reset();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void ScriptedServer::join() {
  if (thread_.joinable()) thread_.join();
}

}  // namespace coredumpd::fake_kernel::testing
