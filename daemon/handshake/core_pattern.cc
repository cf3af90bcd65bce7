#include "daemon/handshake/core_pattern.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <system_error>

#include <spdlog/spdlog.h>

#include "util/unique_fd.h"

namespace coredumpd {

namespace {
constexpr const char* kCorePattern = "/proc/sys/kernel/core_pattern";
}

std::optional<std::string> socket_path_problem(const std::string& path) {
  if (path.empty() || path.front() != '/') return "the kernel needs an absolute path after \"@@\"";
  if (path.size() > kMaxSocketPathBytes)
    return std::to_string(path.size()) + " bytes, over the " + std::to_string(kMaxSocketPathBytes) +
           " bytes sockaddr_un's sun_path holds";
  // The whole pattern's limit follows from sun_path's: "@@" + 107 bytes fits core_pattern.
  static_assert(2 + kMaxSocketPathBytes <= kMaxCorePatternBytes);
  if (const auto ws = path.find_first_of(" \t\n"); ws != std::string::npos)
    return "it has a " + std::string(path[ws] == ' ' ? "space" : "blank") + " at byte " + std::to_string(ws) +
           ", where the kernel ends the pattern";
  // Each existing prefix, from the root down: the kernel resolves the path with no symlink anywhere.
  for (std::size_t end = 1; end <= path.size();) {
    std::size_t next = path.find('/', end);
    if (next == std::string::npos) next = path.size();
    const std::string component = path.substr(end, next - end);
    if (component == "..") return "it has a \"..\" component, which the kernel refuses";
    const std::string prefix = path.substr(0, next);
    struct stat st{};
    if (!component.empty() && component != ".") {
      if (::lstat(prefix.c_str(), &st) < 0) break;  // not there yet: created at start, not a symlink
      if (S_ISLNK(st.st_mode)) {
        char target[4096];
        const ssize_t n = ::readlink(prefix.c_str(), target, sizeof(target) - 1);
        return prefix + " is a symlink" + (n > 0 ? " (to " + std::string(target, static_cast<std::size_t>(n)) + ")" : "") +
               ", and the kernel follows no symlink in the socket path";
      }
    }
    end = next + 1;
  }
  return std::nullopt;
}

void require_usable_socket_path(const std::string& socket_path) {
  if (const auto why = socket_path_problem(socket_path))
    throw std::invalid_argument("socket path " + socket_path + " cannot be used by the kernel: " + *why);
}

std::string read_core_pattern() {
  UniqueFd fd(::open(kCorePattern, O_RDONLY | O_CLOEXEC));
  if (!fd) throw std::system_error(errno, std::generic_category(), kCorePattern);
  char buf[512];
  const ssize_t n = ::read(fd.get(), buf, sizeof(buf));
  if (n < 0) throw std::system_error(errno, std::generic_category(), kCorePattern);
  std::string s(buf, static_cast<std::size_t>(n));
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

void write_core_pattern(const std::string& pattern) {
  UniqueFd fd(::open(kCorePattern, O_WRONLY | O_CLOEXEC));
  if (!fd) throw std::system_error(errno, std::generic_category(), kCorePattern);
  if (::write(fd.get(), pattern.data(), pattern.size()) != static_cast<ssize_t>(pattern.size()))
    throw std::system_error(errno, std::generic_category(), std::string("writing \"") + pattern + "\" to " + kCorePattern);
}

CorePatternGuard::CorePatternGuard(const std::string& socket_path)
    : ours_("@@" + socket_path) {
  require_usable_socket_path(socket_path);
  previous_ = read_core_pattern();
  write_core_pattern(ours_);
  active_ = true;
  spdlog::info("core_pattern set to {} (was {})", ours_, previous_);
}

CorePatternGuard::~CorePatternGuard() { restore(); }

void CorePatternGuard::restore() {
  if (!active_) return;
  active_ = false;
  try {
    if (read_core_pattern() != ours_) {
      spdlog::warn("core_pattern was changed by someone else; not restoring {}", previous_);
      return;
    }
    write_core_pattern(previous_);
    spdlog::info("core_pattern restored to {}", previous_);
  } catch (const std::exception& e) {
    spdlog::error("restoring core_pattern failed: {}", e.what());
  }
}

}  // namespace coredumpd
