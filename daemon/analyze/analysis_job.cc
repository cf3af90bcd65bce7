#include "daemon/analyze/analysis_job.h"

#include <fcntl.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <system_error>

#include <spdlog/spdlog.h>

#include "daemon/report/log_limiter.h"
#include "daemon/report/logging.h"
#include "store/record_extras.h"
#include "util/unique_fd.h"

namespace coredumpd {

namespace {

// A read-only store is said once per run, not once per dump.
std::atomic<bool> g_read_only_logged{false};

}  // namespace

AnalysisJob analysis_job_of(const DumpRecord& r) {
  AnalysisJob job{.id = r.id, .comm = r.comm, .path = r.path, .compression = r.compression, .signal = r.signal,
                  .crashing_tid = r.crashing_tid_ns, .thread_names = nullptr};
  if (const auto it = r.extra.find(extras::kThreadNames); it != r.extra.end() && it->is_object()) job.thread_names = *it;
  return job;
}

analysis::AnalyzerOptions analyzer_options(const AnalysisSettings& s) {
  analysis::AnalyzerOptions o;
  o.analyzer_path = s.analyzer.empty() ? analysis::default_analyzer_path() : s.analyzer;
  o.wall_timeout = s.timeout;
  o.cpu_seconds = static_cast<std::uint32_t>(s.cpu.count());
  o.memory_bytes = s.memory_mib << 20;
  o.idle = true;
  o.max_threads = static_cast<std::size_t>(s.max_threads);
  o.max_frames = static_cast<std::size_t>(s.max_frames);
  o.temp_dir = s.temp_dir;
  o.run_as_uid = s.run_as_uid;
  o.run_as_gid = s.run_as_gid;
  if (s.debuginfod.enabled) o.debuginfod_urls = s.debuginfod.urls;  // empty: no network at all
  o.debuginfod_budget = s.debuginfod.budget;
  o.debuginfod_cache_dir = s.debuginfod.cache_dir;
  return o;
}

bool record_analysis(AnalysisTarget target, const std::string& id, const analysis::CrashReport& report) {
  try {
    if (!target.index.writable()) {
      if (!g_read_only_logged.exchange(true))
        spdlog::warn("analysis of {} and later dumps not recorded: the index is read-only", id);
      target.stats.count(Outcome::AnalysisNotRecorded);
      return false;
    }
    if (!target.index.set_analysis(id, analysis::to_json(report), report.signature, report.signature_text)) {
      spdlog::debug("analysis of {} not recorded: the record is gone", id);
      return false;
    }
    return true;
  } catch (const std::exception& e) {
    target.stats.count(Outcome::AnalysisNotRecorded);
    if (log_limiter().allow("analysis not recorded")) spdlog::warn("analysis of {} not recorded: {}", id, e.what());
    return false;
  }
}

std::optional<analysis::CrashReport> run_analysis_job(const AnalysisJob& job, const AnalysisSettings& settings,
                                                      AnalysisTarget target, std::stop_token stop) {
  if (stop.stop_requested()) return std::nullopt;
  UniqueFd core(::openat(target.store_dirfd, job.path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  analysis::CrashReport report;
  if (!core && errno == ENOENT) {
    spdlog::debug("analysis of {} skipped: its core {} is gone (vacuumed)", job.id, escape_for_log(job.path));
    return std::nullopt;
  }
  if (!core) {
    report = analysis::unavailable(std::string("the stored core cannot be opened: ") + std::strerror(errno));
  } else {
    analysis::AnalyzerInput input{.core_fd = core.get(), .compression = job.compression, .signal = job.signal,
                                  .crashing_tid = job.crashing_tid, .thread_names = job.thread_names};
    try {
      report = analysis::run_analyzer(input, analyzer_options(settings));
    } catch (const std::exception& e) {  // not startable (std::system_error), or out of memory
      report = analysis::unavailable(std::string("the analyzer cannot be started: ") + e.what());
    }
  }
  if (stop.stop_requested()) {  // killed by the stop: not this dump's fault, so analysed again next start
    spdlog::debug("analysis of {} abandoned: coredumpd is stopping", job.id);
    return std::nullopt;
  }
  if (!record_analysis(target, job.id, report)) return report;
  const bool ok = report.state == "ok";
  target.stats.count(ok ? Outcome::Analyzed : Outcome::AnalysisUnavailable);
  if (!log_limiter().allow(ok ? "analysis" : "analysis unavailable")) return report;
  if (ok)
    spdlog::info("analysis of {} ({}): {}", job.id, escape_for_log(job.comm),
                 report.signature_text.empty() ? std::string("no frame to sign") : escape_for_log(report.signature_text));
  else
    spdlog::warn("analysis of {} unavailable: {}", job.id, escape_for_log(report.reason));
  return report;
}

}  // namespace coredumpd
