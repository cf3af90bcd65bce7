#include "daemon/proc/collector_pool.h"

#include <algorithm>
#include <thread>

namespace coredumpd {

CollectorPool::CollectorPool(std::size_t warm, std::size_t max, std::chrono::milliseconds idle_exit)
    : warm_(std::max<std::size_t>(warm, 1)), max_(std::max(max, std::max<std::size_t>(warm, 1))), idle_exit_(idle_exit) {
  std::lock_guard lock(mu_);
  for (std::size_t i = 0; i < warm_; ++i) start_thread();
}

CollectorPool::~CollectorPool() { join(); }

void CollectorPool::start_thread() {
  ++threads_;
  peak_ = std::max(peak_, threads_);
  // Detached: a thread that exits after an idle spell has nobody to join it; join() waits for the
  // count instead.
  std::thread([this] { work(); }).detach();
}

void CollectorPool::post(std::function<void()> job) {
  std::lock_guard lock(mu_);
  if (stopping_) return;
  jobs_.push_back(std::move(job));
  // Idle threads already woken for earlier jobs are spoken for: count only the rest.
  if (idle_ >= jobs_.size()) {
    wake_.notify_one();
  } else if (threads_ < max_) {
    start_thread();
  }
}

void CollectorPool::work() {
  std::unique_lock lock(mu_);
  while (true) {
    if (jobs_.empty()) {
      if (stopping_) break;
      ++idle_;
      const bool woken = wake_.wait_for(lock, idle_exit_, [&] { return !jobs_.empty() || stopping_; });
      --idle_;
      if (!woken && threads_ > warm_) break;  // idle for idle_exit_: not needed any more
      continue;
    }
    auto job = std::move(jobs_.front());
    jobs_.pop_front();
    ++running_;
    lock.unlock();
    job();
    job = nullptr;  // the job's captures die here, not under the lock
    lock.lock();
    --running_;
  }
  --threads_;
  exited_.notify_all();
}

void CollectorPool::join() {
  std::unique_lock lock(mu_);
  stopping_ = true;
  wake_.notify_all();
  exited_.wait(lock, [&] { return threads_ == 0; });
}

CollectorPool::Load CollectorPool::load() const {
  std::lock_guard lock(mu_);
  return {threads_, running_, jobs_.size(), peak_};
}

}  // namespace coredumpd
