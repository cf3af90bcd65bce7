// What the fake kernel's crashing task (fake_crasher_main.cc, a program of its own) and its
// controller (crasher.h) share: the descriptor numbers it is started with, the command words on its
// control socket, and the page both map (a memfd) on which its threads report their closed tables.
#pragma once

#include <atomic>
#include <cstdint>

namespace coredumpd::fake_kernel::crasher_abi {

/// Descriptors the crasher is started with.
inline constexpr int kControlFd = 3;     ///< SOCK_SEQPACKET to the controller: commands and replies
inline constexpr int kSharedFd = 4;      ///< memfd holding one SharedPage
inline constexpr int kReleaseFd = 5;     ///< read end: EOF tells the sharing process to report and exit
inline constexpr int kResultFd = 6;      ///< write end: the sharing process's 'O' (fd still open) or 'C'

/// Commands (one datagram each) and the first reply.
inline constexpr char kCmdConnect = 'c';  ///< "c<socket path>": connect(), reply errno (int), fd by SCM_RIGHTS
inline constexpr char kCmdClose = 'x';    ///< close the fd table of every thread, as the RFC kernel does

/// The shared page. Written with atomics only: the two sides are different processes.
struct SharedPage {
  std::atomic<std::uint32_t> go_close{0};     ///< set by the main thread on kCmdClose; threads wait on it (futex)
  std::atomic<std::uint32_t> closed{0};       ///< threads (main included) whose close_range returned (futex)
  std::atomic<std::int32_t> sharer_pid{0};    ///< the forked / CLONE_FILES process, once started
  std::atomic<std::int32_t> threads_ready{0}; ///< extra threads started
};
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);

}  // namespace coredumpd::fake_kernel::crasher_abi
