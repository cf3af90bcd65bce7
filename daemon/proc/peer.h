// Who is on the other end of an accepted connection: SO_PEERCRED, SO_PEERPIDFD and PIDFD_GET_INFO.
//
// Sources: SO_PEERPIDFD (77, asm-generic incl. x86_64) since 6.5; PIDFD_GET_INFO since 6.13;
// PIDFD_INFO_COREDUMP since 6.16 (docs/PROTOCOL.md §3.2, §3.3). The kernel records PIDFD_COREDUMPED
// before it connects, so it is visible right after accept(); a userspace impostor's pidfd never has
// it (docs/PROTOCOL.md §3.4).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "util/unique_fd.h"

namespace coredumpd {

// uapi values not in Debian 12's 6.1 headers (include/uapi/linux/pidfd.h, asm-generic/socket.h).
// A newer <linux/pidfd.h> declares them as macros of the same value: where one was included before
// this header, its macro stands and ours is not declared (a macro would rewrite the declaration).
inline constexpr int SO_PEERPIDFD_OPT = 77;
#ifndef PIDFD_INFO_PID
inline constexpr std::uint64_t PIDFD_INFO_PID = 1U << 0;
#endif
#ifndef PIDFD_INFO_CREDS
inline constexpr std::uint64_t PIDFD_INFO_CREDS = 1U << 1;
#endif
#ifndef PIDFD_INFO_CGROUPID
inline constexpr std::uint64_t PIDFD_INFO_CGROUPID = 1U << 2;
#endif
#ifndef PIDFD_INFO_EXIT
inline constexpr std::uint64_t PIDFD_INFO_EXIT = 1U << 3;
#endif
#ifndef PIDFD_INFO_COREDUMP
inline constexpr std::uint64_t PIDFD_INFO_COREDUMP = 1U << 4;
#endif
#ifndef PIDFD_INFO_SUPPORTED_MASK
inline constexpr std::uint64_t PIDFD_INFO_SUPPORTED_MASK = 1U << 5;  ///< 6.19+: fills supported_mask
#endif
#ifndef PIDFD_INFO_COREDUMP_SIGNAL
inline constexpr std::uint64_t PIDFD_INFO_COREDUMP_SIGNAL = 1U << 6;  ///< 6.19+
#endif
#ifndef PIDFD_INFO_COREDUMP_CODE
inline constexpr std::uint64_t PIDFD_INFO_COREDUMP_CODE = 1U << 7;  ///< newer than 6.18 (7.2, 7.3 have it)
#endif
#ifndef PIDFD_COREDUMPED
inline constexpr std::uint32_t PIDFD_COREDUMPED = 1U << 0;
inline constexpr std::uint32_t PIDFD_COREDUMP_SKIP = 1U << 1;
inline constexpr std::uint32_t PIDFD_COREDUMP_USER = 1U << 2;
inline constexpr std::uint32_t PIDFD_COREDUMP_ROOT = 1U << 3;
#endif
static_assert(PIDFD_INFO_COREDUMP == 1U << 4 && PIDFD_INFO_SUPPORTED_MASK == 1U << 5 &&
              PIDFD_INFO_COREDUMP_SIGNAL == 1U << 6 && PIDFD_INFO_COREDUMP_CODE == 1U << 7 &&
              PIDFD_COREDUMP_ROOT == 1U << 3);

/// struct pidfd_info, 88 bytes (PIDFD_INFO_SIZE_VER3), as 7.3's include/uapi/linux/pidfd.h has it:
/// always passed whole and zeroed. A field is read only when the returned mask says the kernel
/// filled it (an older kernel copies only the prefix it knows and leaves the rest zero;
/// fs/pidfs.c pidfd_info(), copy_struct_to_user()).
struct pidfd_info {
  std::uint64_t mask;
  std::uint64_t cgroupid;
  std::uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
  std::int32_t exit_code;
  std::uint32_t coredump_mask;
  std::uint32_t coredump_signal;  ///< 6.19+: valid only if mask has PIDFD_INFO_COREDUMP_SIGNAL
  std::uint32_t coredump_code;    ///< siginfo si_code: valid only if mask has PIDFD_INFO_COREDUMP_CODE
  std::uint32_t coredump_pad;
  std::uint64_t supported_mask;   ///< the PIDFD_INFO_* bits this kernel knows: only if mask has SUPPORTED_MASK
};
static_assert(sizeof(pidfd_info) == 88);

/// The identity of an accepted peer.
struct Peer {
  UniqueFd pidfd;               ///< from SO_PEERPIDFD; -1 if the kernel gave none
  bool cred_known = false;      ///< SO_PEERCRED could be read (the cred_* fields are valid)
  pid_t cred_pid = 0;           ///< SO_PEERCRED pid (TGID, in our pid namespace; 0 if outside it)
  uid_t cred_uid = 0;           ///< SO_PEERCRED uid (effective)
  gid_t cred_gid = 0;           ///< SO_PEERCRED gid (effective)
  std::optional<pidfd_info> info;  ///< PIDFD_GET_INFO with PID|CREDS|CGROUPID|COREDUMP requested
  std::string error;            ///< why pidfd or info is missing, empty otherwise

  /// True if the pidfd reports PIDFD_COREDUMPED: the kernel itself is dumping this process.
  bool is_crashing_task() const {
    return info && (info->mask & PIDFD_INFO_COREDUMP) && (info->coredump_mask & PIDFD_COREDUMPED);
  }

  /// True if the peer is a process outside our pid namespace: SO_PEERCRED reported pid 0 and the
  /// pidfd does not resolve to a pid here (PIDFD_GET_INFO failed, e.g. EREMOTE, or gave pid 0).
  /// Inside a container, only a host process (a forwarding coredumpd) can be such a peer.
  bool is_outside_our_pid_namespace() const {
    return cred_known && cred_pid == 0 && (!info || info->tgid == 0);
  }
};

/// The fatal signal of a crashing task as its pidfd_info reports it, or why it does not.
struct CoredumpSignal {
  std::optional<int> signal;  ///< 1..64, when the kernel reported one
  std::string absent;         ///< why `signal` is empty (for the record and `dumpctl info`), else ""
};

/// Why a kernel gives no signal before the core: it lacks PIDFD_INFO_COREDUMP_SIGNAL.
inline constexpr const char* kNoCoredumpSignalText =
    "this kernel does not report it before the core (PIDFD_INFO_COREDUMP_SIGNAL needs Linux 6.19)";

/// Decodes coredump_signal from `info`: a signal when the mask has PIDFD_INFO_COREDUMP_SIGNAL and the
/// value is a signal number (1..64); otherwise `absent` says why (kNoCoredumpSignalText when the
/// kernel does not fill the field, the value when it is not a signal). Pure.
CoredumpSignal decode_coredump_signal(const pidfd_info& info);

/// The si_code of a crashing task's fatal signal as its pidfd_info reports it, or why it does not.
struct CoredumpCode {
  std::optional<int> code;  ///< siginfo si_code (e.g. SEGV_MAPERR 1, SI_TKILL -6), when reported
  std::string absent;       ///< why `code` is empty, else ""
};

/// Why a kernel gives no si_code before the core: it lacks PIDFD_INFO_COREDUMP_CODE.
inline constexpr const char* kNoCoredumpCodeText =
    "this kernel does not report it before the core (PIDFD_INFO_COREDUMP_CODE: newer than 6.18, in 7.3)";

/// Decodes coredump_code from `info`: the code when the mask has PIDFD_INFO_COREDUMP_CODE (the
/// kernel copies siginfo->si_code, a signed int, into the u32: fs/pidfs.c pidfs_coredump());
/// otherwise `absent` is kNoCoredumpCodeText. Pure.
CoredumpCode decode_coredump_code(const pidfd_info& info);

/// What the running kernel's PIDFD_GET_INFO supports, asked of our own pidfd with
/// PIDFD_INFO_SUPPORTED_MASK (6.19+). Our own process has not dumped core, so its returned mask
/// never shows the coredump fields: only supported_mask can say whether they exist.
struct PidfdSupport {
  std::optional<std::uint64_t> supported_mask;  ///< absent: a kernel older than 6.19, or the ioctl failed
  std::string error;                            ///< why supported_mask is absent, else ""
};

/// Asks the running kernel for its PIDFD_GET_INFO supported mask (pidfd_open(getpid()), then
/// PIDFD_GET_INFO with PIDFD_INFO_SUPPORTED_MASK). Never throws.
PidfdSupport pidfd_supported_mask();

/// Reads SO_PEERCRED, SO_PEERPIDFD and PIDFD_GET_INFO for connected socket `fd`.
/// Never throws; failures are described in Peer::error (e.g. a pre-6.5 kernel without SO_PEERPIDFD).
Peer identify_peer(int fd);

/// PIDFD_GET_INFO on `pidfd` asking for `request_mask`. Returns std::nullopt and sets `error`
/// (with errno's text) on failure, e.g. ESRCH for a reaped task without PIDFD_INFO_EXIT.
std::optional<pidfd_info> pidfd_get_info(int pidfd, std::uint64_t request_mask, std::string& error);

/// The wait status of the task behind `pidfd` (PIDFD_INFO_EXIT, Linux 6.15+), which the kernel
/// gives only once the task is reaped: retried every 2 ms for up to `patience` while its parent
/// gets to it. std::nullopt with `error` saying why otherwise (an older kernel, a parent that has not
/// reaped it in time, a failed ioctl). Blocks the caller for at most `patience`.
std::optional<int> pidfd_exit_status(int pidfd, std::chrono::milliseconds patience, std::string& error);

/// True if the process behind `pidfd` still exists (pidfd_send_signal with signal 0, syscall 424).
/// A task parked in the coredump handshake cannot be reaped, so true proves a /proc/<pid> handle
/// opened before the call belongs to it.
bool pidfd_alive(int pidfd);

}  // namespace coredumpd
