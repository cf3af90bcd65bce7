// Removing dumpctl's temporary files when it is killed by SIGINT, SIGTERM or SIGHUP: a decompressed
// core can be gigabytes, and an interrupted `dump -o` or `debug` must not leave it behind.
#pragma once

#include <csignal>

namespace coredumpd::cli {

/// A path registered for removal by the signal handler while this object lives.
///
/// The first registration installs a handler for SIGINT, SIGTERM and SIGHUP (not for a signal that
/// was ignored when dumpctl started, e.g. SIGHUP under nohup). The handler only does what is
/// async-signal-safe: unlink() every registered path, then re-raise the signal with its default
/// action (SA_RESETHAND), so dumpctl's exit status still says which signal killed it.
/// Registration blocks those signals while it updates the table, so no signal sees a half-written
/// entry. Paths longer than PATH_MAX - 1 or beyond the table's few slots are not registered
/// (they are still removed on an orderly exit by their owner).
class SignalCleanup {
 public:
  /// Registers `path` (copied). Never throws.
  explicit SignalCleanup(const char* path);
  /// Unregisters the path (does not remove the file).
  ~SignalCleanup();
  SignalCleanup(const SignalCleanup&) = delete;
  SignalCleanup& operator=(const SignalCleanup&) = delete;

  /// Stops removing the path on a signal (after it was renamed into place, or removed).
  void release();
  /// Whether the path got a slot.
  bool registered() const { return slot_ >= 0; }

 private:
  int slot_ = -1;
};

/// Blocks SIGINT, SIGTERM and SIGHUP for its lifetime (restoring the previous mask), so that a file
/// created inside is registered with SignalCleanup before a signal can strike.
class BlockCleanupSignals {
 public:
  BlockCleanupSignals();
  ~BlockCleanupSignals();
  BlockCleanupSignals(const BlockCleanupSignals&) = delete;
  BlockCleanupSignals& operator=(const BlockCleanupSignals&) = delete;

 private:
  sigset_t old_{};
};

/// In a child after fork(), before exec: SIGINT, SIGTERM and SIGHUP back to their default action
/// where SignalCleanup's handler is installed, so the child never removes the parent's files.
/// Async-signal-safe.
void disarm_signal_cleanup();

}  // namespace coredumpd::cli
