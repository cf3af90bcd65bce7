// Running coredumpd-analyze (analyzer/) on one stored core, from the daemon or dumpctl: a separate,
// sandboxed process, because a core is attacker-controlled input and unwinding parses it.
//
// The analyzer's interface (both sides keep to it):
//   argv:   coredumpd-analyze --request-fd 0 --core-fd 3
//   fd 0:   the request, one JSON object (request_json()): {"compression", "signal",
//           "crashing_tid", "thread_names", "max_threads", "max_frames", "max_report_bytes",
//           "cpu_seconds", "memory_bytes", "idle", "temp_dir", "run_as_uid", "run_as_gid",
//           "debuginfod": {"urls": [...], "budget_s", "cache_dir"} | null}
//   fd 3:   the stored core, read-only: raw ELF ("none") or a zstd stream ("zstd")
//   fd 1:   the report, one JSON object (analysis/crash_report.h), at most max_report_bytes
//   fd 2:   diagnostics (kept, capped, for the reason of a failure)
//   exit 0: a report was written (possibly state "unavailable"); anything else: no report.
// The analyzer applies the limits and its sandbox itself, before it reads a byte of the core.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/crash_report.h"

namespace coredumpd::analysis {

/// How the analyzer runs: its limits and its sandbox.
struct AnalyzerOptions {
  std::string analyzer_path;                       ///< "" : default_analyzer_path()
  std::chrono::milliseconds wall_timeout{30000};   ///< killed (SIGKILL) after this
  std::uint32_t cpu_seconds = 20;                  ///< RLIMIT_CPU
  std::uint64_t memory_bytes = std::uint64_t{1} << 30;  ///< RLIMIT_AS
  bool idle = true;                                ///< SCHED_IDLE and the idle I/O class
  std::size_t max_threads = kDefaultMaxThreads;
  std::size_t max_frames = kDefaultMaxFrames;
  std::size_t max_report_bytes = kMaxReportBytes;
  std::string temp_dir = "/var/tmp";               ///< where a zstd core is decompressed (O_TMPFILE)
  /// The analyzer drops to these ids when started as root (default: nobody).
  std::int64_t run_as_uid = 65534, run_as_gid = 65534;
  std::vector<std::string> debuginfod_urls;        ///< empty: no debuginfod, and no network at all
  std::chrono::seconds debuginfod_budget{10};      ///< per dump
  std::string debuginfod_cache_dir;                ///< "" : the analyzer's default under temp_dir
};

/// What the analyzer is told of the dump beside its core.
struct AnalyzerInput {
  int core_fd = -1;                        ///< the stored core, open read-only (not consumed)
  std::string compression;                 ///< DumpRecord::compression: "zstd" or "none"
  std::optional<int> signal;               ///< DumpRecord::signal
  std::optional<std::int64_t> crashing_tid;///< DumpRecord::crashing_tid_ns
  nlohmann::json thread_names;             ///< extra.thread_names (tid string -> byte string), or null
};

/// The request JSON written to the analyzer's fd 0 for `input` and `options`.
nlohmann::json request_json(const AnalyzerInput& input, const AnalyzerOptions& options);

/// Runs the analyzer and returns its report. Never throws for what the analyzer does: a crash, a
/// signal, the wall timeout, output over max_report_bytes or not a valid report become
/// unavailable("analyzer ...: <why>", with the end of its stderr). Throws std::system_error only
/// when the analyzer cannot be started at all (no such file, fork failure).
CrashReport run_analyzer(const AnalyzerInput& input, const AnalyzerOptions& options);

/// The analyzer to run when AnalyzerOptions::analyzer_path is "": $COREDUMPD_ANALYZER if set; the
/// build tree's coredumpd-analyze when the running program is in the build tree; else the
/// installed <libexecdir>/coredumpd/coredumpd-analyze.
std::string default_analyzer_path();

}  // namespace coredumpd::analysis
