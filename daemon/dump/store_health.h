// Whether the store can take a core right now.
#pragma once

#include <optional>
#include <string>

namespace coredumpd {

/// Bytes below which the store's filesystem counts as full for a new dump (the vacuum keeps the
/// configured keep_free; this is the last line).
inline constexpr unsigned long long kStoreMinFreeBytes = 1ULL << 20;

/// Why the store at `store_dirfd` cannot take a core now — missing (the descriptor is not a
/// directory: the server's placeholder while its path does not exist, docs/EARLY_BOOT.md),
/// read-only filesystem (mounted ro, or
/// refusing writes after an error), directory removed, filesystem full (< kStoreMinFreeBytes
/// available), files cannot be created — or std::nullopt if it can. Four syscalls (fstat, fstatvfs,
/// an O_TMPFILE open and its close; tens of microseconds); safe to call in the handshake.
std::optional<std::string> store_problem(int store_dirfd);

}  // namespace coredumpd
