// Whether the running kernel can take core_pattern "@@<socket>": one rule for the daemon (which
// installs the pattern only where it works) and dumpctl (which reports it in `status`).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace coredumpd {

/// Where the support check looks: the kernel's list of core_pattern modes and its release. The
/// defaults describe the running kernel; tests point them at files and strings (a simulated kernel,
/// `coredumpd --enable-test-hooks --test-core-modes FILE --test-kernel-release REL`).
struct KernelFacts {
  std::string core_modes_path = "/proc/sys/kernel/core_modes";
  std::string release;  ///< uname -r; empty: the running kernel's
};

/// Whether `release` ("6.18.44-foo", "7.0") is at least major.minor; false when it does not start
/// with digits "N.M".
bool release_at_least(std::string_view release, int major, int minor);

/// Why this kernel cannot take core_pattern "@@<socket>", or std::nullopt if it can. The "@@"
/// request/ack protocol came with Linux 6.17 (6.16 had only "@", docs/PROTOCOL.md §9), so the release
/// must be 6.17 or later; where `core_modes_path` exists (a list of words such as "file pipe
/// socket") it must also list "socket". Writing "@@..." to an older kernel would either be refused
/// (EINVAL) or, worse, leave every dump with nowhere to go. Never throws.
std::optional<std::string> socket_mode_unsupported(const KernelFacts& facts);

}  // namespace coredumpd
