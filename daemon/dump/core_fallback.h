// The fallback for cores the store cannot take now (issue 23): in early boot the store's
// filesystem may not be mounted yet; later it may be read-only or full. Such a core is stored, as
// usual (spooled, compressed), in a directory on /run instead, within a bound, and its record
// waits in the pending journal; once the store is usable the core is moved in and the record
// replayed into the index (fallback_mover.h). docs/EARLY_BOOT.md has the design.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "util/unique_fd.h"

namespace coredumpd {

/// The fallback directory and what its cores hold. Thread-safe.
class CoreFallback {
 public:
  /// Opens `dir`, creating it (and its parents) mode 0700 if missing, and counts the bytes of the
  /// files in it (cores a stop left: still to be moved in). `max_bytes` bounds the cores together,
  /// `keep_free` the free space left on its filesystem. Throws std::system_error if the directory
  /// cannot be created or opened.
  CoreFallback(std::string dir, std::uint64_t max_bytes, std::uint64_t keep_free);

  /// Why a new core cannot go to the fallback now (it holds max_bytes, or its filesystem is down to
  /// keep_free, or it refuses files), or std::nullopt if it can. A few syscalls: for the handshake.
  std::optional<std::string> problem() const;

  /// Reserves `n` more bytes for a core streaming in. Returns "" if they fit under max_bytes and
  /// above keep_free, else why not ("fallback ... full: ..."); nothing is reserved then.
  std::string reserve(std::uint64_t n);
  /// Gives back `n` bytes reserved or held (a core discarded, stored smaller, or moved in).
  void release(std::uint64_t n);
  /// Counts `n` bytes of a stored core (after its spool's reservation was released).
  void hold(std::uint64_t n) { used_.fetch_add(n); }

  int dirfd() const { return fd_.get(); }
  const std::string& dir() const { return dir_; }
  std::uint64_t used() const { return used_.load(); }
  std::uint64_t max_bytes() const { return max_bytes_; }

 private:
  std::string dir_;
  UniqueFd fd_;
  std::uint64_t max_bytes_;
  std::uint64_t keep_free_;
  std::atomic<std::uint64_t> used_{0};
  std::mutex mu_;  // reserve(): the check and the add as one
};

}  // namespace coredumpd
