// Socket I/O bounded by one overall deadline, for the fake kernel.
//
// The real kernel blocks without any timeout (docs/PROTOCOL.md §4.7). A test must never hang,
// so every blocking step of the fake kernel goes through these helpers, which poll() a non-blocking
// socket against a single Deadline shared by the whole session.
#pragma once

#include <chrono>
#include <cstddef>
#include <span>
#include <string>

#include "tests/fake_kernel/scoped_fd.h"

namespace coredumpd::fake_kernel {

/// A point in time after which the session gives up. A zero budget means "never" (like the kernel).
class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  /// Starts the clock now; `budget` <= 0 means no deadline.
  explicit Deadline(std::chrono::milliseconds budget);

  /// True if there is no deadline at all.
  [[nodiscard]] bool infinite() const noexcept { return infinite_; }
  /// True once the deadline has passed (never for an infinite deadline).
  [[nodiscard]] bool expired() const;
  /// Time left (zero when expired; Clock::duration::max() when infinite).
  [[nodiscard]] Clock::duration remaining() const;
  /// Timeout for poll(): -1 when infinite, else the remaining time rounded *up* to whole
  /// milliseconds so that a poll never spins with a zero timeout before the deadline.
  [[nodiscard]] int poll_timeout_ms() const;

 private:
  bool infinite_;
  Clock::time_point at_;
};

/// How a bounded I/O operation ended.
enum class IoStatus {
  Ok,       ///< everything requested was transferred
  Eof,      ///< the peer shut down its write side (or closed) first
  Error,    ///< a socket error; IoResult::error holds the errno (e.g. EPIPE, ECONNRESET)
  Timeout,  ///< the deadline passed first
};

/// Result of one bounded I/O operation.
struct IoResult {
  IoStatus status = IoStatus::Ok;  ///< how it ended
  int error = 0;                   ///< errno for IoStatus::Error, else 0
  std::size_t done = 0;            ///< bytes transferred (or peeked) before it ended
};

/// Sends all of `data` (MSG_NOSIGNAL) on the non-blocking socket `fd`, in as few send() calls as the
/// socket buffer allows: a buffer that fits goes out in exactly one send.
IoResult send_all(int fd, std::span<const std::byte> data, const Deadline& deadline);

/// Reads exactly out.size() bytes, like recv(MSG_WAITALL). Eof if the peer hangs up first.
IoResult recv_exact(int fd, std::span<std::byte> out, const Deadline& deadline);

/// Peeks exactly out.size() bytes without consuming them, like recv(MSG_PEEK|MSG_WAITALL).
/// Eof if the peer hangs up before that many bytes are queued.
IoResult peek_exact(int fd, std::span<std::byte> out, const Deadline& deadline);

/// One read of up to out.size() bytes: Ok with done > 0, Eof, Error or Timeout.
IoResult recv_some(int fd, std::span<std::byte> out, const Deadline& deadline);

/// Sleeps for `duration` or until the deadline, whichever is first. Returns false if cut short.
bool sleep_within(std::chrono::microseconds duration, const Deadline& deadline);

/// Connects a non-blocking AF_UNIX stream socket to `path`, as the kernel does: a full backlog is
/// EAGAIN, not a wait (docs/PROTOCOL.md §2.4). The socket, or an invalid one with `err` set
/// (ENAMETOOLONG for a path that does not fit sun_path, ETIMEDOUT past the deadline, else connect's).
ScopedFd connect_unix(const std::string& path, const Deadline& deadline, int& err);

}  // namespace coredumpd::fake_kernel
