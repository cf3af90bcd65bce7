// Pointing kernel.core_pattern at our socket, and putting the previous value back.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace coredumpd {

/// Longest socket path the kernel connects to: sockaddr_un's sun_path is 108 bytes with its NUL.
inline constexpr std::size_t kMaxSocketPathBytes = 107;
/// Longest core_pattern the kernel keeps (CORENAME_MAX_SIZE 128 with its NUL); a longer write is cut.
inline constexpr std::size_t kMaxCorePatternBytes = 127;

/// Why the kernel could not use `socket_path` in core_pattern "@@<socket_path>", or std::nullopt
/// if it can: the path must be absolute, without "..", without a space (the kernel cuts the pattern
/// there), at most kMaxSocketPathBytes long (the pattern at most kMaxCorePatternBytes), and no
/// existing component may be a symlink (the kernel follows none, docs/PROTOCOL.md §2.2, §2.3).
/// Components that do not exist yet are not checked. Never throws.
std::optional<std::string> socket_path_problem(const std::string& socket_path);

/// Throws std::invalid_argument "socket path <path> cannot be used by the kernel: <why>" when
/// socket_path_problem() names a problem.
void require_usable_socket_path(const std::string& socket_path);

/// Reads /proc/sys/kernel/core_pattern without its trailing newline. Throws std::system_error.
std::string read_core_pattern();

/// Writes `pattern` to /proc/sys/kernel/core_pattern. Throws std::system_error (EINVAL for a
/// pattern the kernel refuses, docs/PROTOCOL.md §2.2; EACCES/EPERM without privilege or outside the initial
/// mount namespace).
void write_core_pattern(const std::string& pattern);

/// Installs "@@<socket>" as core_pattern and restores the previous value when destroyed or when
/// restore() is called (idempotent). Only restores if the pattern is still ours, so it never
/// clobbers a value somebody else set meanwhile.
class CorePatternGuard {
 public:
  /// Saves the current pattern and installs "@@<socket_path>". Throws std::invalid_argument for a
  /// path the kernel cannot use (require_usable_socket_path()), std::system_error otherwise.
  explicit CorePatternGuard(const std::string& socket_path);
  ~CorePatternGuard();
  CorePatternGuard(const CorePatternGuard&) = delete;
  CorePatternGuard& operator=(const CorePatternGuard&) = delete;

  /// Puts the saved pattern back now. Never throws; failures are logged.
  void restore();
  const std::string& previous() const { return previous_; }

 private:
  std::string previous_;
  std::string ours_;
  bool active_ = false;
};

}  // namespace coredumpd
