#include "util/poll.h"

#include <algorithm>
#include <cerrno>
#include <climits>

namespace coredumpd {

namespace {

using Clock = std::chrono::steady_clock;

/// poll()'s timeout for the time left until `deadline`: -1 for no deadline, else whole
/// milliseconds rounded up.
int timeout_ms(Clock::time_point deadline) {
  if (deadline == Clock::time_point::max()) return -1;
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, INT_MAX));
}

}  // namespace

PollResult poll_until(int fd, short events, Clock::time_point deadline) {
  while (true) {
    pollfd p{fd, events, 0};
    const int ready = ::poll(&p, 1, timeout_ms(deadline));
    if (ready > 0) return {PollStatus::Ready, p.revents, 0};
    if (ready == 0) {
      if (Clock::now() >= deadline) return {PollStatus::Timeout, 0, 0};
      continue;  // woke a little early (the kernel's slack): wait for the rest
    }
    if (errno != EINTR) return {PollStatus::Failed, 0, errno};
  }
}

PollResult poll_many_until(std::span<pollfd> fds, Clock::time_point deadline) {
  while (true) {
    const int ready = ::poll(fds.data(), fds.size(), timeout_ms(deadline));
    if (ready > 0) return {PollStatus::Ready, 0, 0};
    if (ready == 0) {
      if (Clock::now() >= deadline) return {PollStatus::Timeout, 0, 0};
      continue;
    }
    if (errno != EINTR) return {PollStatus::Failed, 0, errno};
  }
}

PollResult poll_for(int fd, short events, std::chrono::milliseconds timeout) {
  return poll_until(fd, events, Clock::now() + timeout);
}

}  // namespace coredumpd
