// The "analysis" section of the configuration: whether and how the daemon analyses a stored core
// (daemon/analyze/, analysis/analyzer_run.h). Plain settings; the analyze room turns them into
// analysis::AnalyzerOptions.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace coredumpd {

/// "analysis": {"debuginfod": {...}}: fetching missing debug files over HTTP (off by default).
struct DebuginfodSettings {
  bool enabled = false;               ///< false, or no URL: the analyzer has no network at all
  std::vector<std::string> urls;      ///< debuginfod servers ("https://debuginfod.example.org")
  std::chrono::seconds budget{10};    ///< per dump
  std::string cache_dir = "/var/cache/coredumpd/debuginfod";
};

/// "analysis": {...}: the analyzer, its limits and its queue.
struct AnalysisSettings {
  bool enabled = true;                  ///< analyse each stored core (after the store, at idle priority)
  std::string analyzer;                 ///< the program; "" : analysis::default_analyzer_path()
  /// Wall time of one analysis; the analyzer is killed after it. Generous (cpu_s bounds the work):
  /// the analyzer runs SCHED_IDLE, and on a busy machine it mostly waits for a CPU.
  std::chrono::seconds timeout{120};
  std::chrono::seconds cpu{20};         ///< RLIMIT_CPU of the analyzer
  std::uint64_t memory_mib = 1024;      ///< RLIMIT_AS of the analyzer, MiB
  int max_threads = 64;                 ///< threads shown in a report (crashing thread first)
  int max_frames = 64;                  ///< frames kept per thread
  int queue = 64;                       ///< dumps waiting for analysis; more are recorded as unavailable
  std::string temp_dir = "/var/tmp";    ///< where a zstd core is decompressed (an O_TMPFILE)
  /// The user the analyzer runs as (when the daemon is root); resolved with getpwnam() at load.
  std::string run_as_user = "nobody";
  std::int64_t run_as_uid = 65534;      ///< run_as_user's uid
  std::int64_t run_as_gid = 65534;      ///< run_as_user's primary gid
  DebuginfodSettings debuginfod;
};

}  // namespace coredumpd
