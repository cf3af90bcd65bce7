// Admission of dumps by what they hold while in flight: memory (spool blocks and read buffer) and
// disk (the estimated core, spooled uncompressed until compressed), with a count as a sanity bound.
//
// A crash whose dump does not fit waits in FIFO order (the kernel keeps the task frozen until our
// ack); a dump that ends releases its share and admits the waiters that now fit, in order. A
// waiter is withdrawn when its handshake deadline nears and then gets the overload_action instead.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>

namespace coredumpd {

/// What one dump holds while in flight (bytes).
struct DumpNeed {
  std::uint64_t memory_bytes = 0;  ///< spool blocks + read buffer (Spool::kArenaBytes + a block)
  std::uint64_t disk_bytes = 0;    ///< estimated core bytes (HandshakeFacts::estimated_core_bytes)
};

/// The bounds of the dumps in flight together (config dump_memory_budget, dump_disk_budget,
/// max_concurrent_dumps).
struct DumpBudgetLimits {
  std::uint64_t memory_bytes = 0;
  std::uint64_t disk_bytes = 0;
  int dumps = 1;
};

/// What the dumps in flight hold now, and how many crashes wait.
struct DumpBudgetUsage {
  std::uint64_t memory_bytes = 0;
  std::uint64_t disk_bytes = 0;
  int dumps = 0;
  std::size_t waiting = 0;
};

/// One dump counts at most 1/kMaxDiskShareDivisor of the disk budget. The estimate is pessimistic
/// (every anonymous mapping), and a big one counted in full made every other crash wait for the
/// whole of a large dump (a process with a 4 GiB address space held the default budget alone);
/// a large core is bounded as it is written instead, by keep_free and max_core_bytes.
inline constexpr std::uint64_t kMaxDiskShareDivisor = 4;

/// `need` cut to `limits`: memory to the whole budget (a dump larger than it runs alone rather
/// than never), disk to a quarter of it (kMaxDiskShareDivisor).
DumpNeed clamp_need(DumpNeed need, const DumpBudgetLimits& limits);

/// The shared budget. Thread-safe: sessions reserve on the io thread, dumps release on the
/// compressor pool.
class DumpBudget {
 public:
  using Ticket = std::uint64_t;
  /// Called once when a waiter is admitted (its need is then reserved), on the releasing thread
  /// and outside the budget's lock: post to the io thread from it.
  using Admitted = std::function<void()>;

  /// Reserves `need` now if it fits within `limits` and nobody waits (FIFO): returns 0. Else
  /// queues the waiter and returns its ticket (never 0); `on_admitted` is called when it fits.
  /// Pass a need already cut by clamp_need().
  Ticket reserve_or_wait(const DumpNeed& need, const DumpBudgetLimits& limits, Admitted on_admitted);
  /// Reserves `need` whatever the limits (a forwarded stream whose receiver already acked).
  void force_reserve(const DumpNeed& need);
  /// True if `need` would be admitted at once now.
  bool fits_now(const DumpNeed& need, const DumpBudgetLimits& limits) const;
  /// Withdraws a waiter (its deadline nears). True if it was still waiting; false if it was
  /// admitted meanwhile (its reservation is then held, and on_admitted was or is being called).
  bool withdraw(Ticket ticket);
  /// Gives back what an admitted dump held, then admits the waiters that now fit, in order.
  void release(const DumpNeed& need);
  /// Gives back `bytes` of an admitted dump's memory share early (its stream has ended and the
  /// spool gave its blocks back), then admits the waiters that now fit; disk and count stay held.
  void release_memory(std::uint64_t bytes);

  DumpBudgetUsage usage() const;

 private:
  struct Waiter {
    Ticket ticket;
    DumpNeed need;
    DumpBudgetLimits limits;
    Admitted on_admitted;
  };
  bool fits(const DumpNeed& need, const DumpBudgetLimits& limits) const;  // mu_ held
  void add(const DumpNeed& need);                                         // mu_ held
  /// Admits waiters from the head while they fit; calls their callbacks after unlocking.
  void admit_waiters(std::unique_lock<std::mutex>& lock);

  mutable std::mutex mu_;
  DumpBudgetUsage used_;       // guarded by mu_ (waiting unused: waiters_.size())
  std::deque<Waiter> waiters_;  // guarded by mu_
  Ticket next_ticket_ = 1;      // guarded by mu_
};

/// Holds an admitted dump's share of a DumpBudget and gives it back when destroyed. Movable.
class DumpReservation {
 public:
  DumpReservation() = default;
  DumpReservation(DumpBudget& budget, const DumpNeed& need) : budget_(&budget), need_(need) {}
  DumpReservation(DumpReservation&& o) noexcept : budget_(o.budget_), need_(o.need_) { o.budget_ = nullptr; }
  DumpReservation& operator=(DumpReservation&& o) noexcept;
  DumpReservation(const DumpReservation&) = delete;
  DumpReservation& operator=(const DumpReservation&) = delete;
  ~DumpReservation() { reset(); }

  /// Gives the share back now (once).
  void reset();
  /// Gives the memory part back now (the stream has ended); the rest goes at reset().
  void release_memory();
  const DumpNeed& need() const { return need_; }
  /// A share is held (not yet reset()).
  bool held() const { return budget_ != nullptr; }

 private:
  DumpBudget* budget_ = nullptr;
  DumpNeed need_;
};

}  // namespace coredumpd
