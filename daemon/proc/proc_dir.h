// Race-free reading of /proc/<pid> for a process known by its pidfd (docs/PROTOCOL.md §3.5).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>

#include "util/unique_fd.h"

namespace coredumpd {

/// A /proc/<pid> directory handle proven to belong to the process behind a pidfd.
///
/// The dirfd is opened first, then the pidfd is probed: a task in the coredump handshake cannot be
/// reaped, so if it is alive after the open, the dirfd is its own and not a recycled PID's. Reads go
/// through openat(dirfd, ...); if the process dies, they fail with ESRCH instead of showing another
/// process. Callers re-check still_ours() after reading (docs/PROTOCOL.md §3.5).
class ProcDir {
 public:
  /// Opens /proc/<pid> (pid in our pid namespace) and verifies it against `pidfd`.
  /// Returns std::nullopt and sets `error` if the directory cannot be opened or the process is gone.
  static std::optional<ProcDir> open(int pidfd, pid_t pid, std::string& error);

  /// Reads the file `name` (relative, e.g. "cmdline" or "task/12/status"), at most `max_bytes` bytes.
  /// Returns std::nullopt and sets `error` ("<name>: <strerror>") on failure.
  std::optional<std::string> read(const std::string& name, std::size_t max_bytes, std::string& error) const;

  /// Reads the symlink `name` (e.g. "exe", "cwd", "fd/3"). std::nullopt and `error` on failure.
  std::optional<std::string> readlink(const std::string& name, std::string& error) const;

  /// True if the pidfd still refers to a live process (so everything read so far was its own).
  bool still_ours() const;

  int dirfd() const { return dir_.get(); }
  pid_t pid() const { return pid_; }
  int pidfd() const { return pidfd_; }

 private:
  ProcDir(UniqueFd dir, int pidfd, pid_t pid) : dir_(std::move(dir)), pidfd_(pidfd), pid_(pid) {}
  UniqueFd dir_;
  int pidfd_;  // borrowed: the session owns it
  pid_t pid_;
};

}  // namespace coredumpd
