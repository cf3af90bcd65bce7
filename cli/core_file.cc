#include "cli/core_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "cli/dumpctl.h"
#include "cli/format.h"

namespace coredumpd::cli {

namespace {

/// Read size for raw cores: few syscalls per GiB, bounded memory.
constexpr std::size_t kRawReadBytes = std::size_t{1} << 20;

/// Closes a file descriptor on scope exit.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

struct DctxFree {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

bool has_core_state(DumpState s) {
  return s == DumpState::Complete || s == DumpState::Truncated;
}

/// The error for a Complete dump whose core file yields `n` bytes instead of its core_size.
DumpctlError core_size_error(const std::string& path, std::uint64_t n, const DumpRecord& r) {
  return DumpctlError("core file " + escape_for_display(path) + " is corrupt: it holds " +
                      std::to_string(n) + " bytes, the index says " + std::to_string(r.core_size));
}

}  // namespace

const char* core_status_name(CoreStatus s) {
  switch (s) {
    case CoreStatus::Present: return "present";
    case CoreStatus::Truncated: return "truncated";
    case CoreStatus::Missing: return "missing";
    case CoreStatus::Vacuumed: return "vacuumed";
    case CoreStatus::Failed: return "failed";
    case CoreStatus::Interrupted: return "interrupted";
    case CoreStatus::None: return "none";
    case CoreStatus::InProgress: return "in progress";
  }
  return "unknown";
}

std::optional<std::string> core_file_path(const std::string& store, const DumpRecord& r) {
  if (!has_core_state(r.state)) return std::nullopt;
  const std::string& p = r.path;
  if (p.empty() || p == "." || p == ".." || p.find('/') != std::string::npos ||
      p.find('\0') != std::string::npos) {
    return std::nullopt;
  }
  if (!store.empty() && store.back() == '/') return store + p;
  return store + "/" + p;
}

CoreStatus core_status(const std::string& store, const DumpRecord& r) {
  switch (r.state) {
    case DumpState::InProgress: return CoreStatus::InProgress;
    case DumpState::Failed: return CoreStatus::Failed;
    case DumpState::Interrupted: return CoreStatus::Interrupted;
    case DumpState::MetadataOnly:
    case DumpState::Rejected:
    case DumpState::Forwarded: return CoreStatus::None;
    case DumpState::Complete:
    case DumpState::Truncated: break;
  }
  if (r.extra.is_object() && r.extra.contains("vacuumed")) return CoreStatus::Vacuumed;
  const auto path = core_file_path(store, r);
  struct stat sb {};
  if (!path || ::stat(path->c_str(), &sb) != 0 || !S_ISREG(sb.st_mode)) return CoreStatus::Missing;
  return r.state == DumpState::Complete ? CoreStatus::Present : CoreStatus::Truncated;
}

std::uint64_t decompress_zstd_file(const std::string& path, const ByteSink& sink) {
  const std::string shown = escape_for_display(path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw DumpctlError("cannot open core file " + shown + ": " + std::strerror(errno));
  const FdCloser closer{fd};

  const std::unique_ptr<ZSTD_DCtx, DctxFree> dctx(ZSTD_createDCtx());
  if (!dctx) throw DumpctlError("out of memory creating a zstd context");
  // Accept windows up to 2 GiB (zstd --long=31); the default limit of 128 MiB would reject them.
  const std::size_t set = ZSTD_DCtx_setParameter(dctx.get(), ZSTD_d_windowLogMax, 31);
  if (ZSTD_isError(set) != 0U) throw DumpctlError(std::string("zstd: ") + ZSTD_getErrorName(set));

  std::vector<char> in(ZSTD_DStreamInSize());
  std::vector<char> out(ZSTD_DStreamOutSize());
  std::uint64_t produced = 0;
  std::size_t last = 0;  // last ZSTD_decompressStream result: 0 means "at a frame boundary"
  for (;;) {
    const ssize_t n = ::read(fd, in.data(), in.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw DumpctlError("cannot read core file " + shown + ": " + std::strerror(errno));
    }
    if (n == 0) break;
    ZSTD_inBuffer input{in.data(), static_cast<std::size_t>(n), 0};
    while (input.pos < input.size) {
      ZSTD_outBuffer output{out.data(), out.size(), 0};
      last = ZSTD_decompressStream(dctx.get(), &output, &input);
      if (ZSTD_isError(last) != 0U) {
        throw DumpctlError("core file " + shown + " is corrupt: " + ZSTD_getErrorName(last));
      }
      if (output.pos > 0) {
        sink(out.data(), output.pos);
        produced += output.pos;
      }
    }
  }
  // Input exhausted; flush whatever the decoder still holds (it may have buffered output).
  while (last != 0) {
    ZSTD_inBuffer input{nullptr, 0, 0};
    ZSTD_outBuffer output{out.data(), out.size(), 0};
    last = ZSTD_decompressStream(dctx.get(), &output, &input);
    if (ZSTD_isError(last) != 0U) {
      throw DumpctlError("core file " + shown + " is corrupt: " + ZSTD_getErrorName(last));
    }
    if (output.pos == 0) break;  // no progress: the frame really is incomplete
    sink(out.data(), output.pos);
    produced += output.pos;
  }
  if (last != 0) throw DumpctlError("core file " + shown + " is truncated (incomplete zstd frame)");
  return produced;
}

std::uint64_t read_raw_file(const std::string& path, const ByteSink& sink) {
  const std::string shown = escape_for_display(path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw DumpctlError("cannot open core file " + shown + ": " + std::strerror(errno));
  const FdCloser closer{fd};
  std::vector<char> buf(kRawReadBytes);
  std::uint64_t total = 0;
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw DumpctlError("cannot read core file " + shown + ": " + std::strerror(errno));
    }
    if (n == 0) return total;
    sink(buf.data(), static_cast<std::size_t>(n));
    total += static_cast<std::uint64_t>(n);
  }
}

std::string require_core_file(const std::string& store, const DumpRecord& r) {
  const std::string id = escape_for_display(r.id);
  const auto path = core_file_path(store, r);
  if (!path) {
    std::string why = state_name(r.state);
    if (!r.reason.empty()) why += ": " + escape_for_display(r.reason);
    throw DumpctlError("coredump " + id + " has no stored core (" + why + ")");
  }
  if (r.compression != kCompressionZstd && r.compression != kCompressionNone) {
    throw DumpctlError("coredump " + id + ": unsupported compression '" +
                       escape_for_display(r.compression) + "'");
  }
  struct stat sb {};
  if (::stat(path->c_str(), &sb) != 0) {
    throw DumpctlError("core file " + escape_for_display(*path) + " of coredump " + id +
                       " is missing: " + std::strerror(errno));
  }
  if (!S_ISREG(sb.st_mode)) {
    throw DumpctlError("core file " + escape_for_display(*path) + " is not a regular file");
  }
  return *path;
}

std::uint64_t extract_core(const std::string& store, const DumpRecord& r, const ByteSink& sink) {
  const std::string path = require_core_file(store, r);
  const std::uint64_t n = r.compression == kCompressionNone ? read_raw_file(path, sink)
                                                            : decompress_zstd_file(path, sink);
  if (r.state == DumpState::Complete && n != r.core_size) throw core_size_error(path, n, r);
  return n;
}

std::string require_raw_core(const std::string& store, const DumpRecord& r) {
  const std::string path = require_core_file(store, r);
  if (r.compression != kCompressionNone) {
    throw DumpctlError("coredump " + escape_for_display(r.id) + " is not stored raw (compression '" +
                       escape_for_display(r.compression) + "')");
  }
  struct stat sb {};
  if (::stat(path.c_str(), &sb) != 0) {
    throw DumpctlError("cannot stat core file " + escape_for_display(path) + ": " +
                       std::strerror(errno));
  }
  const auto n = static_cast<std::uint64_t>(sb.st_size);
  if (r.state == DumpState::Complete && n != r.core_size) throw core_size_error(path, n, r);
  return path;
}

void write_all(int fd, const char* data, std::size_t size, const std::string& what) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw DumpctlError("cannot write " + what + ": " + std::strerror(errno));
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

}  // namespace coredumpd::cli
