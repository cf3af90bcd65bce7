// A uniquely named file that is removed unless kept: partial outputs never survive an error, nor
// SIGINT, SIGTERM or SIGHUP.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "cli/core_file.h"
#include "cli/signal_cleanup.h"
#include "store/dump_record.h"
#include "util/unique_fd.h"

namespace coredumpd::cli {

/// The directory for large temporary files (a decompressed core, a download): $TMPDIR, else
/// /var/tmp (cores are large; /tmp is often a small tmpfs).
std::string temp_dir();

/// The directory part of `path` ("." for a bare name, "/" for a file in the root), where a
/// TempFile goes so that rename_to(path) stays on one filesystem.
std::string dir_of(const std::string& path);

/// A new, empty file created with mkostemp (mode 0600, O_CLOEXEC) from `dir` and a name prefix.
/// The destructor closes the descriptor and unlinks the file unless rename_to() moved it; while it
/// lives, SIGINT, SIGTERM and SIGHUP remove it too (SignalCleanup).
class TempFile {
 public:
  /// Creates `<dir>/<prefix>XXXXXX`. Throws DumpctlError if it cannot be created.
  TempFile(const std::string& dir, const std::string& prefix);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  /// The open descriptor (read-write), or -1 after close().
  int fd() const { return fd_.get(); }
  /// The file's path.
  const std::string& path() const { return path_; }
  /// Closes the descriptor, reporting deferred write errors. Throws DumpctlError.
  void close();
  /// Renames the (closed) file to `target` and stops owning it. Throws DumpctlError.
  void rename_to(const std::string& target);

 private:
  std::string path_;
  UniqueFd fd_;
  bool owned_ = true;
  std::unique_ptr<SignalCleanup> on_signal_;
};

/// The hidden dumpctl flag, for tests only, that calls set_test_stall_after_first_write(true).
inline constexpr const char* kTestStallFlag = "--test-stall-after-first-write";

/// Tests only (dumpctl --test-stall-after-first-write): from now on write_core_sparse() stops after
/// its first write and waits for a signal, so a test can interrupt a write in progress. A flag, not
/// an environment variable, so that nothing inherited can make dumpctl hang.
void set_test_stall_after_first_write(bool stall);

/// Streams the record's open core (extract_core()) into `file`, which must be new and empty, with
/// holes for zero blocks (SparseWriter), and closes it. Returns the core's size in bytes. Throws
/// DumpctlError. `progress`, if set, gets the bytes written so far after each chunk (ProgressLine).
std::uint64_t write_core_sparse(OpenCore& core, const DumpRecord& r, TempFile& file,
                                const std::function<void(std::uint64_t done)>& progress = {});

}  // namespace coredumpd::cli
