#include "tests/fake_kernel/deadline_io.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <thread>

namespace coredumpd::fake_kernel {

namespace {

// While a partial peek is pending, poll() keeps reporting POLLIN for the bytes already queued, so
// the wait for the rest is a short sleep instead (the kernel's own MSG_PEEK|MSG_WAITALL blocks).
constexpr auto kPartialPeekBackoff = std::chrono::milliseconds(1);

// Waits until `fd` reports one of `events` (or an error/hangup). Returns the revents, 0 on timeout,
// -1 with errno set on a poll() failure other than EINTR.
int wait_for(int fd, short events, const Deadline& deadline) {
  for (;;) {
    if (deadline.expired()) return 0;
    pollfd pfd{fd, events, 0};
    const int rc = ::poll(&pfd, 1, deadline.poll_timeout_ms());
    if (rc > 0) return pfd.revents;
    if (rc == 0) {
      if (deadline.expired()) return 0;
      continue;
    }
    if (errno != EINTR) return -1;
  }
}

IoResult error_result(int err, std::size_t done) { return {IoStatus::Error, err, done}; }

}  // namespace

Deadline::Deadline(std::chrono::milliseconds budget)
    : infinite_(budget.count() <= 0), at_(Clock::now() + budget) {}

bool Deadline::expired() const { return !infinite_ && Clock::now() >= at_; }

Deadline::Clock::duration Deadline::remaining() const {
  if (infinite_) return Clock::duration::max();
  const auto now = Clock::now();
  return now >= at_ ? Clock::duration::zero() : at_ - now;
}

int Deadline::poll_timeout_ms() const {
  if (infinite_) return -1;
  const auto left = remaining();
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return static_cast<int>(std::clamp<long long>(ms, 0, INT_MAX));
}

IoResult send_all(int fd, std::span<const std::byte> data, const Deadline& deadline) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) return error_result(errno, done);
    const int rev = wait_for(fd, POLLOUT, deadline);
    if (rev < 0) return error_result(errno, done);
    if (rev == 0) return {IoStatus::Timeout, 0, done};
    // POLLERR/POLLHUP: the next send() reports the precise errno (EPIPE, ECONNRESET).
  }
  return {IoStatus::Ok, 0, done};
}

IoResult recv_exact(int fd, std::span<std::byte> out, const Deadline& deadline) {
  std::size_t done = 0;
  while (done < out.size()) {
    const IoResult r = recv_some(fd, out.subspan(done), deadline);
    done += r.done;
    if (r.status != IoStatus::Ok) return {r.status, r.error, done};
  }
  return {IoStatus::Ok, 0, done};
}

IoResult peek_exact(int fd, std::span<std::byte> out, const Deadline& deadline) {
  for (;;) {
    const ssize_t n = ::recv(fd, out.data(), out.size(), MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) return error_result(errno, 0);
    const auto have = n > 0 ? static_cast<std::size_t>(n) : 0;
    if (have >= out.size()) return {IoStatus::Ok, 0, have};
    if (n == 0 && !out.empty()) return {IoStatus::Eof, 0, 0};
    // Nothing or part of it queued: wait for more, or for the peer's hangup (POLLRDHUP), which
    // leaves the partial bytes readable but means the rest will never come.
    const int rev = wait_for(fd, POLLIN | POLLRDHUP, deadline);
    if (rev < 0) return error_result(errno, have);
    if (rev == 0) return {IoStatus::Timeout, 0, have};
    if (have > 0) {
      if (rev & (POLLRDHUP | POLLHUP)) {
        // Re-peek once: bytes may have arrived together with the hangup.
        const ssize_t again = ::recv(fd, out.data(), out.size(), MSG_PEEK | MSG_DONTWAIT);
        if (again >= 0 && static_cast<std::size_t>(again) >= out.size())
          return {IoStatus::Ok, 0, static_cast<std::size_t>(again)};
        return {IoStatus::Eof, 0, again > 0 ? static_cast<std::size_t>(again) : have};
      }
      if (!sleep_within(kPartialPeekBackoff, deadline)) return {IoStatus::Timeout, 0, have};
    }
  }
}

IoResult recv_some(int fd, std::span<std::byte> out, const Deadline& deadline) {
  for (;;) {
    const ssize_t n = ::recv(fd, out.data(), out.size(), MSG_DONTWAIT);
    if (n > 0) return {IoStatus::Ok, 0, static_cast<std::size_t>(n)};
    if (n == 0) return {IoStatus::Eof, 0, 0};
    if (errno == EINTR) continue;
    if (errno != EAGAIN) return error_result(errno, 0);
    const int rev = wait_for(fd, POLLIN, deadline);
    if (rev < 0) return error_result(errno, 0);
    if (rev == 0) return {IoStatus::Timeout, 0, 0};
  }
}

bool sleep_within(std::chrono::microseconds duration, const Deadline& deadline) {
  if (deadline.infinite() || duration <= deadline.remaining()) {
    std::this_thread::sleep_for(duration);
    return true;
  }
  std::this_thread::sleep_for(deadline.remaining());
  return false;
}

ScopedFd connect_unix(const std::string& path, const Deadline& deadline, int& err) {
  ScopedFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    err = errno;
    return fd;
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    err = ENAMETOOLONG;
    return ScopedFd();
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (errno != EINPROGRESS) {
      err = errno;
      return ScopedFd();
    }
    // Not seen for AF_UNIX, but harmless: wait for the outcome within the deadline.
    pollfd pfd{fd.get(), POLLOUT, 0};
    if (::poll(&pfd, 1, deadline.poll_timeout_ms()) <= 0) {
      err = ETIMEDOUT;
      return ScopedFd();
    }
    socklen_t len = sizeof(err);
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return ScopedFd();
  }
  return fd;
}

}  // namespace coredumpd::fake_kernel
