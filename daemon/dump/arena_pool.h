// Memory for spool blocks, kept between dumps so that a dump's drain never waits for fresh pages.
//
// On this VM the guest reports free memory to the host in 2 MiB blocks (free page reporting,
// page_reporting_order 9), which takes it back at once: a freshly faulted huge page costs a host
// fault. Touching a new 6 MiB region of huge pages took 45-106 ms (7-18 ms per MiB), one of 4 KiB
// pages 4-5 ms, one of huge pages freed just before under 1 ms (C loop, 2026-12-02; bench/README.md,
// "Measured design choices"). When each spool mapped its own huge pages, the drains of 20 dumps at
// once spent a fifth of the daemon's CPU zeroing them (perf: clear_page_erms under the socket read).
// So the pool keeps a few regions on huge pages, touched once off the dump path (prewarm()); a dump
// that finds none idle gets a new region on small pages, which is cheap to fault, and gives it back.
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
  /// (tens of milliseconds per region, above): call it off the dump path. Throws std::bad_alloc.
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
