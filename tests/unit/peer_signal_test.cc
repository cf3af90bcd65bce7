// decode_coredump_signal(): the fatal signal from PIDFD_INFO_COREDUMP_SIGNAL (Linux 6.19+), or why
// there is none. The running 6.18 kernel never fills it; a QEMU test on a 7.x kernel is a later
// issue, so the decoding is tested here on hand-made pidfd_info values.
// <linux/pidfd.h> first, on purpose: where it is 6.13+ (the newer-headers build) its PIDFD_INFO_*
// macros come before peer.h's own constants, which must then stand aside (they did not: a build
// error in any file including both in this order).
#include <linux/pidfd.h>

#include <gtest/gtest.h>

#include <csignal>
#include <cstddef>

#include "daemon/proc/peer.h"

namespace coredumpd {
namespace {

pidfd_info with(std::uint64_t mask, std::uint32_t signal) {
  pidfd_info i{};
  i.mask = mask;
  i.coredump_mask = PIDFD_COREDUMPED;
  i.coredump_signal = signal;
  return i;
}

TEST(CoredumpSignal, TakenWhenTheKernelFillsTheField) {
  const auto s = decode_coredump_signal(with(PIDFD_INFO_COREDUMP | PIDFD_INFO_COREDUMP_SIGNAL, SIGSEGV));
  EXPECT_EQ(s.signal, SIGSEGV);
  EXPECT_EQ(s.absent, "");
  EXPECT_EQ(decode_coredump_signal(with(PIDFD_INFO_COREDUMP_SIGNAL, 64)).signal, 64) << "the last real-time signal";
}

TEST(CoredumpSignal, AKernelWithoutTheFieldIsSaidSoEvenIfBytesAreThere) {
  // 6.16..6.18: PIDFD_INFO_COREDUMP only; whatever is in coredump_signal is not read.
  const auto s = decode_coredump_signal(with(PIDFD_INFO_COREDUMP, SIGABRT));
  EXPECT_EQ(s.signal, std::nullopt);
  EXPECT_EQ(s.absent, kNoCoredumpSignalText);
  EXPECT_NE(s.absent.find("does not report"), std::string::npos);
}

TEST(CoredumpSignal, AValueThatIsNoSignalIsNotTaken) {
  for (const std::uint32_t bad : {0u, 65u, 0xFFFFFFFFu}) {
    const auto s = decode_coredump_signal(with(PIDFD_INFO_COREDUMP | PIDFD_INFO_COREDUMP_SIGNAL, bad));
    EXPECT_EQ(s.signal, std::nullopt) << bad;
    EXPECT_EQ(s.absent, "the kernel reported coredump_signal " + std::to_string(bad) + ", not a signal");
  }
}

TEST(CoredumpSignal, TheFieldSitsWhereTheUapiStructHasIt) {
  // <linux/pidfd.h> of 6.19+: coredump_mask at 64, coredump_signal at 68 (PIDFD_INFO_SIZE_VER1 72).
  EXPECT_EQ(offsetof(pidfd_info, coredump_mask), 64u);
  EXPECT_EQ(offsetof(pidfd_info, coredump_signal), 68u);
}

}  // namespace
}  // namespace coredumpd
