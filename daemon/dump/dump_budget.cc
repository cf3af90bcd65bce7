#include "daemon/dump/dump_budget.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace coredumpd {

DumpNeed clamp_need(DumpNeed need, const DumpBudgetLimits& limits) {
  need.memory_bytes = std::min(need.memory_bytes, limits.memory_bytes);
  need.disk_bytes = std::min(need.disk_bytes, limits.disk_bytes / kMaxDiskShareDivisor);
  return need;
}

bool DumpBudget::fits(const DumpNeed& need, const DumpBudgetLimits& limits) const {
  return used_.dumps < limits.dumps && used_.memory_bytes + need.memory_bytes <= limits.memory_bytes &&
         used_.disk_bytes + need.disk_bytes <= limits.disk_bytes;
}

void DumpBudget::add(const DumpNeed& need) {
  ++used_.dumps;
  used_.memory_bytes += need.memory_bytes;
  used_.disk_bytes += need.disk_bytes;
}

DumpBudget::Ticket DumpBudget::reserve_or_wait(const DumpNeed& need, const DumpBudgetLimits& limits,
                                               Admitted on_admitted) {
  std::lock_guard lock(mu_);
  if (waiters_.empty() && fits(need, limits)) {
    add(need);
    return 0;
  }
  const Ticket t = next_ticket_++;
  waiters_.push_back(Waiter{t, need, limits, std::move(on_admitted)});
  return t;
}

void DumpBudget::force_reserve(const DumpNeed& need) {
  std::lock_guard lock(mu_);
  add(need);
}

bool DumpBudget::fits_now(const DumpNeed& need, const DumpBudgetLimits& limits) const {
  std::lock_guard lock(mu_);
  return waiters_.empty() && fits(need, limits);
}

bool DumpBudget::withdraw(Ticket ticket) {
  std::unique_lock lock(mu_);
  const auto it = std::find_if(waiters_.begin(), waiters_.end(), [ticket](const Waiter& w) { return w.ticket == ticket; });
  if (it == waiters_.end()) return false;
  const bool was_head = it == waiters_.begin();
  waiters_.erase(it);
  // A large waiter at the head may have held back smaller ones that fit.
  if (was_head) admit_waiters(lock);
  return true;
}

void DumpBudget::release(const DumpNeed& need) {
  std::unique_lock lock(mu_);
  --used_.dumps;
  used_.memory_bytes -= std::min(need.memory_bytes, used_.memory_bytes);
  used_.disk_bytes -= std::min(need.disk_bytes, used_.disk_bytes);
  admit_waiters(lock);
}

void DumpBudget::release_memory(std::uint64_t bytes) {
  std::unique_lock lock(mu_);
  used_.memory_bytes -= std::min(bytes, used_.memory_bytes);
  admit_waiters(lock);
}

void DumpBudget::admit_waiters(std::unique_lock<std::mutex>& lock) {
  std::vector<Admitted> admitted;
  while (!waiters_.empty() && fits(waiters_.front().need, waiters_.front().limits)) {
    add(waiters_.front().need);
    admitted.push_back(std::move(waiters_.front().on_admitted));
    waiters_.pop_front();
  }
  lock.unlock();
  for (auto& f : admitted)
    if (f) f();
}

DumpBudgetUsage DumpBudget::usage() const {
  std::lock_guard lock(mu_);
  DumpBudgetUsage u = used_;
  u.waiting = waiters_.size();
  return u;
}

DumpReservation& DumpReservation::operator=(DumpReservation&& o) noexcept {
  if (this != &o) {
    reset();
    budget_ = std::exchange(o.budget_, nullptr);
    need_ = o.need_;
  }
  return *this;
}

void DumpReservation::release_memory() {
  if (!budget_ || need_.memory_bytes == 0) return;
  budget_->release_memory(std::exchange(need_.memory_bytes, 0));
}

void DumpReservation::reset() {
  if (budget_) std::exchange(budget_, nullptr)->release(need_);
}

}  // namespace coredumpd
