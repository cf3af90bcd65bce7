// Memory for spool blocks, kept between dumps so that a dump's drain never waits for fresh pages.
//
// Where the host takes freed memory back at once (free page reporting), a freshly faulted huge page
// costs a host fault: far more than a small page, or a huge page reused while still warm. When each
// spool mapped its own huge pages, a burst of dumps spent much of the daemon's CPU zeroing them
// (bench/README.md, "Spool blocks from a warm pool"). So the pool keeps a few regions on huge
// pages, touched once off the dump path (prewarm()); a dump that finds none idle gets a new region
// on small pages, which is cheap to fault, and gives it back.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

#include "daemon/dump/block_writer.h"

namespace coredumpd {

/// A pool of AnonRegions of one size. Thread-safe.
class ArenaPool {
 public:
  /// Regions of `region_bytes` each; at most `keep` are kept idle. Maps nothing yet.
  ArenaPool(std::size_t region_bytes, std::size_t keep) : region_bytes_(region_bytes), keep_(keep) {}

  /// Maps and touches regions on huge pages until `keep` are idle. Slow where huge pages are cold
  /// (above): call it off the dump path. Throws std::bad_alloc.
  void prewarm();
  /// A region of at least region_bytes(): an idle one of the pool (warm: no access faults), else a
  /// new one on small pages. Throws std::bad_alloc.
  AnonRegion acquire();
  /// Takes a region of acquire() back: kept while fewer than `keep` are idle (a huge-page region
  /// before one on small pages), else unmapped. Empty regions are ignored.
  void give_back(AnonRegion region) noexcept;

  std::size_t region_bytes() const { return region_bytes_; }
  /// Regions idle in the pool now.
  std::size_t idle() const;

 private:
  const std::size_t region_bytes_;
  const std::size_t keep_;
  mutable std::mutex mu_;
  std::vector<AnonRegion> idle_;  // guarded by mu_
};

}  // namespace coredumpd
