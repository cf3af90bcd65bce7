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
  /// Bytes spooled between two looks at the filesystem.
  static constexpr std::uint64_t kCheckEveryBytes = 8ULL << 20;
  /// Bytes that may land on the disk after a look and before the next one: the next kCheckEveryBytes
  /// and the spool's queued blocks (spool.h: at most 5 MiB). The cut comes this much early.
  static constexpr std::uint64_t kMarginBytes = kCheckEveryBytes + (8ULL << 20);

  /// Guards the store at `store_dirfd` with `limits` (keep_free_bytes / keep_free_percent); with
  /// neither set it never cuts and never looks.
  KeepFreeGuard(int store_dirfd, const RetentionLimits& limits);

  /// Call before spooling more, with the bytes spooled so far. Returns true while the spool may
  /// take more; false once free space (f_bavail) minus kMarginBytes would be below keep_free, from
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
