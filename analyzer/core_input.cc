#include "analyzer/core_input.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <system_error>

namespace coredumpd::analyzer {
namespace {

constexpr std::size_t kBlock = 4096;

// memcmp() of the block against itself shifted by one byte: libc's vectorised compare, where a
// per-byte loop made a 2 GiB mostly-zero core take 25 s in a Debug build (bench/README.md).
bool all_zero(const char* p, std::size_t n) { return n == 0 || (p[0] == 0 && std::memcmp(p, p + 1, n - 1) == 0); }

// pwrite()s all of [p, p + n) at `offset`. Returns 0 or an errno (EFBIG at the RLIMIT_FSIZE bound).
int write_all(int fd, const char* p, std::size_t n, std::uint64_t offset) {
  std::size_t done = 0;
  while (done < n) {
    const ssize_t w = ::pwrite(fd, p + done, n - done, static_cast<off_t>(offset + done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return w < 0 ? errno : EIO;
    done += static_cast<std::size_t>(w);
  }
  return 0;
}

// Writes `n` bytes at `offset`, leaving all-zero blocks as holes; each run of data blocks is one
// pwrite(). Returns 0 or an errno (EFBIG at the RLIMIT_FSIZE bound).
int write_sparse(int fd, const char* p, std::size_t n, std::uint64_t offset) {
  const char* run = nullptr;  // start of the pending run of data blocks
  std::uint64_t run_offset = 0;
  auto flush = [&](const char* end) {
    const int err = run ? write_all(fd, run, static_cast<std::size_t>(end - run), run_offset) : 0;
    run = nullptr;
    return err;
  };
  while (n > 0) {
    const std::size_t chunk = std::min(n, kBlock - static_cast<std::size_t>(offset % kBlock));
    if (all_zero(p, chunk)) {
      if (const int err = flush(p)) return err;
    } else if (!run) {
      run = p;
      run_offset = offset;
    }
    p += chunk;
    n -= chunk;
    offset += chunk;
  }
  return flush(p);
}

std::string errno_text(int err) { return std::strerror(err); }

}  // namespace

UniqueFd open_temp_file(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
  if (!fd) throw std::system_error(errno, std::generic_category(), "O_TMPFILE in " + dir);
  return fd;
}

CoreFile prepare_core(int core_fd, const std::string& compression, UniqueFd temp, std::uint64_t max_bytes) {
  CoreFile out;
  if (compression != "zstd") {
    struct stat st{};
    if (::fstat(core_fd, &st) != 0) {
      out.reason = "core: fstat: " + errno_text(errno);
    } else if (!S_ISREG(st.st_mode)) {
      out.reason = "core: not a regular file";
    } else if (st.st_size == 0) {
      out.reason = "core: empty";
    }
    out.fd = core_fd;
    out.size = static_cast<std::uint64_t>(std::max<off_t>(st.st_size, 0));
    return out;
  }
  std::unique_ptr<ZSTD_DStream, decltype(&ZSTD_freeDStream)> ds(ZSTD_createDStream(), ZSTD_freeDStream);
  if (!ds) {
    out.reason = "core: zstd: cannot allocate a decompression stream";
    return out;
  }
  // A window larger than 2^27 is refused by default; the daemon's cores use long windows.
  ZSTD_DCtx_setParameter(ds.get(), ZSTD_d_windowLogMax, 31);
  std::vector<char> in_buf(ZSTD_DStreamInSize()), out_buf(std::max<std::size_t>(ZSTD_DStreamOutSize(), 1 << 20));
  std::uint64_t written = 0, consumed = 0;
  std::size_t last_hint = 0;
  std::string stop;  // why decompression ended early
  bool eof = false;
  while (stop.empty() && !eof) {
    const ssize_t n = ::read(core_fd, in_buf.data(), in_buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      stop = "reading the core: " + errno_text(errno);
      break;
    }
    if (n == 0) {
      eof = true;
      break;
    }
    consumed += static_cast<std::uint64_t>(n);
    ZSTD_inBuffer in{in_buf.data(), static_cast<std::size_t>(n), 0};
    while (in.pos < in.size && stop.empty()) {
      ZSTD_outBuffer o{out_buf.data(), out_buf.size(), 0};
      const std::size_t rc = ZSTD_decompressStream(ds.get(), &o, &in);
      if (ZSTD_isError(rc)) {
        stop = std::string("zstd: ") + ZSTD_getErrorName(rc);
        break;
      }
      last_hint = rc;
      std::size_t keep = o.pos;
      if (written + keep > max_bytes) keep = static_cast<std::size_t>(max_bytes - written);
      if (const int err = write_sparse(temp.get(), out_buf.data(), keep, written); err != 0) {
        stop = "writing the temp file: " + errno_text(err);
        break;
      }
      written += keep;
      if (keep < o.pos) stop = "the decompressed core exceeds " + std::to_string(max_bytes) + " bytes";
    }
  }
  if (stop.empty() && last_hint != 0) stop = "zstd stream truncated (frame incomplete)";
  if (stop.empty() && consumed == 0) stop = "empty";
  if (!stop.empty()) {
    if (written == 0) {
      out.reason = "core: " + stop;
      return out;
    }
    out.warnings.push_back("core: " + stop + ": analysing the first " + std::to_string(written) +
                           " decompressed bytes");
  }
  if (::ftruncate(temp.get(), static_cast<off_t>(written)) != 0) {
    out.reason = "core: sizing the temp file: " + errno_text(errno);
    return out;
  }
  out.size = written;
  out.fd = temp.get();
  out.owned = std::move(temp);
  return out;
}

}  // namespace coredumpd::analyzer
