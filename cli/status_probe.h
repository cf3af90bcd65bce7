// What `dumpctl status` reads about the machine besides the daemon: whether the kernel can hand
// crashes to a socket, where core_pattern points, and whether that socket is there and listening.
// Read-only; never connects to the kernel's socket (a connection there is taken for a crash).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "util/kernel_support.h"

namespace coredumpd::cli {

/// The kernel socket's path when no daemon says otherwise (the daemon's "socket" default,
/// daemon/policy/config.h; cli/ may not include daemon/).
inline constexpr const char* kDefaultKernelSocket = "/run/coredumpd/coredump.socket";

/// Whether the running kernel supports core_pattern's "@@" socket mode.
struct KernelSupport {
  std::string release;                    ///< uname -r
  std::optional<std::string> core_modes;  ///< /proc/sys/kernel/core_modes, if the file exists
  bool socket_mode = false;               ///< "@@" works here
  std::string why;                        ///< how that was decided, one phrase
};

/// Decides KernelSupport by the daemon's rule, socket_mode_unsupported() (util/kernel_support.h):
/// Linux 6.17 or later and, where /proc/sys/kernel/core_modes (at `core_modes_path`) exists, it
/// lists "socket". Never throws.
KernelSupport probe_kernel_support(const std::string& core_modes_path = "/proc/sys/kernel/core_modes");

using ::coredumpd::release_at_least;  // util/kernel_support.h

/// The socket path of a core_pattern "@@<path>" (a trailing newline ignored); std::nullopt for any
/// other pattern ("|program", a file name, "@<path>" of the older socket mode).
std::optional<std::string> pattern_socket(std::string_view core_pattern);

/// What is known of a socket file without connecting to it.
struct SocketState {
  bool exists = false;                 ///< something is at the path
  bool is_socket = false;              ///< ... and it is a socket
  std::optional<bool> listening;       ///< a listening socket is bound there (/proc/net/unix); unknown if unreadable
  std::optional<std::string> error;    ///< stat's error other than ENOENT (EACCES: /run/coredumpd is 0700)
};

/// stat()s `path` and looks it up in /proc/net/unix (at `proc_net_unix`, this network namespace's
/// AF_UNIX sockets). Never throws.
SocketState probe_socket(const std::string& path, const std::string& proc_net_unix = "/proc/net/unix");

/// Whether the text of /proc/net/unix lists a listening socket (flags with __SO_ACCEPTCON,
/// 0x10000, include/net/af_unix.h / net/unix/af_unix.c unix_seq_show()) bound at `path`.
bool unix_socket_listening(std::string_view proc_net_unix, std::string_view path);

}  // namespace coredumpd::cli
