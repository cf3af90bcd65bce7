// ZSTD_getCParams (the parameters behind a level) is in zstd's "static linking only" section; Debian's
// libzstd.so exports it.
#define ZSTD_STATIC_LINKING_ONLY
#include "daemon/dump/core_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

namespace coredumpd {

namespace {

constexpr int kZstdJobBytes = 4 << 20;  // ZSTD_c_jobSize for multithreaded compression (min 512 KiB)
// Output blocks: written whole, at aligned offsets, so O_DIRECT accepts them; two may wait for the
// disk while zstd fills a third.
constexpr std::size_t kBlockBytes = 1 << 20;
constexpr std::size_t kBlocksQueued = 2;

[[noreturn]] void fail(const std::string& step, int err) {
  throw StoreError(step + ": " + std::strerror(err), err);
}

void check_zstd(std::size_t rc, const char* step) {
  if (ZSTD_isError(rc)) throw StoreError(std::string(step) + ": " + ZSTD_getErrorName(rc), 0);
}

// The double-fast tables for cores: window 512 KiB, 16 Ki long-match (8-byte) and 4 Ki short-match
// entries. zstd 1.5's level 3 has 2 MiB, 128 Ki and 64 Ki: its tables outgrow the L2 cache, and on
// heap cores the larger window and tables find no more, at much more CPU (bench/README.md,
// "Smaller zstd match tables for cores").
struct MatchTables {
  int window_log, hash_log, chain_log;
};
constexpr MatchTables kCoreTables{19, 14, 12};

// Caps the match tables of a double-fast `level` at kCoreTables; other strategies keep zstd's.
void use_core_tables(ZSTD_CCtx* cctx, int level) {
  const ZSTD_compressionParameters zstd = ZSTD_getCParams(level, 0, 0);  // 0: unknown size, as a stream
  if (zstd.strategy != ZSTD_dfast) return;
  const auto cap = [&](ZSTD_cParameter p, unsigned level_value, int core_value, const char* step) {
    check_zstd(ZSTD_CCtx_setParameter(cctx, p, std::min(static_cast<int>(level_value), core_value)), step);
  };
  cap(ZSTD_c_windowLog, zstd.windowLog, kCoreTables.window_log, "zstd window log");
  cap(ZSTD_c_hashLog, zstd.hashLog, kCoreTables.hash_log, "zstd hash log");
  cap(ZSTD_c_chainLog, zstd.chainLog, kCoreTables.chain_log, "zstd chain log");
}

// Sets the worker count of the next frame (0: compress on the calling thread).
void set_workers(ZSTD_CCtx* cctx, int threads) {
  // Fails only on a libzstd built without multithreading; then we compress on this thread.
  if (ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_nbWorkers, threads)) || threads == 0) return;
  // zstd's default job is 4 windows (8 MiB at level 3), and its buffers, several jobs of input and
  // of worst-case output per worker, dominate the daemon's RSS. Smaller jobs bound that, but below
  // 4 MiB two workers compress slower than one thread (bench/README.md, "zstd jobs of 4 MiB").
  check_zstd(ZSTD_CCtx_setParameter(cctx, ZSTD_c_jobSize, kZstdJobBytes), "zstd job size");
}

// One MiB of zeros, read-only: the input of zero runs.
std::span<const std::byte> zero_chunk() {
  static const std::vector<std::byte> zeros(1 << 20);
  return zeros;
}

// A zstd frame that decodes to kZeroFrameBytes zeros (level 1, content size and checksum in it):
// 16 MiB of zeros in a few hundred bytes, made once per process (~4 ms). Throws StoreError.
const std::vector<std::byte>& zero_frame() {
  static const std::vector<std::byte> frame = [] {
    const std::unique_ptr<ZSTD_CCtx, decltype(&ZSTD_freeCCtx)> cctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
    if (!cctx) throw StoreError("ZSTD_createCCtx failed", ENOMEM);
    check_zstd(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, 1), "zstd level");
    check_zstd(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1), "zstd checksum");
    check_zstd(ZSTD_CCtx_setPledgedSrcSize(cctx.get(), CoreWriter::kZeroFrameBytes), "zstd pledged size");
    std::vector<std::byte> out;
    std::vector<std::byte> buf(ZSTD_CStreamOutSize());
    for (std::uint64_t left = CoreWriter::kZeroFrameBytes;;) {
      const auto chunk = zero_chunk().first(static_cast<std::size_t>(std::min<std::uint64_t>(left, zero_chunk().size())));
      left -= chunk.size();
      ZSTD_inBuffer in{chunk.data(), chunk.size(), 0};
      const ZSTD_EndDirective mode = left == 0 ? ZSTD_e_end : ZSTD_e_continue;
      std::size_t remaining = 0;
      do {
        ZSTD_outBuffer o{buf.data(), buf.size(), 0};
        remaining = ZSTD_compressStream2(cctx.get(), &o, &in, mode);
        check_zstd(remaining, "zstd compress zeros");
        out.insert(out.end(), buf.data(), buf.data() + o.pos);
      } while (mode == ZSTD_e_end ? remaining != 0 : in.pos < in.size);
      if (left == 0) return out;
    }
  }();
  return frame;
}

}  // namespace

void link_into_store(int fd, int store_dirfd, const std::string& name) {
  // AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; the /proc/self/fd form works without it.
  if (::linkat(fd, "", store_dirfd, name.c_str(), AT_EMPTY_PATH) < 0) {
    const std::string self = "/proc/self/fd/" + std::to_string(fd);
    if (::linkat(AT_FDCWD, self.c_str(), store_dirfd, name.c_str(), AT_SYMLINK_FOLLOW) < 0)
      fail("link core file into the store", errno);
  }
  if (::fsync(store_dirfd) < 0) {
    const int err = errno;
    ::unlinkat(store_dirfd, name.c_str(), 0);
    fail("fsync store directory", err);
  }
}

CoreWriter::CoreWriter(int store_dirfd, std::string name, const CompressionOptions& options)
    : dirfd_(store_dirfd), name_(std::move(name)) {
  // O_DIRECT first; filesystems without it (tmpfs before Linux 6.6) refuse the open with EINVAL.
  fd_.reset(::openat(dirfd_, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC | O_DIRECT, kCoreFileMode));
  if (!fd_ && errno == EINVAL) fd_.reset(::openat(dirfd_, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, kCoreFileMode));
  if (!fd_ && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
    partial_name_ = ".partial-" + name_;
    fd_.reset(::openat(dirfd_, partial_name_.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW,
                       kCoreFileMode));
  }
  if (!fd_) fail("create temporary core file", errno);
  if (::fchmod(fd_.get(), kCoreFileMode) < 0) fail("fchmod core file", errno);  // umask must not widen/narrow it
  out_ = std::make_unique<BlockWriter>(fd_.get(), kBlockBytes, kBlocksQueued);

  cctx_ = ZSTD_createCCtx();
  if (!cctx_) throw StoreError("ZSTD_createCCtx failed", ENOMEM);
  check_zstd(ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, options.level), "zstd level");
  if (options.core_tables) use_core_tables(cctx_, options.level);
  check_zstd(ZSTD_CCtx_setParameter(cctx_, ZSTD_c_checksumFlag, 1), "zstd checksum");
  set_workers(cctx_, options.threads);
}

void CoreWriter::start_new_frame(int threads) {
  if (frame_bytes_in_ > 0) {
    drain(ZSTD_e_end, {});
    check_zstd(ZSTD_CCtx_reset(cctx_, ZSTD_reset_session_only), "zstd reset");
    frame_bytes_in_ = 0;
  }
  set_workers(cctx_, threads);
}

CoreWriter::~CoreWriter() {
  ZSTD_freeCCtx(cctx_);
  if (!committed_ && !partial_name_.empty()) ::unlinkat(dirfd_, partial_name_.c_str(), 0);
}

void CoreWriter::write(std::span<const std::byte> data) {
  bytes_in_ += data.size();
  frame_bytes_in_ += data.size();
  drain(ZSTD_e_continue, data);
}

void CoreWriter::write_zeros(std::uint64_t len) {
  if (len >= kZeroFrameBytes) {
    // The frame so far ends here; the zeros follow as copies of zero_frame(); the next write()
    // starts a new frame with the same parameters (ZSTD_reset_session_only keeps them).
    const auto& frame = zero_frame();
    if (frame_bytes_in_ > 0) {
      drain(ZSTD_e_end, {});
      check_zstd(ZSTD_CCtx_reset(cctx_, ZSTD_reset_session_only), "zstd reset");
      frame_bytes_in_ = 0;
    }
    for (; len >= kZeroFrameBytes; len -= kZeroFrameBytes) {
      append_output(frame);
      bytes_in_ += kZeroFrameBytes;
    }
  }
  while (len > 0) {
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(len, zero_chunk().size()));
    write(zero_chunk().first(n));
    len -= n;
  }
}

void CoreWriter::append_output(std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    const std::size_t n = std::min(bytes.size(), kBlockBytes - block_fill_);
    std::memcpy(out_->block() + block_fill_, bytes.data(), n);
    block_fill_ += n;
    bytes_out_ += n;
    bytes = bytes.subspan(n);
    if (block_fill_ == kBlockBytes) {
      out_->submit(block_fill_);
      block_fill_ = 0;
    }
  }
}

void CoreWriter::drain(ZSTD_EndDirective mode, std::span<const std::byte> data) {
  ZSTD_inBuffer in{data.data(), data.size(), 0};
  while (true) {
    // zstd writes straight into the block; a full block goes to the writer thread.
    ZSTD_outBuffer out{out_->block() + block_fill_, kBlockBytes - block_fill_, 0};
    const std::size_t remaining = ZSTD_compressStream2(cctx_, &out, &in, mode);
    check_zstd(remaining, "zstd compress");
    block_fill_ += out.pos;
    bytes_out_ += out.pos;
    if (block_fill_ == kBlockBytes) {
      out_->submit(block_fill_);
      block_fill_ = 0;
    }
    const bool input_done = in.pos == in.size;
    if (mode == ZSTD_e_continue ? input_done : remaining == 0) return;
  }
}

std::uint64_t CoreWriter::commit() {
  drain(ZSTD_e_end, {});
  if (block_fill_ > 0) out_->submit(block_fill_);  // the last, partial block
  block_fill_ = 0;
  bytes_out_ = out_->finish();
  if (::fsync(fd_.get()) < 0) fail("fsync core file", errno);
  if (partial_name_.empty()) {
    link_into_store(fd_.get(), dirfd_, name_);
    committed_ = true;
    return bytes_out_;
  }
  if (::renameat(dirfd_, partial_name_.c_str(), dirfd_, name_.c_str()) < 0) fail("rename core file into place", errno);
  committed_ = true;
  if (::fsync(dirfd_) < 0) {
    const int err = errno;
    ::unlinkat(dirfd_, name_.c_str(), 0);
    committed_ = false;
    fail("fsync store directory", err);
  }
  return bytes_out_;
}

}  // namespace coredumpd
