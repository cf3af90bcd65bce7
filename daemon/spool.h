// The spool: a temporary, sparse file in the store that holds a core's raw bytes between the thread
// draining the socket and the thread compressing it, so the kernel never waits on compression.
//
// The drain moves the stream into the file with splice(2) (socket → pipe → page cache: no copy into
// user space, so draining costs what a server that reads and discards pays; bench/), or, where it
// must see the bytes (record streams, forwarding, the ELF notes at the head), appends what it read;
// there runs of zero pages become holes. The compressor reads behind it and punches out what it
// has compressed, so the disk holds only the lag between the two. A core not worth compressing
// skips that: the spool itself is made durable and linked into the store (persist()).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <span>

#include <sys/types.h>

#include "daemon/unique_fd.h"

namespace coredumpd {

/// One core's spool. Thread-safe for one writer (the drain) and one reader (the compressor).
class Spool {
 public:
  /// Creates an unnamed (O_TMPFILE) file in `store_dirfd`. Throws StoreError (core_writer.h).
  explicit Spool(int store_dirfd);

  // ---- drain side ----
  /// Appends `bytes`; runs of >= 16 page-aligned all-zero 4 KiB pages are skipped (left as
  /// holes). Returns the bytes left as holes. Throws StoreError (e.g. ENOSPC); the spool is then
  /// unusable for writing.
  std::size_t append(std::span<const std::byte> bytes);
  /// Moves up to `max` bytes (> 0) from `fd`, a stream socket, to the end of the spool with
  /// splice(2) through a pipe of 1 MiB; never blocks on `fd`. Returns the bytes moved, 0 at EOF,
  /// or -1 with errno set: EAGAIN (no data yet), EINVAL (no pipe could be made, or this filesystem
  /// or fd cannot splice; use append()), others from the socket. Throws StoreError if writing the file fails (e.g. ENOSPC);
  /// bytes already taken from `fd` are then lost and the spool is unusable for writing.
  ssize_t splice_from(int fd, std::size_t max);
  /// Appends `len` zero bytes as a hole (a ZERO record, or zeros found by the drain).
  void append_zeros(std::uint64_t len);
  /// No more bytes will come. Wakes the reader.
  void close_input();

  // ---- compressor side ----
  /// Blocks until more than `pos` bytes are in the spool or the input is closed. Returns the
  /// current end (== pos only when the input is closed and everything was read).
  std::uint64_t wait_beyond(std::uint64_t pos);
  /// close_input() was called.
  bool closed() const;
  /// Reads [pos, pos + out.size()) (which must be below the end). Holes read as zeros.
  /// Throws StoreError on I/O errors.
  void read(std::uint64_t pos, std::span<std::byte> out) const;
  /// Length of the hole starting at `pos` (0 if `pos` is in data), bounded by `limit` bytes.
  std::uint64_t hole_at(std::uint64_t pos, std::uint64_t limit) const;
  /// Frees the disk blocks of [0, upto) (already compressed). Best effort.
  void release(std::uint64_t upto);

  /// Keeps the spool as the stored, uncompressed core `name` in `store_dirfd`: mode 0640, fsync,
  /// link (link_into_store()). Call once the input is closed, on a spool never release()d.
  /// Returns the file's size in bytes. Throws StoreError; nothing is left under `name` then.
  std::uint64_t persist(int store_dirfd, const std::string& name);

  /// Bytes appended so far (holes included).
  std::uint64_t size() const;

 private:
  void write_at(std::uint64_t pos, const std::byte* p, std::size_t n);
  void publish();

  UniqueFd fd_;
  UniqueFd pipe_read_, pipe_write_;  // splice_from(): created on first use
  std::size_t pipe_bytes_ = 0;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::uint64_t end_ = 0;        // guarded by mu_; the writer's own copy is write_pos_
  bool closed_ = false;          // guarded by mu_
  std::uint64_t write_pos_ = 0;  // drain thread only
  std::uint64_t released_ = 0;   // compressor thread only
};

}  // namespace coredumpd
