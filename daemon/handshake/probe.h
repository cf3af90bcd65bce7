// `coredumpd --probe`: what the running kernel supports, for version-skew diagnosis.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace coredumpd {

/// Describes the running kernel as coredumpd sees it: release, /proc/sys/kernel/core_modes, the
/// current core_pattern, whether `--pattern=install` would install ours ("pattern_install"), whether SO_PEERPIDFD and PIDFD_GET_INFO work and which pidfd_info fields
/// the kernel fills (asked for everything, mask 0xFF; 6.18 answers 0x17 for a live task), and the
/// coredump_req mask the kernel last offered, read from the newest record in `store_dir` (if any).
/// `close_files_bit` is the configured COREDUMP_CLOSE_FILES value, used to name offered bits.
/// Never throws: what cannot be probed is reported as an "error" string in its place.
nlohmann::json probe_kernel(const std::string& store_dir, std::uint64_t close_files_bit);

}  // namespace coredumpd
