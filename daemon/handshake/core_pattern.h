// Pointing kernel.core_pattern at our socket, and putting the previous value back.
#pragma once

#include <optional>
#include <string>

namespace coredumpd {

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
  /// Saves the current pattern and installs "@@<socket_path>". Throws std::system_error.
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
