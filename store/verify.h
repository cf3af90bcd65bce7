// Verify (`dumpctl verify`): the consistency of the store directory with the index.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "store/index.h"

namespace coredumpd {

/// Kinds of inconsistency between the store directory and the index.
enum class VerifyProblem {
  Orphan,            ///< a file no row accounts for (no row, or the row says it has no core)
  Missing,           ///< a complete/truncated row whose core file is not in the store
  NotRegular,        ///< a row's core name is a symlink, directory, ...: never followed
  SizeMismatch,      ///< the file's size differs from the row's stored_size
  Corrupt,           ///< (deep) a zstd file is not a valid zstd stream or fails its checksum
                     ///< (a raw core has no checksum: it cannot be found corrupt)
  /// (deep) the core bytes (decompressed, or read from a raw core) differ from core_size
  /// (complete dumps) or extra.stored_core_bytes (truncated dumps)
  CoreSizeMismatch,
  Unreadable,        ///< the file or directory could not be examined (errno text in detail)
  /// (deep) a complete dump whose core holds fewer bytes than its own ELF program headers promise:
  /// a stream cut short (a SIGKILL mid-dump) that a daemon before this check recorded as complete
  ShortCore,
};

/// Stable name: "orphan", "missing", "not_regular", "size_mismatch", "corrupt",
/// "core_size_mismatch", "unreadable", "short_core".
const char* verify_problem_name(VerifyProblem p);

/// One inconsistency found by verify().
struct VerifyIssue {
  VerifyProblem problem = VerifyProblem::Orphan;
  std::string name;    ///< file name in the store (raw bytes: may need escaping to print)
  std::string id;      ///< the row's id, or "" when no row is involved
  std::string detail;  ///< one line of explanation (may quote `name`'s raw bytes)
};

/// Result of verify().
struct VerifyReport {
  std::vector<VerifyIssue> issues;
  std::uint64_t files = 0;         ///< directory entries examined (not dotfiles, not index.sqlite*)
  std::uint64_t cores = 0;         ///< rows that hold_core()
  std::uint64_t deep_checked = 0;  ///< files read through (deep): decompressed, or read if raw
  /// True if nothing was found.
  bool ok() const { return issues.empty(); }
};

/// Compares the store directory with the index: orphan files (ignoring dotfiles such as
/// `.partial-*` and `index.sqlite*`), missing files, non-regular entries where a core should be,
/// size mismatches (the file's st_size against stored_size, for both formats), and with `deep`
/// also reads each core through (bounded memory, output discarded) as its row's compression says:
/// a zstd file is decompressed, which checks its content checksums; a raw core (compression
/// "none") is read as is, which finds read errors. Either way the core bytes it yields must be
/// core_size for a complete dump (extra.stored_core_bytes for a truncated one, when recorded), and
/// a complete dump's core must hold all its ELF program headers promise (CoreNoteScanner's
/// promised_size), which finds short cores in stores written before the daemon checked it.
/// Never follows symlinks and never modifies anything. Findings that could be a race with a
/// running daemon (file or row created/removed during the scan) are re-checked before being
/// reported. Throws IndexError if the index cannot be read.
VerifyReport verify(const Index& index, int store_dirfd, bool deep = false);

}  // namespace coredumpd
