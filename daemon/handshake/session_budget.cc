// Admission of a session's dump by the budget of the dumps in flight (daemon/dump/dump_budget.h):
// a KERNEL-mode ack waits for room, in turn, while the task stays frozen; near the handshake
// deadline the crash gets overload_action instead, with the reason in its record.
#include <boost/asio/post.hpp>

#include <spdlog/spdlog.h>

#include "daemon/dump/spool.h"
#include "daemon/handshake/session.h"
#include "daemon/report/log_limiter.h"
#include "store/record_extras.h"
#include "util/time.h"

namespace coredumpd {

namespace asio = boost::asio;

namespace {

constexpr std::uint64_t kMiB = 1 << 20;

// The spool's blocks and its read buffer (spool.h), held from admission to the end of the dump.
constexpr std::uint64_t kDumpMemoryBytes = Spool::kArenaBytes + Spool::kBlockBytes;

}  // namespace

DumpBudgetLimits budget_limits(const Config& config) {
  return {config.dump_memory_budget, config.dump_disk_budget, config.max_concurrent_dumps};
}

DumpNeed Session::dump_need() const {
  std::uint64_t disk = facts_.estimated_core_bytes.value_or(0);
  if (policy_.max_core_bytes) disk = std::min(disk, *policy_.max_core_bytes);  // spooling stops there
  return clamp_need({kDumpMemoryBytes, disk}, budget_limits(*config_));
}

bool Session::reserve_or_wait(const protocol::Wants& wants, const std::string& why) {
  if (reservation_.held()) return true;  // a second pass through send_ack() (forward fallback)
  const DumpNeed need = dump_need();
  if (receiver_) {
    // maybe_forward() found room a moment ago and the receiver is waiting on our ack too.
    ctx_.budget.force_reserve(need);
    reservation_ = DumpReservation(ctx_.budget, need);
    return true;
  }
  const auto limits = budget_limits(*config_);
  const auto wait_until = accepted_at_ + config_->handshake_timeout * 9 / 10;  // a tenth left to ack
  if (ctx_.budget.fits_now(need, limits) || Clock::now() < wait_until) {
    budget_ticket_ = ctx_.budget.reserve_or_wait(need, limits, [self = shared_from_this()] {
      asio::post(self->ctx_.io, [self] { self->on_budget_admitted(); });
    });
    if (budget_ticket_ == 0) {
      reservation_ = DumpReservation(ctx_.budget, need);
      return true;
    }
  }
  pending_wants_ = wants;
  pending_why_ = why;
  state_ = State::WaitingForBudget;
  record_.extra[extras::kHandshakeStepsUs]["budget_wait"] = us_since(accepted_at_);
  if (budget_ticket_ == 0) {  // no time left to wait at all
    budget_deadline();
    return false;
  }
  deadline_.expires_at(wait_until);  // cancels the handshake deadline's wait; this one replaces it
  deadline_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (!ec) self->on_deadline();
  });
  return false;
}

void Session::on_budget_admitted() {
  if (state_ != State::WaitingForBudget) return;  // budget_deadline() took the admission over
  budget_ticket_ = 0;
  reservation_ = DumpReservation(ctx_.budget, dump_need());
  record_.extra[extras::kHandshakeStepsUs]["budget_admitted"] = us_since(accepted_at_);
  // The wait's timer (9/10 of the deadline) must not overtake the ack's write: a fresh bound for
  // it, as read_marker() sets for the marker (else the crash ended without a record).
  deadline_.expires_after(config_->handshake_timeout);
  deadline_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (!ec) self->on_deadline();
  });
  ack_with(pending_wants_, pending_why_);
}

void Session::budget_deadline() {
  if (state_ != State::WaitingForBudget) return;
  if (budget_ticket_ != 0 && !ctx_.budget.withdraw(budget_ticket_)) {
    // Admitted just now: its on_budget_admitted() is on its way to the io thread; go on here.
    return on_budget_admitted();
  }
  budget_ticket_ = 0;
  ctx_.stats.count(Outcome::Overloaded);
  const auto u = ctx_.budget.usage();
  const auto need = dump_need();
  protocol::Wants wants = pending_wants_;
  wants.mode = config_->overload_action == Action::Reject ? protocol::Mode::Reject : protocol::Mode::Userspace;
  wants.wait = false;
  std::string why = fmt::format(
      "overload: no room for this dump within the handshake deadline ({} dumps in flight of max_concurrent_dumps {}; "
      "memory {} of dump_memory_budget {} MiB; disk {} of dump_disk_budget {} MiB; this dump needs {} MiB and {} MiB; "
      "{} more waiting)",
      u.dumps, config_->max_concurrent_dumps, u.memory_bytes / kMiB, config_->dump_memory_budget / kMiB,
      u.disk_bytes / kMiB, config_->dump_disk_budget / kMiB, need.memory_bytes / kMiB, need.disk_bytes / kMiB,
      u.waiting);
  // One line per crash at most through the limiter (end() logs it); a flood gets one summary per window.
  quiet_ = quiet_ || !log_limiter().allow("overload");
  ack_with(wants, std::move(why));
}

}  // namespace coredumpd
