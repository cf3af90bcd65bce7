// The sockets systemd passed (LISTEN_FDS), told apart by FileDescriptorName=: the kernel's socket
// ("kernel", in coredumpd.socket) and the query service's ("query", in coredumpd-query.socket).
#pragma once

namespace coredumpd {

/// Descriptors systemd passed, -1 for those it did not.
struct PassedSockets {
  int kernel = -1;  ///< the socket the kernel connects to
  int query = -1;   ///< the query service's socket
};

/// Takes the sockets systemd passed, once (sd_listen_fds_with_names(), environment unset): the one
/// named "kernel" is the kernel's, "query" the query service's. Units from before the query
/// service pass one socket under another name (the unit's, or "unknown"): a single socket not
/// named "query" is the kernel's. Throws std::runtime_error when the sockets cannot be told apart
/// (several unnamed ones, two of one name).
PassedSockets take_passed_sockets();

}  // namespace coredumpd
