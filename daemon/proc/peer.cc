#include "daemon/proc/peer.h"

#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace coredumpd {

namespace {
// _IOWR(0xFF, 11, struct pidfd_info): the struct size is part of the ioctl number.
const unsigned long PIDFD_GET_INFO_IOCTL = _IOWR(0xFF, 11, pidfd_info);
}  // namespace

std::optional<pidfd_info> pidfd_get_info(int pidfd, std::uint64_t request_mask, std::string& error) {
  pidfd_info info{};
  info.mask = request_mask;
  if (::ioctl(pidfd, PIDFD_GET_INFO_IOCTL, &info) < 0) {
    error = std::string("PIDFD_GET_INFO: ") + std::strerror(errno);
    return std::nullopt;
  }
  return info;
}

std::optional<int> pidfd_exit_status(int pidfd, std::chrono::milliseconds patience, std::string& error) {
  const auto deadline = std::chrono::steady_clock::now() + patience;
  for (;;) {
    const auto info = pidfd_get_info(pidfd, PIDFD_INFO_EXIT, error);
    if (!info) return std::nullopt;
    if ((info->mask & PIDFD_INFO_EXIT) != 0) return info->exit_code;
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  error = "no exit status from PIDFD_INFO_EXIT within " + std::to_string(patience.count()) +
          " ms (Linux 6.15+, once the task's parent reaped it)";
  return std::nullopt;
}

bool pidfd_alive(int pidfd) {
  return ::syscall(SYS_pidfd_send_signal, pidfd, 0, nullptr, 0) == 0;
}

Peer identify_peer(int fd) {
  Peer peer;
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
    peer.cred_known = true;
    peer.cred_pid = cred.pid;
    peer.cred_uid = cred.uid;
    peer.cred_gid = cred.gid;
  }
  int pidfd = -1;
  len = sizeof(pidfd);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD_OPT, &pidfd, &len) < 0) {
    peer.error = std::string("SO_PEERPIDFD: ") + std::strerror(errno);
    return peer;
  }
  peer.pidfd.reset(pidfd);
  // 7.3 returns SIGNAL and CODE with COREDUMP whether asked or not; asking says what we read.
  peer.info = pidfd_get_info(pidfd, PIDFD_INFO_PID | PIDFD_INFO_CREDS | PIDFD_INFO_CGROUPID | PIDFD_INFO_COREDUMP |
                                        PIDFD_INFO_COREDUMP_SIGNAL | PIDFD_INFO_COREDUMP_CODE,
                             peer.error);
  return peer;
}

CoredumpSignal decode_coredump_signal(const pidfd_info& info) {
  if (!(info.mask & PIDFD_INFO_COREDUMP_SIGNAL)) return {std::nullopt, kNoCoredumpSignalText};
  // _NSIG is 65 on Linux: signals 1..64.
  if (info.coredump_signal == 0 || info.coredump_signal > 64)
    return {std::nullopt, "the kernel reported coredump_signal " + std::to_string(info.coredump_signal) + ", not a signal"};
  return {static_cast<int>(info.coredump_signal), ""};
}

CoredumpCode decode_coredump_code(const pidfd_info& info) {
  if (!(info.mask & PIDFD_INFO_COREDUMP_CODE)) return {std::nullopt, kNoCoredumpCodeText};
  return {static_cast<std::int32_t>(info.coredump_code), ""};
}

PidfdSupport pidfd_supported_mask() {
  const UniqueFd self(static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0)));
  if (!self) return {std::nullopt, std::string("pidfd_open: ") + std::strerror(errno)};
  std::string error;
  const auto info = pidfd_get_info(self.get(), PIDFD_INFO_SUPPORTED_MASK, error);
  if (!info) return {std::nullopt, error};
  if (!(info->mask & PIDFD_INFO_SUPPORTED_MASK))
    return {std::nullopt, "PIDFD_GET_INFO reports no supported mask (PIDFD_INFO_SUPPORTED_MASK needs Linux 6.19)"};
  return {info->supported_mask, ""};
}

}  // namespace coredumpd
