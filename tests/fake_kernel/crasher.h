// The fake kernel's crashing task as a real process (issue 25 item 3): a `fake-crasher` that holds a
// write lock, shares it as the CLOSE_FILES RFC selftest does (coredump_close_files_test.c, series
// "coredump, files: exit files on request"), makes the connect() to the coredump socket (so the
// server's peer is this process, as it is the crashing task with a real kernel), and closes its fd
// table when the fake kernel's close-files step asks, exactly where the RFC kernel does it.
//
// Which locks that releases is then up to the real kernel's lock code, not to this test code:
//  - POSIX locks belong to the fd table: released when it is closed, even if a forked process
//    keeps the file open; kept if a CLONE_FILES process still uses the table;
//  - flock and OFD locks belong to the open file description: released with its last reference,
//    kept while a forked (or CLONE_FILES) process holds it; a dup in the crasher's own table is
//    closed with it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>

#include "tests/fake_kernel/scoped_fd.h"

namespace coredumpd::fake_kernel {

namespace crasher_abi {
struct SharedPage;
}

/// How the crasher locks its file (the selftest's enum lock_kind).
enum class LockKind { Posix, Ofd, Flock };
/// Who else has a handle on the lock (the selftest's enum lock_share).
enum class LockShare {
  None,
  Dup,    ///< a second descriptor in the crasher's own table
  Fork,   ///< a forked process keeps the descriptor (its own copy of the table)
  Files,  ///< a CLONE_FILES process shares the crasher's fd table
};

/// "posix", "ofd", "flock"; "none", "dup", "fork", "files".
const char* lock_kind_name(LockKind kind);
const char* lock_share_name(LockShare share);

/// What to start.
struct CrasherSpec {
  std::string program;     ///< path of the fake-crasher binary
  std::string lock_path;   ///< the file to write-lock (created if missing)
  LockKind kind = LockKind::Posix;
  LockShare share = LockShare::None;
  int threads = 0;         ///< extra idle threads (the selftest uses 4)
};

/// A running fake-crasher. All waits are bounded; the destructor kills the crasher and its sharer.
class Crasher {
 public:
  /// Starts the crasher and waits (up to `timeout`) until it holds the lock. std::nullopt with
  /// `error` if it could not start or lock.
  static std::optional<Crasher> start(const CrasherSpec& spec, std::string& error,
                                      std::chrono::milliseconds timeout = std::chrono::seconds(5));
  Crasher(Crasher&&) noexcept;
  Crasher& operator=(Crasher&&) = delete;
  Crasher(const Crasher&) = delete;
  ~Crasher();

  /// The crasher's pid (the server's SO_PEERCRED pid).
  [[nodiscard]] pid_t pid() const { return pid_; }
  /// The forked / CLONE_FILES process holding the shared descriptor; 0 if none.
  [[nodiscard]] pid_t sharer_pid() const;

  /// Has the crasher connect() a non-blocking AF_UNIX stream socket to `path` and hands it over.
  /// Invalid with `err` (errno of socket/connect, ETIMEDOUT) on failure.
  ScopedFd connect(const std::string& path, int& err, std::chrono::milliseconds timeout);

  /// Closes the fd table of every thread of the crasher and returns once each thread's
  /// close_range() returned (so the old table is closed, if no one else used it). False if that
  /// did not happen within `timeout`.
  bool close_files(std::chrono::milliseconds timeout);

  /// Ends the crasher (SIGKILL, reaped), as the kernel ends the task after its dump. Idempotent.
  void end();

  /// After end(): lets the sharer go and returns what it saw: 'O' if its descriptor to the lock
  /// was still open, 'C' if closed; std::nullopt if there is no sharer or no answer in `timeout`.
  std::optional<char> sharer_verdict(std::chrono::milliseconds timeout = std::chrono::seconds(5));

 private:
  Crasher() = default;
  pid_t pid_ = -1;
  ScopedFd pidfd_, control_, release_write_, result_read_, sharer_pidfd_;
  crasher_abi::SharedPage* page_ = nullptr;
  int threads_ = 0;
};

/// Does another process hold a write lock of `kind` on the file of `fd`? (The RFC selftest's
/// lock_held(): a non-blocking flock for flock locks, F_GETLK — which reports OFD locks too — for
/// the others.) An F_GETLK error counts as held, so a test then fails loudly.
bool lock_held(int fd, LockKind kind);

}  // namespace coredumpd::fake_kernel
