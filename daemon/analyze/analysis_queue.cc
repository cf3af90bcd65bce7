#include "daemon/analyze/analysis_queue.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include <spdlog/spdlog.h>

#include "daemon/analyze/child_kill.h"
#include "daemon/report/log_limiter.h"
#include "store/core_accounting.h"

namespace coredumpd {

namespace {

// At start, how many stored dumps (newest first) are looked at for a missing analysis, beyond the
// queue's size: bounded, so a large store of analysed dumps does not cost a long scan.
constexpr std::size_t kScanSlack = 256;

}  // namespace

AnalysisQueue::AnalysisQueue(AnalysisTarget target, SettingsSource settings, Completion on_done)
    : target_(target), settings_(std::move(settings)), on_done_(std::move(on_done)), worker_([this](std::stop_token stop) { work(stop); }) {}

AnalysisQueue::~AnalysisQueue() { stop(); }

AnalysisQueue::Queued AnalysisQueue::enqueue(AnalysisJob job, std::size_t capacity) {
  if (stopped_) return Queued::Stopped;
  if (ids_.contains(job.id)) return Queued::Duplicate;
  if (jobs_.size() >= capacity) return Queued::Full;
  ids_.insert(job.id);
  jobs_.push_back(std::move(job));
  return Queued::Yes;
}

bool AnalysisQueue::submit(const DumpRecord& r) noexcept {
  try {
    const AnalysisSettings s = settings_();
    if (!s.enabled || !holds_core(r)) return false;
    Queued q;
    std::size_t pending = 0;
    {
      std::lock_guard lock(mu_);
      q = enqueue(analysis_job_of(r), static_cast<std::size_t>(s.queue));
      pending = jobs_.size();
    }
    if (q == Queued::Yes) cv_.notify_one();
    if (q != Queued::Full) return q == Queued::Yes;
    // Recorded here, not by the worker, which may be busy for timeout_s: one index write, as the
    // record's own was, on the same thread after the task's release.
    target_.stats.count(Outcome::AnalysisQueueFull);
    const std::string reason = "analysis queue full (" + std::to_string(pending) + " pending)";
    if (log_limiter().allow("analysis queue full")) spdlog::warn("analysis of {} unavailable: {}", r.id, reason);
    record_analysis(target_, r.id, analysis::unavailable(reason));
    return false;
  } catch (...) {  // out of memory: the dump stays unanalysed, and is queued again at the next start
    return false;
  }
}

void AnalysisQueue::submit_unanalysed() noexcept {
  {
    std::lock_guard lock(mu_);
    scan_unanalysed_ = true;
  }
  cv_.notify_one();
}

void AnalysisQueue::queue_unanalysed(const AnalysisSettings& s) {
  if (!s.enabled) return;
  const auto capacity = static_cast<std::size_t>(s.queue);
  std::size_t queued = 0, looked = 0;
  try {
    if (!target_.index.writable()) return;  // nothing could be recorded
    const auto rows = target_.index.list_summaries();  // oldest first
    for (auto it = rows.rbegin(); it != rows.rend() && queued < capacity && looked < capacity + kScanSlack; ++it) {
      if (!holds_core(*it)) continue;
      ++looked;
      const auto r = target_.index.get(it->id);
      if (!r || !r->analysis.is_null() || !holds_core(*r)) continue;
      std::lock_guard lock(mu_);
      if (stopped_) return;
      if (jobs_.size() >= capacity) break;  // not overflow: these wait for the next start
      if (enqueue(analysis_job_of(*r), capacity) == Queued::Yes) ++queued;
    }
  } catch (const std::exception& e) {
    spdlog::warn("looking for stored dumps without analysis failed: {}", e.what());
  }
  if (queued) spdlog::info("{} stored dump(s) without analysis queued for analysis", queued);
}

void AnalysisQueue::work(std::stop_token stop) {
  ::pthread_setname_np(::pthread_self(), "cd-analyze");
  // SCHED_IDLE: the analysis takes only CPU time no drain, handshake or compressor wants.
  const sched_param idle{};
  if (const int err = ::pthread_setschedparam(::pthread_self(), SCHED_IDLE, &idle); err != 0)
    spdlog::warn("the analysis thread cannot run at idle priority (error {}); it runs at normal priority", err);
  std::unique_lock lock(mu_);
  worker_tid_ = ::gettid();
  while (!stop.stop_requested()) {
    cv_.wait(lock, stop, [&] { return !jobs_.empty() || scan_unanalysed_; });
    if (stop.stop_requested()) break;
    if (scan_unanalysed_) {
      scan_unanalysed_ = false;
      lock.unlock();
      queue_unanalysed(settings_());
      lock.lock();
      continue;
    }
    AnalysisJob job = std::move(jobs_.front());
    jobs_.pop_front();
    running_ = true;
    lock.unlock();
    std::optional<analysis::CrashReport> report;
    if (const AnalysisSettings s = settings_(); s.enabled) report = run_analysis_job(job, s, target_, stop);
    if (on_done_ && !stop.stop_requested()) {
      try {
        on_done_(job.id, report ? &*report : nullptr);
      } catch (...) {  // out of memory in the callee: its entry is sent at its stop
      }
    }
    lock.lock();
    running_ = false;
    ids_.erase(job.id);
  }
  done_ = true;
  cv_.notify_all();
}

void AnalysisQueue::stop() {
  std::unique_lock lock(mu_);
  if (stopped_) return;
  stopped_ = true;
  lock.unlock();
  worker_.request_stop();  // wakes the worker's wait
  lock.lock();
  // The analyzer may be starting while we look: kill the worker's children until it has left.
  while (!done_) {
    if (running_ && worker_tid_ != 0) kill_children_of_thread(worker_tid_);
    cv_.wait_for(lock, std::chrono::milliseconds(20), [&] { return done_; });
  }
  lock.unlock();
  worker_.join();
}

std::size_t AnalysisQueue::pending() const {
  std::lock_guard lock(mu_);
  return jobs_.size();
}

}  // namespace coredumpd
