#include "daemon/query/query_socket.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace coredumpd {

namespace {

[[noreturn]] void fail(const std::string& what) { throw std::system_error(errno, std::generic_category(), what); }

}  // namespace

UniqueFd listen_query_socket(const std::string& path, int backlog) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path))
    throw std::runtime_error("query socket path \"" + path + "\" is empty or longer than 107 bytes");
  std::memcpy(addr.sun_path, path.data(), path.size());
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) throw std::runtime_error(path + " exists and is not a socket; refusing to replace it");
    ::unlink(path.c_str());  // stale: left by a daemon that died
  }
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) fail("socket");
  // Bound 0600 first (umask), opened up with chmod once it exists: no window with other modes.
  const mode_t old_umask = ::umask(0177);
  const int rc = ::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  const int bind_errno = errno;
  ::umask(old_umask);
  if (rc != 0) {
    errno = bind_errno;
    fail("binding " + path);
  }
  if (::chmod(path.c_str(), 0666) != 0) fail("chmod " + path);
  if (::listen(fd.get(), backlog) != 0) fail("listen " + path);
  return fd;
}

std::string adopt_query_socket(int fd) {
  if (sd_is_socket_unix(fd, SOCK_STREAM, 1, nullptr, 0) <= 0)
    throw std::runtime_error("the query socket systemd passed is not a listening AF_UNIX stream socket");
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) fail("fcntl on the passed query socket");
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  sockaddr_un addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 || len <= offsetof(sockaddr_un, sun_path) ||
      addr.sun_path[0] == '\0')
    return "";
  return std::string(addr.sun_path, strnlen(addr.sun_path, len - offsetof(sockaddr_un, sun_path)));
}

}  // namespace coredumpd
