// The core as libelf reads it: the stored core's descriptor itself when uncompressed, or a
// temporary file (O_TMPFILE, never linked) the zstd stream was decompressed into.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/unique_fd.h"

namespace coredumpd::analyzer {

/// Opens an unnamed temporary file in `dir` (O_TMPFILE, mode 0600), before the sandbox (which
/// then forbids opening files for writing). Throws std::system_error naming `dir`.
UniqueFd open_temp_file(const std::string& dir);

/// The core ready for libelf: `fd` (borrowed: the caller's core fd when uncompressed, else
/// `owned`), or `reason` when there is nothing to analyse.
struct CoreFile {
  int fd = -1;
  UniqueFd owned;
  std::uint64_t size = 0;              ///< bytes of the (decompressed) core
  std::string reason;                  ///< non-empty: unusable, and why
  std::vector<std::string> warnings;   ///< e.g. "zstd stream truncated: analysing the first N bytes"
};

/// Prepares `core_fd` ("none": used as it is; "zstd": stream-decompressed into `temp`, all-zero
/// 4 KiB blocks left as holes, then truncated to the decompressed size). A truncated or corrupt
/// zstd stream after some output keeps the decompressed prefix, with a warning (a core's notes come
/// first, so a prefix is often still worth unwinding); with no output it is unusable. Output past
/// `max_bytes` (RLIMIT_FSIZE) stops there, with a warning. Never throws for the core's content.
CoreFile prepare_core(int core_fd, const std::string& compression, UniqueFd temp, std::uint64_t max_bytes);

}  // namespace coredumpd::analyzer
