// Writing one core into the store: zstd-compressed, into an unnamed temporary file, made durable and
// linked under its final name only when complete.
#pragma once

#include <zstd.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "daemon/dump/block_writer.h"
#include "daemon/policy/compression_options.h"
#include "util/unique_fd.h"

namespace coredumpd {

/// An I/O or compression failure while storing a core; what() names the step and errno's text.
class StoreError : public std::runtime_error {
 public:
  StoreError(const std::string& what, int err) : std::runtime_error(what), error_number(err) {}
  int error_number;  ///< errno of the failing call (ENOSPC, EIO, ...), 0 for zstd errors
};

/// Permissions of stored core files: the daemon's user reads and writes, its group reads.
inline constexpr unsigned kCoreFileMode = 0640;

/// Links `fd`, an O_TMPFILE file already made durable by the caller, into directory
/// `store_dirfd` as `name` and fsyncs the directory. Throws StoreError (EEXIST if `name` exists);
/// on failure nothing is left under `name`.
void link_into_store(int fd, int store_dirfd, const std::string& name);

/// Streams one core into `<store>/<name>` through zstd.
///
/// The data goes to an O_TMPFILE file in the store directory (a named `.partial-<name>` where the
/// filesystem lacks O_TMPFILE), so a crash or kill leaves nothing that looks like a dump. It is
/// written in 1 MiB blocks, on a thread of its own (BlockWriter), with O_DIRECT where the
/// filesystem allows it (ext4, xfs; tmpfs since 6.6): a core is written once and read rarely, and
/// copying an incompressible core into fresh page-cache pages took more of the daemon's CPU than
/// zstd did (bench/README.md, "The spool bypasses the page cache"). commit() ends the zstd frame,
/// fsyncs, links the file under its name and fsyncs the directory. Destroying an uncommitted writer
/// discards the data. Files are created 0640, owned by the daemon's user.
class CoreWriter {
 public:
  /// Creates the temporary file in directory `store_dirfd` for final name `name` (a plain file name
  /// chosen by us, never by the crashing process). Throws StoreError.
  CoreWriter(int store_dirfd, std::string name, const CompressionOptions& options);
  ~CoreWriter();
  CoreWriter(const CoreWriter&) = delete;
  CoreWriter& operator=(const CoreWriter&) = delete;

  /// Compresses and writes `data`. Throws StoreError (e.g. ENOSPC); the writer is then unusable.
  void write(std::span<const std::byte> data);

  /// Zero runs at least this long (bytes) cost no compression: see write_zeros().
  static constexpr std::uint64_t kZeroFrameBytes = 16 << 20;

  /// Writes `len` zero bytes (a hole of a sparse core: untouched memory, which the kernel sends over
  /// a socket as literal zeros). Each whole kZeroFrameBytes of it is a copy of one precompressed
  /// frame of zeros (a few hundred bytes, made once), after the current frame is ended: CPU and
  /// output grow with len / kZeroFrameBytes, not with the bytes; the rest is compressed. Throws
  /// StoreError.
  void write_zeros(std::uint64_t len);

  /// Ends the current zstd frame (if it has input) and compresses what follows in a new one with
  /// `threads` workers, created now by the calling thread (so they take its scheduling policy and
  /// nice value). The file stays one valid .zst stream: zstd -d and dumpctl read concatenated
  /// frames as one. Throws StoreError.
  void start_new_frame(int threads);

  /// Finishes the frame, makes the file durable and visible as `name`. Returns the stored size in
  /// bytes. Throws StoreError; on failure nothing is left under `name`.
  std::uint64_t commit();

  std::uint64_t bytes_in() const { return bytes_in_; }    ///< uncompressed bytes so far
  std::uint64_t bytes_out() const { return bytes_out_; }  ///< compressed bytes produced so far
  /// True while the file is written with O_DIRECT (false where the open or a write refused it,
  /// and once commit() wrote the last partial block through the page cache).
  bool direct_io() const { return out_->direct_io(); }

 private:
  void drain(ZSTD_EndDirective mode, std::span<const std::byte> data);
  void append_output(std::span<const std::byte> bytes);  // bytes that are zstd output already

  int dirfd_;
  std::string name_;
  std::string partial_name_;  // non-empty when O_TMPFILE was unavailable
  UniqueFd fd_;
  std::unique_ptr<BlockWriter> out_;  // writes fd_ on its own thread; declared after fd_: goes first
  std::size_t block_fill_ = 0;        // bytes zstd put in out_->block()
  ZSTD_CCtx* cctx_ = nullptr;
  std::uint64_t bytes_in_ = 0;
  std::uint64_t frame_bytes_in_ = 0;  // input of the current frame
  std::uint64_t bytes_out_ = 0;
  bool committed_ = false;
};

}  // namespace coredumpd
