// The analyzer's request: what its parent (the daemon or dumpctl, analysis/analyzer_run.h's
// request_json()) tells it about the dump beside the core, and the limits it must apply to itself.
// The request is trusted (it comes from the parent, not from the core), but still checked: a
// wrong type is a bug on the other side, refused with the key's name.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace coredumpd::analyzer {

/// A request refused: what() names the key and why.
class RequestError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Debuginfod settings; present only when the configuration names servers.
struct DebuginfodRequest {
  std::vector<std::string> urls;        ///< never empty
  std::chrono::seconds budget{10};      ///< DEBUGINFOD_MAXTIME for the whole dump
  std::string cache_dir;                ///< "" : <temp_dir>/coredumpd-debuginfod
};

/// One parsed request (the keys of analysis/analyzer_run.h's header comment).
struct Request {
  std::string compression = "none";     ///< "none" (raw ELF on the core fd) or "zstd"
  std::optional<int> signal;            ///< the fatal signal, for the signature
  std::optional<std::int64_t> crashing_tid;
  std::map<std::int64_t, std::string> thread_names;  ///< tid -> comm bytes
  std::size_t max_threads = 64;
  std::size_t max_frames = 64;
  std::size_t max_report_bytes = std::size_t{1} << 20;
  std::uint32_t cpu_seconds = 20;       ///< RLIMIT_CPU; 0: none
  std::uint64_t memory_bytes = std::uint64_t{1} << 30;  ///< RLIMIT_AS; 0: none
  bool idle = true;                     ///< SCHED_IDLE and the idle I/O class
  std::string temp_dir = "/var/tmp";    ///< where a zstd core is decompressed (O_TMPFILE)
  /// Bound of the decompressed core (RLIMIT_FSIZE of the temp file); optional key "max_core_bytes".
  std::uint64_t max_core_bytes = std::uint64_t{64} << 30;
  std::optional<std::int64_t> run_as_uid, run_as_gid;  ///< ids to drop to when root
  std::optional<DebuginfodRequest> debuginfod;
};

/// Parses the request object. Missing keys keep their defaults; a key of the wrong type or out of
/// range throws RequestError naming it.
Request parse_request(const nlohmann::json& j);

/// An example request (every key, with defaults), for `coredumpd-analyze --print-request-example`.
nlohmann::json example_request();

}  // namespace coredumpd::analyzer
