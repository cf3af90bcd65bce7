#include "store/core_stream.h"

#include <unistd.h>
#include <zstd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "store/dump_record.h"

namespace coredumpd {

namespace {

constexpr std::size_t kRawReadBytes = std::size_t{1} << 20;  // few syscalls per GiB, bounded memory

struct DctxFree {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

// read(2) that retries on EINTR and throws Unreadable.
std::size_t read_some(int fd, std::vector<char>& buf, std::uint64_t produced) {
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno != EINTR)
      throw CoreStreamError(CoreStreamError::Kind::Unreadable, std::string("read: ") + std::strerror(errno), produced);
  }
}

std::uint64_t stream_raw(int fd, const CoreSink& sink) {
  std::vector<char> buf(kRawReadBytes);
  std::uint64_t produced = 0;
  while (const std::size_t n = read_some(fd, buf, produced)) {
    sink(buf.data(), n);
    produced += n;
  }
  return produced;
}

std::uint64_t stream_zstd(int fd, const CoreSink& sink) {
  const std::unique_ptr<ZSTD_DCtx, DctxFree> dctx(ZSTD_createDCtx());
  if (!dctx) throw CoreStreamError(CoreStreamError::Kind::Unreadable, "out of memory for a zstd context", 0);
  // Accept windows up to 2 GiB (zstd --long=31); the default limit of 128 MiB would reject them.
  ZSTD_DCtx_setParameter(dctx.get(), ZSTD_d_windowLogMax, 31);
  std::vector<char> in_buf(ZSTD_DStreamInSize());
  std::vector<char> out_buf(ZSTD_DStreamOutSize());
  std::uint64_t produced = 0;
  std::size_t pending = 0;  // last ZSTD_decompressStream() hint: 0 means at a frame boundary
  while (const std::size_t n = read_some(fd, in_buf, produced)) {
    ZSTD_inBuffer in{in_buf.data(), n, 0};
    // Only while input is left: zstd consumes a frame's last byte only once all of the frame's
    // output is flushed, so nothing is lost. A call after the input is used up, made because the
    // output buffer came back full, would start the next frame and return its header hint (not
    // 0) even though the frame ended: a false "middle of a frame" for every well-compressible
    // core whose size is a multiple of 128 KiB.
    while (in.pos < in.size) {
      ZSTD_outBuffer out{out_buf.data(), out_buf.size(), 0};
      pending = ZSTD_decompressStream(dctx.get(), &out, &in);
      if (ZSTD_isError(pending) != 0U)
        throw CoreStreamError(CoreStreamError::Kind::Corrupt, ZSTD_getErrorName(pending), produced);
      if (out.pos > 0) sink(out_buf.data(), out.pos);
      produced += out.pos;
    }
  }
  if (pending != 0) throw CoreStreamError(CoreStreamError::Kind::Truncated, "ends in the middle of a zstd frame", produced);
  return produced;
}

}  // namespace

std::uint64_t stream_core(int fd, std::string_view compression, const CoreSink& sink) {
  return compression == kCompressionZstd ? stream_zstd(fd, sink) : stream_raw(fd, sink);
}

}  // namespace coredumpd
