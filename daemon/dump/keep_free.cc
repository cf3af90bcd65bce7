#include "daemon/dump/keep_free.h"

#include <sys/statvfs.h>

#include <algorithm>

namespace coredumpd {

KeepFreeGuard::KeepFreeGuard(int store_dirfd, const RetentionLimits& limits)
    : dirfd_(store_dirfd), limits_(limits), active_(limits.keep_free_bytes || limits.keep_free_percent) {}

bool KeepFreeGuard::allows(std::uint64_t spooled) {
  if (!reason_.empty()) return false;
  if (!active_ || spooled < next_check_) return true;
  struct statvfs vfs{};
  if (::fstatvfs(dirfd_, &vfs) < 0) {  // the write itself will say what is wrong
    next_check_ = spooled + kCheckEveryBytes;
    return true;
  }
  const auto avail = static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  const auto want = resolve_space_limits(limits_, static_cast<std::uint64_t>(vfs.f_blocks) * vfs.f_frsize).keep_free_bytes.value_or(0);
  const std::uint64_t room = avail > want ? avail - want : 0;
  const std::uint64_t step = std::clamp(room / 4, kMinCheckBytes, kCheckEveryBytes);
  const std::uint64_t may_land = step + std::min(spooled, kQueuedBytes);
  next_check_ = spooled + step;
  if (room >= may_land) return true;
  reason_ = "keep_free reached: " + std::to_string(avail) + " bytes free after " + std::to_string(spooled) +
            " bytes of the core, keep_free " + std::to_string(want) + " bytes";
  return false;
}

}  // namespace coredumpd
