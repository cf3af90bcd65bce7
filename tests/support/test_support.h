// Helpers shared by the integration and end-to-end tests: temp dirs, child processes with bounded
// waits, a running coredumpd, and the global core_pattern lock.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace coredumpd::test {

using namespace std::chrono_literals;

/// A fresh directory under /tmp (short paths: socket paths must stay < 108 bytes), removed with
/// its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

/// Result of waiting for a child.
struct ExitStatus {
  bool exited = false;      ///< false if the wait timed out (the child was then SIGKILLed)
  int raw = 0;              ///< waitpid status
  bool signaled() const;
  int term_signal() const;
  bool core_dumped() const;  ///< WCOREDUMP
  int exit_code() const;
};

/// Starts `argv` (argv[0] is a path) with stdout/stderr appended to `log_file` (if non-empty).
/// Returns the pid. Throws std::runtime_error if fork fails.
pid_t spawn(const std::vector<std::string>& argv, const std::string& log_file = "");

/// Waits up to `timeout` for `pid`; on timeout sends SIGKILL, reaps it and returns exited=false.
ExitStatus wait_for(pid_t pid, std::chrono::milliseconds timeout);

/// When wait_for() last reaped `pid`, in UTC microseconds since the epoch (the clock of
/// DumpRecord::timestamp_us), if that wait had seen it still running, so that `pid` exited at most
/// one poll (5 ms) before; std::nullopt otherwise (never reaped there, or already dead when the
/// wait began: its exit time is then unknown). Bounds when a crashing task was released.
std::optional<std::int64_t> reaped_at_us(pid_t pid);

/// Runs a command to completion (bounded), capturing stdout. Returns {exit status, stdout}.
std::pair<ExitStatus, std::string> run_capture(const std::vector<std::string>& argv,
                                               std::chrono::milliseconds timeout = 60s);

/// The size in bytes of the largest unnamed (O_TMPFILE: "<dir>/#<ino> (deleted)") file process
/// `pid` holds open in directory `dir`, found through /proc/<pid>/fd: the spool of a dump in
/// flight. 0 if there is none or /proc cannot be read.
std::uint64_t largest_spool_of(pid_t pid, const std::string& dir);

/// Polls `cond` every 20 ms until it is true or `timeout` passes. Returns cond's last value.
bool wait_until(const std::function<bool()>& cond, std::chrono::milliseconds timeout);

/// Reads a whole file; std::nullopt if it cannot be opened.
std::optional<std::string> read_file(const std::string& path);

/// The fields of a /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat file at `path`, numbered as in
/// proc(5) from 1 (field n is at [n - 1]); empty if it cannot be read. The comm field (2), which may
/// hold spaces and parentheses, is kept whole.
std::vector<std::string> proc_stat_fields(const std::string& path);

/// A coredumpd child process on a socket and store of the test's choosing. Stopped (SIGTERM, then
/// SIGKILL after 10 s) on destruction.
class Daemon {
 public:
  /// Starts `binary` with `--socket socket --store store` (and `--query-socket ""`, no query
  /// service, unless `extra_args` name one) plus `extra_args`, logging to `log`, and
  /// waits (up to 10 s) until the socket exists. Throws std::runtime_error if it does not come up.
  /// A non-empty `launcher` is run instead, with the daemon's command line appended (e.g.
  /// {"/usr/bin/unshare", "--pid", "--fork", "--kill-child", "--"}); pid() is then the launcher's.
  Daemon(const std::string& binary, const std::string& socket, const std::string& store, const std::string& log,
         const std::vector<std::string>& extra_args = {}, const std::vector<std::string>& launcher = {});
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  /// Sends SIGTERM and waits (bounded) for a clean exit. Returns the exit status.
  ExitStatus stop(std::chrono::milliseconds timeout = 30s);
  /// Sends SIGKILL (a crash of the daemon) and reaps it.
  ExitStatus kill_hard();
  pid_t pid() const { return pid_; }
  /// The daemon's log so far.
  std::string log() const;

 private:
  pid_t pid_ = -1;
  std::string log_;
};

/// Exclusive use of kernel.core_pattern, as DEVELOPERS.md asks: takes an exclusive flock on
/// /run/lock/coredumpd-core_pattern.lock (waiting at most 20 minutes, naming the holder on stderr
/// every minute), recovers a pattern left by a test killed with SIGKILL (core_pattern_state.h),
/// saves the current pattern, installs `pattern`, and restores the saved value on destruction, and
/// also if the test process is killed by SIGINT/SIGTERM/SIGABRT/SIGSEGV/SIGBUS (async-signal-safe
/// restore, then re-raise).
class CorePatternLock {
 public:
  /// Throws std::runtime_error if the lock cannot be had (naming its holder, from /proc/locks) or
  /// the pattern cannot be written.
  explicit CorePatternLock(const std::string& pattern);
  ~CorePatternLock();
  CorePatternLock(const CorePatternLock&) = delete;
  CorePatternLock& operator=(const CorePatternLock&) = delete;
  const std::string& previous() const { return previous_; }

 private:
  int lock_fd_ = -1;
  std::string previous_;
};

/// Sets the soft RLIMIT_CORE of this process (and so of the processes it starts) while in scope.
/// coredumpd honours the limit by default, like systemd-coredump, and Debian's default soft limit
/// is 0; a fake-kernel peer is the test process itself, so its limit counts too.
class ScopedCoreLimit {
 public:
  explicit ScopedCoreLimit(unsigned long long soft);
  ~ScopedCoreLimit();
  ScopedCoreLimit(const ScopedCoreLimit&) = delete;
  ScopedCoreLimit& operator=(const ScopedCoreLimit&) = delete;

 private:
  unsigned long long saved_cur_ = 0, saved_max_ = 0;
};

/// Why the real-kernel tests cannot run here, or std::nullopt if they can: they need root and a
/// kernel with the "@@" socket protocol (Linux 6.17+, "socket" in /proc/sys/kernel/core_modes).
std::optional<std::string> real_kernel_unavailable();

/// True under COREDUMPD_REQUIRE_REAL_KERNEL=1 (.ci/run sets it): a test that cannot run for want of
/// a real kernel then fails, with real_kernel_unavailable()'s reason, instead of skipping, so a
/// machine that tests no real crash cannot go green. Gtest tests use SKIP_WITHOUT_REAL_KERNEL().
bool real_kernel_required();

}  // namespace coredumpd::test
