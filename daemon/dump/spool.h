// The spool: a temporary, sparse file in the store that holds a core's raw bytes between the thread
// draining the socket and the thread compressing it, so the kernel never waits on compression.
//
// The drain reads the stream straight into the spool's 1 MiB blocks (space(), commit()), which a
// writer thread writes with O_DIRECT (BlockWriter), leaving each 64 KiB of zeros as a hole. The
// page cache is not filled (but for the unaligned last block): where free memory goes back to the
// host at once, a fresh page-cache page costs a host fault, and a page-cache spool fell behind the
// kernel's emit while O_DIRECT from a few reused blocks kept up (bench/README.md, "The spool
// bypasses the page cache"). Where the disk falls behind the kernel's emit (all kQueuedBlocks
// queued), the drain writes the next block through the page cache itself rather than wait
// (BlockWriter::Options::overflow_fd); config spool_direct_io = false puts it all there. The
// compressor reads behind the writer, also with O_DIRECT, through a descriptor of its own. Once
// the stream has ended, the spool is made durable and named in the store (keep_as(),
// spool_recovery.h), so a core received in full survives a stop of the daemon before it is
// stored; it is therefore not punched out behind the compressor (release()) unless keeping it
// failed, and holds the whole core until the dump is indexed. A core not worth compressing is not
// compressed: the spool itself is linked as the stored core (persist()); its bytes are already on
// the disk when the stream ends.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include <sys/types.h>

#include "daemon/dump/block_writer.h"
#include "util/unique_fd.h"

namespace coredumpd {

/// One core's spool. Thread-safe for one writer (the drain) and one reader (the compressor).
/// Memory: kArenaBytes for the blocks, from an ArenaPool (arena_pool.h) and given back to it when
/// the input is closed, plus a read buffer of one block, allocated when it is created.
class Spool {
 public:
  /// Size of a block (bytes): the unit of the drain's reads, the disk writes and the reader's reads.
  static constexpr std::size_t kBlockBytes = 1 << 20;
  /// Blocks queued to the writer thread before the drain waits for the disk.
  static constexpr std::size_t kQueuedBlocks = 3;
  /// Memory the blocks take (bytes): kQueuedBlocks queued, one being written, one being filled.
  static constexpr std::size_t kArenaBytes = (kQueuedBlocks + 2) * kBlockBytes;

  /// Creates an unnamed (O_TMPFILE) file in `store_dirfd`, with O_DIRECT where the filesystem
  /// takes it unless `direct_io` is false (config spool_direct_io), and its writer thread, with
  /// its blocks from `memory` (regions of at least kArenaBytes; nullptr: small pages of its own).
  /// Throws StoreError (core_writer.h), std::bad_alloc, std::system_error.
  explicit Spool(int store_dirfd, bool direct_io = true, ArenaPool* memory = nullptr);
  ~Spool();
  Spool(const Spool&) = delete;
  Spool& operator=(const Spool&) = delete;

  // ---- drain side ----
  /// Where the next bytes of the core go: the free rest of the current block (never empty). Valid
  /// until the next commit(), append() or append_zeros().
  std::span<std::byte> space();
  /// The first `n` bytes of space() hold the next bytes of the core. A block thus filled is
  /// queued for writing and returned (readable until the next call on the drain side); otherwise
  /// an empty span. Throws StoreError if an earlier write failed (e.g. ENOSPC); the spool is then
  /// unusable for writing.
  std::span<const std::byte> commit(std::size_t n);
  /// Copies `bytes` to the end of the spool (record streams). Throws StoreError as commit().
  void append(std::span<const std::byte> bytes);
  /// Appends `len` zero bytes (a ZERO record); whole blocks of them become a hole without being
  /// touched. Throws StoreError as commit().
  void append_zeros(std::uint64_t len);
  /// Queues the last, partial block and waits until everything is on the file (at most
  /// kQueuedBlocks + 2 blocks: milliseconds). Throws StoreError naming the first failed write.
  void flush();
  /// No more bytes will come (call after flush()). Stops the writer thread, whose blocks go back
  /// to their pool, and wakes the reader.
  void close_input();

  // ---- compressor side ----
  /// Blocks until more than `pos` bytes are written or the input is closed. Returns the
  /// current end (== pos only when the input is closed and everything was read). The writer wakes
  /// the reader only then, not at every block before. One waiter at a time (the one reader).
  std::uint64_t wait_beyond(std::uint64_t pos);
  /// close_input() was called.
  bool closed() const;
  /// Up to `max` bytes (at most kBlockBytes) at `pos`, below the written end, in a buffer of the
  /// spool's, valid until the next view() or read(). Holes read as zeros. Throws StoreError on I/O
  /// errors. A filesystem that takes O_DIRECT at open but refuses our alignment (EINVAL) is read
  /// through the page cache from then on.
  std::span<const std::byte> view(std::uint64_t pos, std::size_t max);
  /// Copies [pos, pos + out.size()) (below the written end) into `out`, through view().
  void read(std::uint64_t pos, std::span<std::byte> out);
  /// Length of the hole starting at `pos` (0 if `pos` is in data), bounded by `limit` bytes.
  std::uint64_t hole_at(std::uint64_t pos, std::uint64_t limit) const;
  /// Frees the disk blocks of [0, upto) (already compressed). Best effort.
  void release(std::uint64_t upto);

  /// Keeps the spool as the stored, uncompressed core `name` in `store_dirfd`: mode 0640, fsync,
  /// link (link_into_store()). Call once the input is closed, on a spool never release()d.
  /// Returns the file's size in bytes. Throws StoreError; nothing is left under `name` then.
  std::uint64_t persist(int store_dirfd, const std::string& name);

  /// Makes the spool durable and gives it the name `name` in `store_dirfd` too (ftruncate to
  /// size(), fsync, link): what a restart finds (spool_recovery.h). Call after flush(), on a spool
  /// never release()d. Throws StoreError; `name` may then exist (the caller removes it once
  /// the spool is no longer needed; unlinking it at once would make persist() impossible).
  void keep_as(int store_dirfd, const std::string& name);

  /// Blocks the drain wrote through the page cache because the disk was behind (all queued).
  std::uint64_t overflowed_blocks() const;

  /// Bytes written to the file so far (holes included); after flush(), all that was appended.
  std::uint64_t size() const;

 private:
  void publish(std::uint64_t end);  // writer thread

  struct AlignedFree {
    void operator()(std::byte* p) const;
  };

  UniqueFd fd_;        // the writer's (O_DIRECT until an unaligned tail)
  UniqueFd read_fd_;   // the reader's, O_DIRECT where the filesystem takes it
  UniqueFd overflow_fd_;  // the drain's, through the page cache, when the writer is behind
  std::unique_ptr<std::byte, AlignedFree> read_buf_;  // kBlockBytes + one page, 4096-aligned
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::uint64_t end_ = 0;        // guarded by mu_: written to the file
  bool closed_ = false;          // guarded by mu_
  std::uint64_t wanted_ = UINT64_MAX;  // guarded by mu_: the waiting reader's pos, wait_beyond()
  std::size_t fill_ = 0;         // drain thread only: bytes in the current block
  std::uint64_t released_ = 0;   // compressor thread only
  std::uint64_t overflowed_ = 0;  // the writer's count, kept by close_input()
  std::unique_ptr<BlockWriter> writer_;  // declared last: its thread stops first
};

}  // namespace coredumpd
