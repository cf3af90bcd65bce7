// Descriptors across an AF_UNIX stream socket (SCM_RIGHTS): the query service hands a user the
// core of their own dump as an open, read-only descriptor rather than a path they could not open.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string_view>

#include "util/unique_fd.h"

namespace coredumpd {

/// Sends all of `data` on stream socket `sock` (MSG_NOSIGNAL; blocking or not, as the socket is),
/// with descriptor `fd` attached to the first byte when fd >= 0. Returns the bytes sent (fewer than
/// data.size() only on a non-blocking socket whose buffer filled; the descriptor went with the
/// first byte), or -1 with errno set (EPIPE: the peer hung up).
ssize_t send_with_fd(int sock, std::string_view data, int fd);

/// Receives up to `size` bytes from `sock` into `buf`. A descriptor that arrives with them is stored
/// in `*fd` (close-on-exec, MSG_CMSG_CLOEXEC); any further descriptors in the same message are
/// closed, and a truncated control message (MSG_CTRUNC) makes the call fail with EBADMSG. Returns the
/// byte count (0 at end of stream) or -1 with errno set.
ssize_t recv_with_fd(int sock, char* buf, std::size_t size, UniqueFd* fd);

}  // namespace coredumpd
