// Cores kept outside the store while it cannot take them (issue 23: early boot, a store not yet
// mounted, read-only or full): what a record says about such a core, and moving the file in.
// The daemon keeps them (daemon/dump/core_fallback.h); dumpctl reads them where they are.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "store/dump_record.h"

namespace coredumpd {

/// True if `r` holds a core (Complete or Truncated, a path) that is still in its fallback
/// directory: extra.fallback without moved_us.
bool core_in_fallback(const DumpRecord& r);

/// The directory extra.fallback names, or std::nullopt if `r` has no core in a fallback.
std::optional<std::string> fallback_dir_of(const DumpRecord& r);

/// Moves the core file `name` from the directory `from_dirfd` into `to_dirfd` (another
/// filesystem): copied into an unnamed file (holes kept: SEEK_DATA/SEEK_HOLE), fsynced, linked as
/// `name`, the directory fsynced, then the source removed. A `name` already in `to_dirfd` with
/// the source's size is taken as the result of a move a stop interrupted after the link (the
/// source is then removed). Returns the bytes the file holds (its size). Throws
/// std::system_error (the step and errno): the source then stays, and nothing is left under
/// `name` in `to_dirfd`.
std::uint64_t move_core_file(int from_dirfd, int to_dirfd, const std::string& name);

}  // namespace coredumpd
