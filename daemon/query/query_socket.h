// The query service's listening socket: the one systemd passed (FileDescriptorName=query), or one
// bound at a path.
#pragma once

#include <string>

#include "util/unique_fd.h"

namespace coredumpd {

/// Binds and listens (non-blocking, close-on-exec) on AF_UNIX stream socket `path`, mode 0666:
/// who may see what is decided per request from the peer's credentials (store/query_protocol.h),
/// so anyone may connect. A stale socket file at `path` is replaced; anything else there is an
/// error. The parent directory must exist. Throws std::system_error or std::runtime_error.
UniqueFd listen_query_socket(const std::string& path, int backlog);

/// Checks that `fd` (passed by systemd) is a listening AF_UNIX stream socket, makes it
/// non-blocking and returns its bound path ("" if unnamed). Throws std::runtime_error.
std::string adopt_query_socket(int fd);

}  // namespace coredumpd
