#include "cli/core_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "cli/dumpctl.h"
#include "cli/format.h"
#include "store/core_stream.h"
#include "store/record_extras.h"
#include "util/text.h"
#include "util/unique_fd.h"

namespace coredumpd::cli {

namespace {

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
  const auto path = core_file_path(store, r);  // std::nullopt for states without a stored core
  struct stat sb {};
  return core_status_of(r, path && ::stat(path->c_str(), &sb) == 0 && S_ISREG(sb.st_mode));
}

CoreStatus core_status_of(const DumpRecord& r, bool file_exists) {
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
  if (r.extra.is_object() && r.extra.contains(extras::kVacuumed)) return CoreStatus::Vacuumed;
  if (!file_exists) return CoreStatus::Missing;
  return r.state == DumpState::Complete ? CoreStatus::Present : CoreStatus::Truncated;
}

std::uint64_t stream_core_fd(int fd, std::string_view compression, const std::string& shown, const ByteSink& sink) {
  try {
    return stream_core(fd, compression, sink);
  } catch (const CoreStreamError& e) {
    switch (e.kind) {
      case CoreStreamError::Kind::Unreadable: throw DumpctlError("cannot read core file " + shown + ": " + e.what());
      case CoreStreamError::Kind::Corrupt: throw DumpctlError("core file " + shown + " is corrupt: " + e.what());
      case CoreStreamError::Kind::Truncated: break;
    }
    throw DumpctlError("core file " + shown + " is truncated (incomplete zstd frame)");
  }
}

std::uint64_t stream_core_file(const std::string& path, std::string_view compression, const ByteSink& sink) {
  const std::string shown = escape_for_display(path);
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw DumpctlError("cannot open core file " + shown + ": " + std::strerror(errno));
  return stream_core_fd(fd.get(), compression, shown, sink);
}

std::uint64_t extract_core(OpenCore& core, const DumpRecord& r, const ByteSink& sink) {
  const std::uint64_t n = stream_core_fd(core.fd.get(), core.compression, core.shown, sink);
  if (r.state == DumpState::Complete && n != r.core_size) {
    throw DumpctlError("core file " + core.shown + " is corrupt: it holds " + std::to_string(n) +
                       " bytes, the index says " + std::to_string(r.core_size));
  }
  return n;
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
  const std::uint64_t n = stream_core_file(path, r.compression, sink);
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
