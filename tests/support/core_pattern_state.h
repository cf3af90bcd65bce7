// What a CorePatternLock leaves behind for the next one: a small state file naming the holder and the
// pattern it saved, so a test killed by SIGKILL (a ctest timeout: no handler runs) does not leave
// kernel.core_pattern pointing at its dead socket for the next test to "restore".
#pragma once

#include <string>

namespace coredumpd::test {

/// The state file of the current CorePatternLock holder (root-only directory under /run).
inline constexpr const char* kCorePatternStatePath = "/run/coredumpd-test/core_pattern.state";

/// Records, atomically (write and rename), that this process (pid and start time) sets core_pattern
/// to `set` and will restore `previous`. Throws std::runtime_error if the file cannot be written.
void record_core_pattern_state(const std::string& set, const std::string& previous);

/// Removes the state file. Async-signal-safe (one unlink), for the fatal-signal restore path.
void clear_core_pattern_state() noexcept;

/// Called with the core_pattern lock held, before the current pattern is saved: if the pattern is
/// a socket ("@@/path" or "@/path") that nobody listens on, and either the state file says a test
/// that is gone set exactly it, or (no state file) its path lies in a test temp dir, writes back
/// what that test had saved (or "core" without a state file), saying so on stderr. A pattern that
/// has a listener, a pipe or file pattern, or one changed since the dead test set it, is left alone.
void recover_stale_core_pattern();

/// "@@/a/b" and "@/a/b" give "/a/b"; any other pattern gives "".
std::string core_pattern_socket_path(const std::string& pattern);

/// True unless connect() to the unix stream socket at `path` is refused (ECONNREFUSED: bound, not
/// listening) or finds no socket (ENOENT, ENOTDIR): an unclear answer counts as a listener.
bool socket_has_listener(const std::string& path);

/// Who holds the flock on the file open as `fd`: "pid 123 (cmdline), ..." for every process with a
/// descriptor holding it (/proc/<pid>/fdinfo), else the pid that took it (/proc/locks), else "".
std::string flock_holder(int fd);

}  // namespace coredumpd::test
