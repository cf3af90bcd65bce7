// keep_free while a core is written: the spool stops taking bytes before the store's filesystem
// falls below the free space the retention limits want left (vacuum can only make room before).
#pragma once

#include <cstdint>
#include <string>

#include "store/retention_limits.h"

namespace coredumpd {

/// Watches the store's free space as a core is spooled. Cheap: one fstatvfs per kCheckEveryBytes
/// spooled (a few µs against 8 MiB of disk writes; bench/README.md, "keep_free during the write").
class KeepFreeGuard {
 public:
  /// Most bytes spooled between two looks at the filesystem; fewer (a quarter of the room above
  /// keep_free, at least kMinCheckBytes) when the room is small, so a small store is not cut early.
  static constexpr std::uint64_t kCheckEveryBytes = 8ULL << 20;
  static constexpr std::uint64_t kMinCheckBytes = 256ULL << 10;
  /// Spooled bytes that may not have reached the disk at a look: the spool's queued blocks
  /// (spool.h: at most 5 MiB).
  static constexpr std::uint64_t kQueuedBytes = 6ULL << 20;

  /// Guards the store at `store_dirfd` with `limits` (keep_free_bytes / keep_free_percent); with
  /// neither set it never cuts and never looks.
  KeepFreeGuard(int store_dirfd, const RetentionLimits& limits);

  /// Call before spooling more, with the bytes spooled so far. Returns true while the spool may
  /// take more; false once the room above keep_free (f_bavail - keep_free) is less than what may land
  /// before the next look (the distance to it, plus the queued blocks once any were spooled), from
  /// then on for good, with reason() saying so. The first look is before the first byte (retention
  /// ran after the last dump, so a store below keep_free now has nothing left to evict). A failing
  /// fstatvfs does not cut.
  bool allows(std::uint64_t spooled);

  /// "keep_free reached: <free> bytes free after <spooled> bytes of the core, keep_free <want>
  /// bytes"; "" while allows() is true.
  const std::string& reason() const { return reason_; }

 private:
  int dirfd_;
  RetentionLimits limits_;
  bool active_;
  std::uint64_t next_check_ = 0;
  std::string reason_;
};

}  // namespace coredumpd
