// The analyzer's sandbox, applied by the analyzer to itself after it has read its request and
// opened its temp file, before it reads a byte of the (attacker-controlled) core.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace coredumpd::analyzer {

/// Address space an RLIMIT_AS must leave beyond what the analyzer maps before the sandbox.
inline constexpr std::uint64_t kMinHeadroomBytes = std::uint64_t{16} << 20;

/// What the sandbox allows.
struct SandboxPolicy {
  std::optional<std::uint32_t> run_as_uid, run_as_gid;  ///< dropped to when root (and different)
  std::uint32_t cpu_seconds = 20;       ///< RLIMIT_CPU (0: not set)
  std::uint64_t memory_bytes = 0;       ///< RLIMIT_AS (0: not set; not set under ASan, see below)
  std::uint64_t file_bytes = 0;         ///< RLIMIT_FSIZE: bounds the decompressed temp file (0: none written)
  bool idle = true;                     ///< SCHED_IDLE and the idle I/O class
  bool network = false;                 ///< debuginfod: keep the network, allow sockets and threads
};

/// Applies `policy` to the calling (single-threaded) process, in this order: a new network
/// namespace (root, unless network), supplementary groups/gid/uid dropped (root), the rlimits
/// (CPU, AS, FSIZE, CORE 0, NOFILE 64), SCHED_IDLE + idle I/O class, PR_SET_NO_NEW_PRIVS,
/// PR_SET_DUMPABLE 0 and a seccomp allowlist whose default is ERRNO(EPERM): an unexpected system
/// call fails instead of killing the analyzer. Returns the steps that could not be applied but
/// are not needed for safety (e.g. the net namespace of a non-root run), as warnings. Throws
/// std::system_error naming the step when a step that matters fails, and std::runtime_error when
/// memory_bytes is below the address space already mapped plus kMinHeadroomBytes.
std::vector<std::string> apply_sandbox(const SandboxPolicy& policy);

/// Reports, from inside the sandbox, what a hostile core could try (for tests, hidden flag
/// --sandbox-self-check): the errno of socket(AF_INET), socket(AF_UNIX), execve, ptrace, kill(1),
/// an open for writing, and the ids and limits in force, as a JSON text.
std::string sandbox_self_check();

}  // namespace coredumpd::analyzer
