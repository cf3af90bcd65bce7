#include "daemon/dump/core_fallback.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "util/dir.h"

namespace coredumpd {

namespace {

std::string mib(std::uint64_t n) { return std::to_string(n >> 20) + " MiB"; }

}  // namespace

CoreFallback::CoreFallback(std::string dir, std::uint64_t max_bytes, std::uint64_t keep_free)
    : dir_(std::move(dir)), max_bytes_(max_bytes), keep_free_(keep_free) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) throw std::system_error(ec, "creating the fallback " + dir_);
  // Crashed programs' memory: root only, whatever the umask made of a new directory.
  if (::chmod(dir_.c_str(), 0700) < 0) throw std::system_error(errno, std::generic_category(), "chmod " + dir_);
  fd_.reset(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd_) throw std::system_error(errno, std::generic_category(), "opening the fallback " + dir_);
  std::uint64_t held = 0;
  for_each_dir_entry(fd_.get(), ".", [&](std::string_view name) {
    struct stat st{};
    if (::fstatat(fd_.get(), name.data(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
      held += static_cast<std::uint64_t>(st.st_size);  // as hold() and the move count them
    return true;
  });
  used_ = held;
}

std::optional<std::string> CoreFallback::problem() const {
  if (max_bytes_ == 0) return "no fallback (fallback_max_bytes is 0)";
  const std::uint64_t used = used_.load();
  if (used >= max_bytes_)
    return "fallback " + dir_ + " is full: its cores hold " + mib(used) + " of fallback_max_bytes " + mib(max_bytes_);
  struct statvfs vfs{};
  if (::fstatvfs(fd_.get(), &vfs) < 0) return "fallback " + dir_ + ": " + std::strerror(errno);
  if (vfs.f_flag & ST_RDONLY) return "fallback " + dir_ + " is read-only";
  const auto avail = static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  if (avail <= keep_free_)
    return "fallback " + dir_ + ": its filesystem has " + mib(avail) + " free, fallback_keep_free " + mib(keep_free_);
  return std::nullopt;
}

std::string CoreFallback::reserve(std::uint64_t n) {
  std::lock_guard lock(mu_);
  const std::uint64_t used = used_.load();
  if (used + n > max_bytes_)
    return "fallback bound reached: the core needs more than the " + mib(max_bytes_ - std::min(used, max_bytes_)) +
           " left of fallback_max_bytes " + mib(max_bytes_) + " in " + dir_;
  struct statvfs vfs{};
  if (::fstatvfs(fd_.get(), &vfs) == 0) {
    const auto avail = static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize;
    if (avail < n || avail - n < keep_free_)
      return "fallback bound reached: " + dir_ + "'s filesystem is down to " + mib(avail) + " free, fallback_keep_free " +
             mib(keep_free_);
  }
  used_.fetch_add(n);
  return {};
}

void CoreFallback::release(std::uint64_t n) {
  std::uint64_t cur = used_.load();
  while (!used_.compare_exchange_weak(cur, cur >= n ? cur - n : 0)) {
  }
}

}  // namespace coredumpd
