#include "daemon/journal/journal_queue.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>

#include <filesystem>
#include <system_error>
#include <utility>

#include <spdlog/spdlog.h>

#include "daemon/journal/journal_fields.h"
#include "daemon/report/log_limiter.h"

namespace coredumpd::journal {

namespace {

// Records waiting for an analysis: the analysis queue bounds them (each has a queued or running
// analysis); this bound only keeps a lost completion from growing the map without end.
constexpr std::size_t kMaxAwaiting = 65536 + 16;

std::string absolute_dir(const std::string& dir) {
  std::error_code ec;
  const auto abs = std::filesystem::absolute(dir, ec);
  return ec ? dir : abs.lexically_normal().string();
}

}  // namespace

JournalQueue::JournalQueue(EntrySink& sink, Stats& stats, const std::string& store_dir, int store_dirfd,
                           SettingsSource settings)
    : sink_(sink), stats_(stats), store_dir_(absolute_dir(store_dir)), store_dirfd_(store_dirfd),
      settings_(std::move(settings)), worker_([this](std::stop_token stop) { work(stop); }) {}

JournalQueue::~JournalQueue() { stop(); }

void JournalQueue::enqueue(DumpRecord r, std::size_t capacity) {
  if (queue_.size() >= capacity) {
    stats_.count(Outcome::JournalFailed);
    if (log_limiter().allow("journal queue full"))
      spdlog::warn("journal entry of dump {} dropped: {} entries are waiting to be sent", r.id, queue_.size());
    return;
  }
  queue_.push_back(std::move(r));
  cv_.notify_one();
}

void JournalQueue::submit(const DumpRecord& r) noexcept {
  try {
    const JournalSettings s = settings_();
    if (!s.enabled || !entry_wanted(r.state)) return;
    std::lock_guard lock(mu_);
    if (!stopped_) enqueue(r, static_cast<std::size_t>(s.queue));
  } catch (...) {  // out of memory: this crash has no entry; its record is in the index
    stats_.count(Outcome::JournalFailed);
  }
}

void JournalQueue::await_analysis(const DumpRecord& r) noexcept {
  try {
    const JournalSettings s = settings_();
    if (!s.enabled || !entry_wanted(r.state)) return;
    std::lock_guard lock(mu_);
    if (stopped_) return;
    if (!s.stack_trace || awaiting_.size() >= kMaxAwaiting) return enqueue(r, static_cast<std::size_t>(s.queue));
    awaiting_.insert_or_assign(r.id, r);
  } catch (...) {
    stats_.count(Outcome::JournalFailed);
  }
}

void JournalQueue::analysis_done(const std::string& id, const analysis::CrashReport* report) noexcept {
  try {
    const JournalSettings s = settings_();
    std::lock_guard lock(mu_);
    const auto it = awaiting_.find(id);
    if (it == awaiting_.end()) return;
    DumpRecord r = std::move(it->second);
    awaiting_.erase(it);
    if (report) {
      r.analysis = analysis::to_json(*report);
      r.signature = report->signature;
      r.signature_text = report->signature_text;
    }
    if (!stopped_) enqueue(std::move(r), static_cast<std::size_t>(s.queue));
  } catch (...) {
    stats_.count(Outcome::JournalFailed);
  }
}

void JournalQueue::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    // Sent without their stack trace rather than not at all; past the queue's size too, once.
    for (auto& [id, r] : awaiting_) queue_.push_back(std::move(r));
    awaiting_.clear();
  }
  worker_.request_stop();  // the worker sends what is queued, then ends
  worker_.join();
}

std::size_t JournalQueue::awaiting() const {
  std::lock_guard lock(mu_);
  return awaiting_.size();
}

std::size_t JournalQueue::queued() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

void JournalQueue::work(std::stop_token stop) {
  ::pthread_setname_np(::pthread_self(), "cd-journal");
  std::unique_lock lock(mu_);
  while (true) {
    // After a stop, the queue is still sent: the wait returns at once while it holds entries.
    cv_.wait(lock, stop, [&] { return !queue_.empty(); });
    if (queue_.empty()) break;  // stopped, and nothing left
    DumpRecord r = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    try {
      send(r, settings_());
    } catch (const std::exception& e) {  // out of memory building the entry
      stats_.count(Outcome::JournalFailed);
      if (log_limiter().allow("journal entry failed")) spdlog::warn("journal entry of dump {} not written: {}", r.id, e.what());
    }
    lock.lock();
  }
}

void JournalQueue::send(const DumpRecord& r, const JournalSettings& s) {
  if (!s.enabled) return;
  bool present = false;
  if (!r.path.empty()) {
    struct stat st {};
    present = ::fstatat(store_dirfd_, r.path.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
  }
  const auto fields = journal_fields(r, {.store_dir = store_dir_, .core_present = present, .stack_trace = s.stack_trace});
  std::string error;
  switch (sink_.send(fields, error)) {
    case SendResult::Written:
      stats_.count(Outcome::JournalWritten);
      spdlog::debug("journal entry of dump {} written ({} fields)", r.id, fields.size());
      break;
    case SendResult::NoJournal:
      if (!no_journal_logged_) {
        no_journal_logged_ = true;
        spdlog::info("journald is not running ({} is absent): crashes get no journal entry until it runs", kJournalSocket);
      }
      break;
    case SendResult::Failed:
      stats_.count(Outcome::JournalFailed);
      if (log_limiter().allow("journal entry failed"))
        spdlog::warn("journal entry of dump {} not written: {}", r.id, error);
      break;
  }
}

}  // namespace coredumpd::journal
