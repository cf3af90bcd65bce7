// The work of one analysis: the stored core opened, the analyzer run on it, its report recorded.
#pragma once

#include <cstdint>
#include <optional>
#include <stop_token>
#include <string>

#include <nlohmann/json.hpp>

#include "analysis/analyzer_run.h"
#include "daemon/policy/analysis_settings.h"
#include "daemon/report/stats.h"
#include "store/dump_record.h"
#include "store/index.h"

namespace coredumpd {

/// What one analysis needs of a stored dump's record (copied: the record may change meanwhile).
struct AnalysisJob {
  std::string id;
  std::string comm;                          ///< for the log line
  std::string path;                          ///< the core's file name in the store
  std::string compression;                   ///< "zstd" or "none"
  std::optional<int> signal;
  std::optional<std::int64_t> crashing_tid;  ///< DumpRecord::crashing_tid_ns
  nlohmann::json thread_names;               ///< extra.thread_names, or null
};

/// The job for record `r` (which should hold a core).
AnalysisJob analysis_job_of(const DumpRecord& r);

/// The analyzer's options for `s`: limits, sandbox user, temp dir, debuginfod (URLs only when
/// enabled), the analyzer's path ("" -> analysis::default_analyzer_path()).
analysis::AnalyzerOptions analyzer_options(const AnalysisSettings& s);

/// Where one analysis writes: the index, the store directory its cores are in, the counters.
struct AnalysisTarget {
  Index& index;
  int store_dirfd;
  Stats& stats;
};

/// Runs one analysis with `settings` and records it (Index::set_analysis()), counting and logging
/// the outcome (Analyzed, AnalysisUnavailable, AnalysisNotRecorded). A core that is gone (vacuumed)
/// is skipped (debug log); so is a read-only index (logged once). When `stop` is requested by the
/// time the analyzer returns, nothing is recorded: the next start analyses the dump again.
/// Returns the report of an analysis that came to an end (recorded or not: the journal entry
/// shows it either way), std::nullopt when none did (core gone, stop). Never throws.
std::optional<analysis::CrashReport> run_analysis_job(const AnalysisJob& job, const AnalysisSettings& settings, AnalysisTarget target,
                      std::stop_token stop);

/// Records `report` for dump `id` (no analyzer run): how "analysis queue full" is written. Counts
/// AnalysisNotRecorded when the index refuses it. Never throws; returns true if recorded.
bool record_analysis(AnalysisTarget target, const std::string& id, const analysis::CrashReport& report);

}  // namespace coredumpd
