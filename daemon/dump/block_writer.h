// Writing a file in whole, aligned blocks on a thread of its own: O_DIRECT writes are synchronous,
// so without it the compressor (or the drain, for the spool) would stop for every block the disk
// takes.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <sys/uio.h>

namespace coredumpd {

/// True if every byte of `bytes` is zero (word-wise, cheap beside the disk write).
bool all_zero(std::span<const std::byte> bytes);

/// How an AnonRegion is backed.
enum class PageSize {
  Small,  ///< 4 KiB pages (MADV_NOHUGEPAGE, also under THP "always")
  Huge,   ///< transparent huge pages where the kernel has them (MADV_HUGEPAGE; "always" or "madvise")
};

/// Anonymous memory of at least `bytes`, zero-filled until written. PageSize::Huge rounds it up to
/// whole 2 MiB pages and aligns it on one, so each 1 MiB block in it is physically contiguous (one
/// segment of a disk request instead of 256); PageSize::Small rounds it up to 4 KiB. Throws
/// std::bad_alloc.
class AnonRegion {
 public:
  AnonRegion() = default;
  AnonRegion(std::size_t bytes, PageSize pages);
  ~AnonRegion();
  AnonRegion(AnonRegion&& other) noexcept;
  AnonRegion& operator=(AnonRegion&& other) noexcept;
  /// Writes one byte per 4 KiB page, so that no later access faults. Call before handing it out.
  void prefault();
  /// Unmaps it (empty afterwards).
  void reset() noexcept;
  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }
  PageSize pages() const { return pages_; }

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  PageSize pages_ = PageSize::Small;
};

class ArenaPool;

/// Appends blocks to `fd` (opened by the caller, possibly O_DIRECT) from a writer thread, at most
/// `depth` blocks queued, at file offsets counted from 0 (pwrite: the fd's offset is not used).
/// Blocks are `block_bytes` (a multiple of 4096) and 4096-aligned, so every write but the last is
/// O_DIRECT-friendly. Used by one thread (the compressor, or the drain for the spool).
class BlockWriter {
 public:
  struct Options {
    /// Leave each 64 KiB of a block that is all zeros as a hole (not written): the spool, where
    /// untouched memory arrives as literal zeros.
    bool skip_zero_runs = false;
    /// Called on the writer thread after each write (up to kMaxBatch whole blocks), hole or
    /// overflowed block is on the file, with the file offset (bytes) everything before which is
    /// written. Must not call back into the writer.
    std::function<void(std::uint64_t)> on_written;
    /// When every block is queued (the disk is behind), submit() writes the block itself through
    /// this descriptor (opened without O_DIRECT: into the page cache, which does not wait for the
    /// disk) instead of waiting; the writer thread then only counts it, in order. -1: wait.
    int overflow_fd = -1;
    /// Where the blocks' memory comes from, and goes back to when the writer is destroyed; its
    /// regions must hold depth + 2 blocks. nullptr: a region of the writer's own, on small pages.
    ArenaPool* memory = nullptr;
  };

  /// Throws std::bad_alloc, std::system_error (thread creation), std::invalid_argument (a pool's
  /// regions too small for depth + 2 blocks).
  BlockWriter(int fd, std::size_t block_bytes, std::size_t depth) : BlockWriter(fd, block_bytes, depth, Options{}) {}
  BlockWriter(int fd, std::size_t block_bytes, std::size_t depth, Options options);
  /// Waits for queued writes and stops the thread; errors are dropped (call finish() to see them).
  /// The blocks' memory goes back to Options::memory.
  ~BlockWriter();
  BlockWriter(const BlockWriter&) = delete;
  BlockWriter& operator=(const BlockWriter&) = delete;

  /// The block to fill: block_bytes() bytes. Valid until the next submit().
  std::byte* block() const { return current_; }
  std::size_t block_bytes() const { return block_bytes_; }

  /// Queues the first `n` bytes of block() (a whole block, or the last one: then, if the fd has
  /// O_DIRECT, the writer clears it for this unaligned tail) and hands out a free block, waiting
  /// while `depth` blocks are queued (or, with Options::overflow_fd, writing this one at once).
  /// Throws StoreError (core_writer.h) if this or an earlier write failed.
  void submit(std::size_t n);
  /// Queues a hole: the next block lands `n` bytes (a multiple of block_bytes()) further on, and
  /// nothing is written for them. Throws StoreError if an earlier write failed.
  void skip(std::uint64_t n);
  /// Waits until every queued block is written. Returns the bytes written in all. Throws
  /// StoreError naming the first failure (e.g. ENOSPC).
  std::uint64_t finish();
  /// The fd still has O_DIRECT (false once a write refused it, EINVAL, and the writer went on
  /// through the page cache, or after the unaligned tail).
  bool direct_io() const;
  /// Blocks submit() wrote through Options::overflow_fd.
  std::uint64_t overflowed() const;

 private:
  struct Job {
    std::byte* data;  ///< nullptr: a hole of n bytes, or bytes submit() wrote itself
    std::uint64_t n;
    bool written = false;  ///< submit() wrote them (overflow)
  };
  /// Most whole blocks the writer thread gathers into one write.
  static constexpr std::size_t kMaxBatch = 4;
  void run();
  bool full_block(const Job& job) const;
  void write_overflow(std::byte* p, std::size_t n, std::uint64_t at) const;  // submitting thread
  template <typename Write>
  void gather_data_runs(std::span<const std::span<std::byte>> blocks, std::uint64_t at, Write&& write) const;
  void write_blocks(const std::vector<Job>& batch);                // writer thread
  void write_all(std::vector<iovec>& iov, std::uint64_t at);       // writer thread; consumes iov
  void throw_if_failed() const;                        // under mu_
  void record_failure(const std::string& error, int error_number);  // under mu_: keeps the first

  const int fd_;
  const std::size_t block_bytes_;
  const std::size_t depth_;
  const Options options_;
  std::uint64_t offset_ = 0;         // writer thread only: where the next job lands
  AnonRegion arena_;                // the blocks' memory
  std::vector<std::byte*> blocks_;  // all of them, in arena_
  std::byte* current_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;            // guarded by mu_
  std::vector<std::byte*> free_;     // guarded by mu_
  bool writing_ = false;             // guarded by mu_: the thread holds a job
  bool stop_ = false;                // guarded by mu_
  std::string error_;                // guarded by mu_: first failure
  int error_number_ = 0;             // guarded by mu_
  std::uint64_t written_ = 0;        // guarded by mu_
  std::uint64_t queued_end_ = 0;     // guarded by mu_: offset after everything queued
  std::uint64_t overflowed_ = 0;     // guarded by mu_
  bool direct_;                      // guarded by mu_
  std::thread thread_;
};

}  // namespace coredumpd
