// Metadata collected from /proc/<pid> while the crashing task is frozen in the handshake.
//
// Everything here is read before the ack: the task's fd table may be gone afterwards
// (COREDUMP_CLOSE_FILES) and without WAIT the whole /proc entry vanishes when the stream ends
// (spec §5.1). Time spent here stalls the crashing process, so collectors run in order against a
// deadline and whatever has not run by then is recorded as skipped.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/proc_dir.h"

namespace coredumpd {

/// One thread of the crashing process: its TID in our pid namespace and in its own (innermost).
struct ThreadIds {
  std::int64_t host_tid = 0;
  std::int64_t ns_tid = 0;
};

/// What the handshake collectors found. Strings are raw bytes from the process (untrusted).
struct HandshakeFacts {
  std::string comm;
  std::string exe;
  std::vector<std::string> argv;
  std::string cwd;
  std::string cgroup;
  std::string hostname;
  std::vector<ThreadIds> threads;           ///< from task/*/status NSpid
  std::optional<std::uint64_t> rlimit_core;  ///< soft RLIMIT_CORE in bytes; UINT64_MAX = unlimited
  nlohmann::json errors = nlohmann::json::object();   ///< collector name -> why it failed/was skipped
  nlohmann::json timings_us = nlohmann::json::object();  ///< collector name -> microseconds spent
  bool verified = false;  ///< the pidfd was re-checked alive after the last read
};

/// Runs every handshake collector on `proc`, in order, until `deadline`; collectors not started by
/// then are recorded in `errors` as "skipped: handshake deadline". Never throws.
HandshakeFacts collect_handshake_facts(const ProcDir& proc, std::chrono::steady_clock::time_point deadline);

/// Splits /proc/<pid>/cmdline into arguments: NUL-separated, one trailing NUL dropped, empty
/// arguments kept ("a\0\0b\0" -> {"a", "", "b"}).
std::vector<std::string> split_cmdline(const std::string& raw);

/// The host and innermost TIDs from a status file's "NSpid:" line; std::nullopt if absent.
std::optional<ThreadIds> parse_nspid(const std::string& status);

/// The soft "Max core file size" from a limits file, in bytes (UINT64_MAX for "unlimited").
std::optional<std::uint64_t> parse_rlimit_core(const std::string& limits);

}  // namespace coredumpd
