#include "daemon/handshake/session.h"

#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <fcntl.h>

#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/asio/post.hpp>

#include <cinttypes>
#include <cstdio>
#include <optional>

#include <spdlog/spdlog.h>

#include "daemon/dump/dump_job.h"
#include "daemon/report/log_limiter.h"
#include "daemon/report/logging.h"
#include "daemon/proc/partial_facts.h"
#include "daemon/proc/proc_dir.h"
#include "protocol/marker.h"
#include "protocol/relay.h"
#include "protocol/request.h"
#include "store/record_extras.h"
#include "util/time.h"

namespace coredumpd {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

// A dump id: the crash time in microseconds (so ids sort by time) and 64 random bits, as 32 hex chars.
std::string make_dump_id(std::int64_t timestamp_us) {
  std::uint64_t rnd = 0;
  if (::getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd)) rnd = static_cast<std::uint64_t>(::random());
  char buf[33];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64 "%016" PRIx64, static_cast<std::uint64_t>(timestamp_us), rnd);
  return buf;
}

}  // namespace

Session::Session(ServerContext& ctx, Socket socket, std::int64_t accepted_us)
    : ctx_(ctx), config_(ctx.config()), socket_(std::move(socket)), deadline_(ctx.io),
      accepted_at_(Clock::now()) {
  ++ctx_.in_flight;
  record_.id = make_dump_id(accepted_us);
  record_.timestamp_us = accepted_us;
  record_.boot_id = ctx_.boot_id;
}

Session::~Session() { --ctx_.in_flight; }

void Session::start() {
  peer_ = identify_peer(socket_.native_handle());
  record_.pid = peer_.cred_pid;
  record_.euid = peer_.cred_uid;
  record_.egid = peer_.cred_gid;
  if (peer_.info) {
    const auto& i = *peer_.info;
    record_.pid = i.tgid;
    record_.uid = i.ruid, record_.gid = i.rgid, record_.euid = i.euid, record_.egid = i.egid;
    record_.coredump_mask = i.coredump_mask;
    // A later query path for unprivileged users may show a dump to its owner only if the kernel
    // dumped it as that user (PIDFD_COREDUMP_USER), never a setuid/secure-exec one (ROOT).
    record_.extra[extras::kOwnerMayRead] =
        (i.coredump_mask & PIDFD_COREDUMP_USER) != 0 && (i.coredump_mask & PIDFD_COREDUMP_ROOT) == 0;
    record_.extra[extras::kCgroupId] = i.cgroupid;
    const CoredumpSignal sig = decode_coredump_signal(i);
    record_.signal = sig.signal;
    if (!sig.signal) record_.extra[extras::kSignalUnavailable] = sig.absent;
    // For a record without a core this is the only si_code; a core's NT_SIGINFO restates it.
    const CoredumpCode code = decode_coredump_code(i);
    if (code.code) record_.extra[extras::kSiCode] = *code.code;
    else record_.extra[extras::kSiCodeUnavailable] = code.absent;
  } else {
    record_.extra[extras::kSignalUnavailable] = "no pidfd information: " + peer_.error;
    record_.extra[extras::kSiCodeUnavailable] = "no pidfd information: " + peer_.error;
  }

  if (!peer_.is_crashing_task()) {
    if (config_->accept_forwarded && peer_.is_outside_our_pid_namespace()) {
      // Only a process outside our pid namespace (the host, when we run in a container) shows as
      // pid 0; accept_forwarded says such a peer is a forwarding coredumpd (daemon/forward/forward.h).
      forwarded_peer_ = true;
      ctx_.stats.count(Outcome::ForwardedIn);
      record_.extra[extras::kForwardedFromHost] = {{"peer_uid", peer_.cred_uid}, {"peer_gid", peer_.cred_gid}};
      spdlog::info("{}: accepting a crash forwarded by a process outside our pid namespace (uid {})", record_.id,
                   peer_.cred_uid);
    } else if (!config_->allow_unverified_peers) {
      quiet_ = !log_limiter().allow("impostor");
      const std::string why = peer_.info ? "coredump_mask " + std::to_string(peer_.info->coredump_mask) +
                                               " lacks PIDFD_COREDUMPED"
                                         : peer_.error;
      return end(Outcome::Impostor, "refused peer pid " + std::to_string(peer_.cred_pid) + " uid " +
                   std::to_string(peer_.cred_uid) + ": not a crashing task (" + why + ")");
    } else {
      record_.extra[extras::kUnverifiedPeer] = true;
    }
  }

  deadline_.expires_after(config_->handshake_timeout);
  deadline_.async_wait([self = shared_from_this()](error_code ec) {
    if (!ec) self->on_deadline();
  });
  read_request_size();
}

// The kernel queues the whole request before accept() returns (docs/PROTOCOL.md §4.1), so these reads complete
// at once for a real kernel; a slow or silent peer is bounded by the handshake deadline.
void Session::read_request_size() {
  asio::async_read(socket_, asio::buffer(req_buf_.data(), 4), [self = shared_from_this()](error_code ec, std::size_t) {
    if (self->state_ != State::ReadingRequest) return;
    if (ec) return self->end(Outcome::BadRequest, "no coredump_req: " + ec.message());
    std::string error;
    const auto size = protocol::peek_size_field(std::span<const std::byte, 4>(self->req_buf_.data(), 4));
    const auto layout = protocol::plan_request_read(size, error);
    if (!layout) return self->end(Outcome::BadRequest, "malformed request: " + error);
    self->read_request_body(layout->known, layout->discard);
  });
}

void Session::read_request_body(std::uint32_t known, std::uint32_t discard) {
  asio::async_read(socket_, asio::buffer(req_buf_.data() + 4, known - 4),
                   [self = shared_from_this(), known, discard](error_code ec, std::size_t) {
                     if (self->state_ != State::ReadingRequest) return;
                     if (ec) return self->end(Outcome::BadRequest, "truncated coredump_req: " + ec.message());
                     self->req_ = protocol::decode_request(std::span(self->req_buf_.data(), known));
                     self->discard_request_tail(discard);
                   });
}

// A newer kernel's request may be longer than what this build knows: read and drop the rest.
void Session::discard_request_tail(std::uint32_t discard) {
  if (discard == 0) return on_request();
  const auto chunk = std::min<std::size_t>(discard, discard_buf_.size());
  asio::async_read(socket_, asio::buffer(discard_buf_.data(), chunk),
                   [self = shared_from_this(), discard, chunk](error_code ec, std::size_t) {
                     if (self->state_ != State::ReadingRequest) return;
                     if (ec) return self->end(Outcome::HungUp, "truncated coredump_req tail: " + ec.message());
                     self->discard_request_tail(discard - static_cast<std::uint32_t>(chunk));
                   });
}

void Session::on_request() {
  record_.extra[extras::kHandshakeStepsUs]["request"] = us_since(accepted_at_);
  record_.extra[extras::kRequest] = {{"size", req_.size}, {"size_ack", req_.size_ack}, {"mask", req_.mask},
                              {"memory_types", req_.memory_types}, {"memory_types_mask", req_.memory_types_mask}};
  collect();
}

namespace {

// Collector threads run ahead of the dump streams (nice 0) and compressors (nice 10): while they
// read /proc a task is frozen waiting for its ack, so in a flood the handshakes must win the CPU.
// Needs CAP_SYS_NICE; without it (a unit that drops it) the thread stays at nice 0.
void raise_priority_once() {
  thread_local bool done = false;
  if (!done) {
    ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), kHandshakeNice);
    done = true;
  }
}

}  // namespace

// Reading /proc blocks (briefly), so it runs on the collector pool; the deadline may overtake it.
// The collectors publish into partial_ as each finishes, so the deadline acks with what they found.
void Session::collect() {
  state_ = State::Collecting;
  if (forwarded_peer_) {  // the crashing process is not visible from here: the core is all we get
    HandshakeFacts facts;
    facts.errors["proc"] = "forwarded crash: the process is outside this pid namespace";
    return on_collected(std::move(facts));
  }
  CollectLimits limits;
  limits.deadline = accepted_at_ + config_->handshake_timeout * 8 / 10;  // leave room to ack
  limits.per_collector = config_->collector_budget;
  limits.test_delay = config_->test_collector_delay;
  limits.test_delay_collector = config_->test_collector_delay_in;
  limits.stop = ctx_.stopping.get_token();
  // The job's own pidfd: a stalled collector may outlive the handshake, and the session's pidfd
  // goes to the dump job (which closes it) once the kernel is acked.
  auto pidfd = std::make_shared<UniqueFd>(::fcntl(peer_.pidfd.get(), F_DUPFD_CLOEXEC, 0));
  const auto pid = static_cast<pid_t>(record_.pid);
  partial_ = std::make_shared<PartialFacts>();
  ctx_.collectors.post([self = shared_from_this(), partial = partial_, limits, pidfd, pid] {
    // Where a slow handshake spent its time: waiting for a collector thread, reading /proc, or
    // waiting for the io thread again (handshake_steps_us, microseconds since accept).
    const auto collect_start = us_since(self->accepted_at_);
    raise_priority_once();
    std::string error;
    if (Clock::now() >= limits.deadline) {
      partial->note_error("proc", "collection started after the handshake deadline");
    } else if (auto proc = ProcDir::open(pidfd->get(), pid, error)) {
      collect_handshake_facts(*proc, limits, *partial);
    } else {
      partial->note_error("proc", error);
    }
    const auto collect_end = us_since(self->accepted_at_);
    asio::post(self->ctx_.io, [self, partial, collect_start, collect_end]() mutable {
      if (self->state_ != State::Collecting) return;
      auto& steps = self->record_.extra[extras::kHandshakeStepsUs];
      steps["collect_start"] = collect_start;
      steps["collect_end"] = collect_end;
      steps["collected"] = us_since(self->accepted_at_);
      self->on_collected(partial->take("skipped: handshake deadline"));
    });
  });
}

void Session::on_collected(HandshakeFacts facts) {
  if (state_ != State::Collecting) return;  // the deadline already sent the ack without them
  facts_ = std::move(facts);
  if (!facts_.missed.empty()) note_metadata_incomplete("collectors skipped at the handshake deadline");
  decide();
  maybe_forward();
}

void Session::note_metadata_incomplete(const std::string& why) {
  record_.extra[extras::kMetadataIncomplete] = {{"missed", facts_.missed}, {"reason", why}};
  if (!quiet_ && log_limiter().allow("metadata incomplete")) {
    std::string missed;
    for (const auto& name : facts_.missed) missed += (missed.empty() ? "" : ", ") + name;
    spdlog::warn("pid {} ({}): metadata incomplete after {} ms ({}); missed: {}; comm, cmdline, exe and "
                 "mapped files will be taken from the core's notes if it has them",
                 record_.pid, record_.id, us_since(accepted_at_) / 1000, why, missed);
  }
}

void Session::send_ack() {
  state_ = State::SendingAck;
  // The ack is ready now: a fresh bound for writing it, so a collection that returns just as the
  // first deadline expires is not cut off mid-write (and the crash lost) by that deadline.
  deadline_.expires_after(config_->handshake_timeout);
  deadline_.async_wait([self = shared_from_this()](error_code ec) {
    if (!ec) self->on_deadline();
  });
  std::string why;
  protocol::Wants wants = wants_for(policy_, facts_, why);
  if (forwarded_peer_) wants.wait = false;  // nothing to collect from a task we cannot see
  if (receiver_) {
    wants = protocol::wants_matching_ack(receiver_->ack, config_->close_files_bit);
    why.clear();
  } else if (wants.mode == protocol::Mode::Kernel) {
    apply_rate_limit(wants, why, rule_, container_key_);
    if (wants.mode == protocol::Mode::Kernel) refuse_core_if_unable(wants, why);
  }
  if (wants.mode == protocol::Mode::Kernel && !reserve_or_wait(wants, why)) return;  // ack_with() once admitted
  ack_with(wants, std::move(why));
}

void Session::ack_with(protocol::Wants wants, std::string why) {
  state_ = State::SendingAck;
  if (!why.empty()) record_.reason = why;
  std::string error;
  auto negotiation = protocol::negotiate(req_, wants, config_->close_files_bit, error);
  if (!negotiation) return end(Outcome::BadRequest, "cannot build an ack: " + error);
  negotiation_ = *negotiation;
  if (receiver_ && !protocol::same_stream(negotiation_.ack, receiver_->ack, config_->close_files_bit)) {
    // Cannot happen for an ack the kernel's rules accepted; never relay a stream it did not ask for.
    receiver_.reset();
    forward_failed("the receiver's choices cannot be acked to the kernel");
    return send_ack();
  }
  if (negotiation_.unknown) {
    // Logged once per distinct set: a newer kernel offers them on every crash.
    static std::atomic<std::uint64_t> logged{0};
    if (logged.exchange(negotiation_.unknown) != negotiation_.unknown)
      spdlog::info("kernel offers unknown coredump mask bits {:#x}; ignored", negotiation_.unknown);
  }

  // Self-check: never send an ack the kernel's own validation would refuse.
  const auto wire = protocol::ack_bytes(negotiation_.ack);
  if (protocol::kernel_ack_verdict(req_, wire, config_->close_files_bit) != protocol::Marker::REQACK)
    return end(Outcome::BadRequest, "internal error: built an ack the kernel would refuse");
  record_.extra[extras::kHandshakeUs] = us_since(accepted_at_);
  record_.extra[extras::kNegotiation] = {
      {"offered", negotiation_.offered},
      {"acked", negotiation_.ack.mask},
      {"mode", protocol::mode_name(negotiation_.mode)},
      {"wait", protocol::flag_outcome_name(negotiation_.wait)},
      {"records", protocol::flag_outcome_name(negotiation_.records)},
      {"sparse", protocol::flag_outcome_name(negotiation_.sparse)},
      {"close_files", protocol::flag_outcome_name(negotiation_.close_files)},
      {"memory_types", protocol::flag_outcome_name(negotiation_.memory_types)},
  };
  asio::async_write(socket_, asio::buffer(wire.data(), wire.size()), [self = shared_from_this()](error_code ec, std::size_t) {
    if (self->state_ != State::SendingAck) return;
    if (ec) return self->end(Outcome::HungUp, "sending coredump_ack: " + ec.message());
    self->read_marker();
  });
}


void Session::read_marker() {
  state_ = State::ReadingMarker;
  // The kernel answers at once; a fresh bound covers a peer that never does.
  deadline_.expires_after(config_->handshake_timeout);
  deadline_.async_wait([self = shared_from_this()](error_code ec) {
    if (!ec) self->on_deadline();
  });
  asio::async_read(socket_, asio::buffer(marker_buf_), [self = shared_from_this()](error_code ec, std::size_t) {
    if (self->state_ != State::ReadingMarker) return;
    if (ec) return self->end(Outcome::RefusedByKernel, "no marker after the ack: " + ec.message());
    self->on_marker();
  });
}

void Session::on_marker() {
  state_ = State::Done;
  deadline_.cancel();
  std::uint32_t raw = 0;
  std::memcpy(&raw, marker_buf_.data(), sizeof(raw));
  const auto marker = protocol::interpret_marker(raw);
  if (receiver_ && !send_marker(receiver_->socket.get(), raw)) {  // the kernel's answer, passed on
    receiver_.reset();
    forward_failed("the receiver hung up before the marker");
  }
  if (!marker.accepted)
    return end(Outcome::RefusedByKernel,
               std::string("kernel marker ") + std::string(marker.name) + ": " + marker.reason);

  switch (negotiation_.mode) {
    case protocol::Mode::Reject:
      return end(Outcome::Rejected, "dump rejected (" + record_.reason + ")");
    case protocol::Mode::Userspace:
      if (receiver_) {  // the receiver chose USERSPACE: it has what it asked for (no bytes)
        ::shutdown(receiver_->socket.get(), SHUT_WR);
        receiver_.reset();
        record_.extra[extras::kForward]["outcome"] = "delivered";
        return end(Outcome::Forwarded, "forwarded (userspace mode) to " + policy_.forward_socket);
      }
      return end(Outcome::MetadataOnly, "metadata-only record (" + record_.reason + ")");
    case protocol::Mode::Kernel:
      return hand_off_dump();
  }
}

void Session::hand_off_dump() {
  ++ctx_.dumps_in_flight;
  // The budget share is held until the dump is indexed (the done callback); std::function copies.
  auto share = std::make_shared<DumpReservation>(std::move(reservation_));
  DumpJob job{UniqueFd(socket_.release()), std::move(peer_.pidfd), std::move(record_), std::move(facts_),
              negotiation_, policy_, config_, shared_from_this(),
              receiver_ ? std::move(receiver_->socket) : UniqueFd(),
              // The memory share goes when the stream has ended; disk and count when the dump is indexed.
              [share] { share->release_memory(); }};
  job.to_fallback = to_fallback_;
  receiver_.reset();
  asio::post(ctx_.dumps, [&ctx = ctx_, job = std::move(job), share]() mutable {
    run_dump_job(ctx, std::move(job), [&ctx, share] {
      share->reset();
      --ctx.dumps_in_flight;
    });
  });
}

}  // namespace coredumpd
