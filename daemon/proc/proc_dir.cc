#include "daemon/proc/proc_dir.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "daemon/proc/peer.h"

namespace coredumpd {

std::optional<ProcDir> ProcDir::open(int pidfd, pid_t pid, std::string& error) {
  const std::string path = "/proc/" + std::to_string(pid);
  UniqueFd dir(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) {
    error = path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  if (!pidfd_alive(pidfd)) {
    error = path + ": process behind the pidfd is gone (PID may be recycled)";
    return std::nullopt;
  }
  return ProcDir(std::move(dir), pidfd, pid);
}

std::optional<std::string> ProcDir::read(const std::string& name, std::size_t max_bytes,
                                         std::string& error) const {
  UniqueFd fd(::openat(dir_.get(), name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) {
    error = name + ": " + std::strerror(errno);
    return std::nullopt;
  }
  std::string out;
  char buf[16384];
  while (out.size() < max_bytes) {
    const ssize_t n = ::read(fd.get(), buf, std::min(sizeof(buf), max_bytes - out.size()));
    if (n < 0) {
      if (errno == EINTR) continue;
      error = name + ": " + std::strerror(errno);
      return std::nullopt;
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

std::optional<std::string> ProcDir::readlink(const std::string& name, std::string& error) const {
  char buf[4096];
  const ssize_t n = ::readlinkat(dir_.get(), name.c_str(), buf, sizeof(buf));
  if (n < 0) {
    error = name + ": " + std::strerror(errno);
    return std::nullopt;
  }
  return std::string(buf, static_cast<std::size_t>(n));
}

bool ProcDir::still_ours() const { return pidfd_alive(pidfd_); }

}  // namespace coredumpd
