#include "daemon/dump/arena_pool.h"

#include <algorithm>
#include <utility>

namespace coredumpd {

void ArenaPool::prewarm() {
  for (std::size_t n = idle(); n < keep_; n = idle()) {
    AnonRegion region(region_bytes_, PageSize::Huge);  // outside the lock: this is the slow part
    region.prefault();
    give_back(std::move(region));
  }
}

AnonRegion ArenaPool::acquire() {
  {
    std::lock_guard lock(mu_);
    // Huge-page regions first: they sit at the back (give_back()).
    if (!idle_.empty()) {
      AnonRegion region = std::move(idle_.back());
      idle_.pop_back();
      return region;
    }
  }
  AnonRegion region(region_bytes_, PageSize::Small);
  return region;
}

void ArenaPool::give_back(AnonRegion region) noexcept {
  if (region.data() == nullptr || region.size() < region_bytes_) return;
  AnonRegion dropped;  // unmapped after the lock is released
  {
    std::lock_guard lock(mu_);
    if (idle_.size() >= keep_) {
      // Full: keep the huge-page regions, drop a small-page one (the front holds them).
      if (region.pages() == PageSize::Small || idle_.empty() || idle_.front().pages() == PageSize::Huge) return;
      dropped = std::move(idle_.front());
      idle_.erase(idle_.begin());
    }
    if (region.pages() == PageSize::Huge) idle_.push_back(std::move(region));
    else idle_.insert(idle_.begin(), std::move(region));
  }
}

std::size_t ArenaPool::idle() const {
  std::lock_guard lock(mu_);
  return idle_.size();
}

}  // namespace coredumpd
