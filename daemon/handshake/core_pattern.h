// Pointing kernel.core_pattern at our socket, and putting the previous value back.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "util/kernel_support.h"

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

/// Used by every support check in this process that is not given facts of its own. main() sets it
/// from the test hooks only; never changed after start-up.
void set_default_kernel_facts(KernelFacts facts);
const KernelFacts& default_kernel_facts();

/// socket_mode_unsupported(facts) (util/kernel_support.h) with the process's default facts.
inline std::optional<std::string> socket_mode_unsupported() { return socket_mode_unsupported(default_kernel_facts()); }

/// Where `coredumpd --pattern=install` keeps the pattern it replaced (root-only /run/coredumpd,
/// which the socket unit creates and which outlives the socket; gone at reboot, like the pattern).
inline constexpr const char* kDefaultSavedPatternFile = "/run/coredumpd/core_pattern.previous";

/// What a `--pattern` command did: `changed` if core_pattern was written, `message` one line for
/// the journal or the terminal (why it was left alone, or what it was changed from and to).
struct PatternOutcome {
  bool changed = false;
  std::string message;
};

/// `coredumpd --pattern=install` (coredumpd.socket's ExecStartPost=, once the socket listens):
/// writes "@@<socket_path>" to core_pattern after saving the current value in `saved_file` (written
/// atomically). Leaves core_pattern alone, saying why, when the kernel lacks the protocol
/// (socket_mode_unsupported(facts)), when nothing is a socket at `socket_path` yet (the kernel
/// would find nothing to connect to), when the pattern is already ours (the saved value is kept), or
/// when the kernel refuses the write (read-only /proc/sys in a container, EINVAL outside the initial
/// mount namespace). Throws std::invalid_argument only for a path the kernel cannot use.
PatternOutcome install_core_pattern(const std::string& socket_path, const std::string& saved_file,
                                    const KernelFacts& facts = default_kernel_facts());

/// `coredumpd --pattern=restore` (the socket's ExecStopPost=, and the package's prerm): if
/// core_pattern is still "@@<socket_path>", writes back what `saved_file` holds ("core", the
/// kernel's default, when nothing was saved) and removes the file; any other pattern was set by
/// someone else after us and is left alone. Never throws.
PatternOutcome restore_core_pattern(const std::string& socket_path, const std::string& saved_file);

/// Installs "@@<socket>" as core_pattern and restores the previous value when destroyed or when
/// restore() is called (idempotent). Only restores if the pattern is still ours, so it never
/// clobbers a value somebody else set meanwhile.
class CorePatternGuard {
 public:
  /// Saves the current pattern and installs "@@<socket_path>", unless socket_mode_unsupported():
  /// then it logs why, changes nothing and restores nothing. Throws std::invalid_argument for a
  /// path the kernel cannot use (require_usable_socket_path()), std::system_error otherwise.
  explicit CorePatternGuard(const std::string& socket_path);
  ~CorePatternGuard();
  CorePatternGuard(const CorePatternGuard&) = delete;
  CorePatternGuard& operator=(const CorePatternGuard&) = delete;

  /// Puts the saved pattern back now. Never throws; failures are logged.
  void restore();
  const std::string& previous() const { return previous_; }
  /// False when the kernel lacked the protocol and nothing was installed.
  bool installed() const { return active_; }

 private:
  std::string previous_;
  std::string ours_;
  bool active_ = false;
};

}  // namespace coredumpd
