// Waiting on one descriptor with a deadline: poll() retried across EINTR with the time left.
#pragma once

#include <poll.h>

#include <chrono>
#include <span>

namespace coredumpd {

/// How a wait on a descriptor ended.
enum class PollStatus {
  Ready,    ///< the descriptor reported an event (see PollResult::revents)
  Timeout,  ///< the deadline passed first
  Failed,   ///< poll() failed with something other than EINTR (see PollResult::error)
};

/// The outcome of poll_until() / poll_for().
struct PollResult {
  PollStatus status = PollStatus::Timeout;
  short revents = 0;  ///< for Ready: the events, which may be POLLERR, POLLHUP or POLLNVAL
  int error = 0;      ///< for Failed: errno
};

/// Waits until `fd` reports one of `events` (or an error or hang-up) or `deadline` passes.
/// EINTR is retried with the time left, rounded up to whole milliseconds so that the wait never
/// spins with a zero timeout before the deadline. A deadline of time_point::max() waits forever.
PollResult poll_until(int fd, short events, std::chrono::steady_clock::time_point deadline);

/// poll_until() on several descriptors: waits until one of `fds` reports an event (each pollfd's
/// revents is set; PollResult::revents stays 0) or `deadline` passes. A pollfd with fd -1 is ignored.
PollResult poll_many_until(std::span<pollfd> fds, std::chrono::steady_clock::time_point deadline);

/// poll_until() with a deadline `timeout` from now.
PollResult poll_for(int fd, short events, std::chrono::milliseconds timeout);

}  // namespace coredumpd
