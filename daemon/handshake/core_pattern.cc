#include "daemon/handshake/core_pattern.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include <spdlog/spdlog.h>

#include "util/unique_fd.h"

namespace coredumpd {

namespace {
constexpr const char* kCorePattern = "/proc/sys/kernel/core_pattern";
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
    : previous_(read_core_pattern()), ours_("@@" + socket_path) {
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
