#include "util/fd_passing.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>

namespace coredumpd {

namespace {

// Room for a handful of descriptors: a peer may attach more than the one we expect, and those must
// arrive (to be closed) rather than be dropped with MSG_CTRUNC set.
constexpr std::size_t kMaxFds = 8;

ssize_t send_retrying(int sock, msghdr* msg) {
  for (;;) {
    const ssize_t n = ::sendmsg(sock, msg, MSG_NOSIGNAL);
    if (n >= 0 || errno != EINTR) return n;
  }
}

}  // namespace

ssize_t send_with_fd(int sock, std::string_view data, int fd) {
  std::size_t sent = 0;
  bool fd_pending = fd >= 0;
  // An empty payload still has to carry its descriptor: SCM_RIGHTS needs at least one data byte
  // on a stream socket, so only send when there is something to send.
  while (sent < data.size()) {
    iovec iov{const_cast<char*>(data.data() + sent), data.size() - sent};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    if (fd_pending) {
      std::memset(control, 0, sizeof(control));
      msg.msg_control = control;
      msg.msg_controllen = sizeof(control);
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
    }
    const ssize_t n = send_retrying(sock, &msg);
    if (n < 0) {
      // A non-blocking socket that filled after part of the data went: report the part.
      if ((errno == EAGAIN || errno == EWOULDBLOCK) && sent > 0) return static_cast<ssize_t>(sent);
      return -1;
    }
    fd_pending = false;  // the descriptor went with the first byte of this call
    sent += static_cast<std::size_t>(n);
  }
  return static_cast<ssize_t>(sent);
}

ssize_t recv_with_fd(int sock, char* buf, std::size_t size, UniqueFd* fd) {
  iovec iov{buf, size};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return -1;

  // Take every descriptor that arrived, so none leaks: the first is the caller's, the rest closed.
  UniqueFd first;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int received;
      std::memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (!first && fd != nullptr) {
        first.reset(received);
      } else {
        UniqueFd extra(received);  // closed here
      }
    }
  }
  if (msg.msg_flags & MSG_CTRUNC) {
    errno = EBADMSG;  // descriptors were lost in transit; `first` is closed too
    return -1;
  }
  if (fd != nullptr && first) *fd = std::move(first);
  return n;
}

}  // namespace coredumpd
