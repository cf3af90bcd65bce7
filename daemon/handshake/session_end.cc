// How a session ends: the handshake deadline, by state, and end(), which counts, records (where a
// crash was acked) and logs the outcome, then closes the socket.
#include <boost/asio/post.hpp>

#include <optional>

#include <spdlog/spdlog.h>

#include "daemon/dump/dump_job.h"
#include "daemon/handshake/session.h"
#include "daemon/proc/partial_facts.h"
#include "daemon/report/logging.h"
#include "store/record_extras.h"

namespace coredumpd {

namespace asio = boost::asio;
using boost::system::error_code;

void Session::on_deadline() {
  // An expiry queued before send_ack() or read_marker() re-armed the timer cannot be cancelled any
  // more; the new deadline decides.
  if (deadline_.expiry() > Clock::now()) return;
  switch (state_) {
    case State::ReadingRequest:
      return end(Outcome::HandshakeTimeout,
                 "no complete coredump_req within " + std::to_string(config_->handshake_timeout.count()) + " ms");
    case State::Collecting:
      // The task must not stay frozen past the deadline: ack with whatever was collected.
      if (partial_) facts_ = partial_->snapshot("missed: handshake deadline");
      facts_.errors["collect"] = "handshake deadline reached; acked without the remaining metadata";
      note_metadata_incomplete("handshake deadline reached while collecting");
      ctx_.stats.count(Outcome::HandshakeTimeout);  // on the way: the crash is still acked
      decide();
      if (policy_.action == Action::Forward) {
        record_.extra[extras::kForward] = {{"socket", policy_.forward_socket}};
        forward_failed("no time left in the handshake to forward");
      }
      return send_ack();
    case State::Forwarding:
      ctx_.stats.count(Outcome::HandshakeTimeout);  // on the way: the crash is still acked
      forward_failed("the receiver did not complete the handshake within the handshake deadline");
      return send_ack();
    case State::WaitingForBudget:
      return budget_deadline();
    case State::SendingAck:
    case State::ReadingMarker:
      return end(Outcome::HandshakeTimeout, "peer did not answer the coredump_ack within " +
                                                std::to_string(config_->handshake_timeout.count()) + " ms");
    case State::Done:
      return;
  }
}

namespace {

// The record a session that ends with `outcome` leaves in the index, if any: only a crash the
// kernel was acked for and answered has one.
std::optional<DumpState> recorded_as(Outcome outcome) {
  switch (outcome) {
    case Outcome::RefusedByKernel: return DumpState::Failed;
    case Outcome::Rejected: return DumpState::Rejected;
    case Outcome::MetadataOnly: return DumpState::MetadataOnly;
    case Outcome::Forwarded: return DumpState::Forwarded;
    default: return std::nullopt;
  }
}

}  // namespace

void Session::end(Outcome outcome, const std::string& reason) {
  const State was = state_;
  state_ = State::Done;
  deadline_.cancel();
  receiver_.reset();  // a receiver mid-handshake sees a hang-up, as from a kernel that gave up
  ctx_.stats.count(outcome);
  auto recorded = recorded_as(outcome);
  // The request was read and acked but its marker never came (a storm's late kernel, a killed
  // task): the crash happened, so the index says it failed and why, as for a refused ack.
  if (!recorded && (was == State::SendingAck || was == State::ReadingMarker)) recorded = DumpState::Failed;
  if (recorded) {
    record_.state = *recorded;
    if (*recorded == DumpState::Failed) record_.reason = reason;
    // The index is written from the dump pool, never on the io thread.
    // Then the record is final (no core: nothing to analyse): on_final writes its journal entry.
    asio::post(ctx_.dumps, [&ctx = ctx_, record = record_] {
      save_record(ctx, record, false);
      if (ctx.on_final) ctx.on_final(record);
    });
  }
  const bool warn = !recorded || *recorded == DumpState::Failed;  // not as the policy chose
  if (!quiet_)
    spdlog::log(warn ? spdlog::level::warn : spdlog::level::info, "pid {} ({}): {}", record_.pid, record_.id,
                escape_for_log(reason));
  error_code ignored;
  socket_.close(ignored);
}

}  // namespace coredumpd
