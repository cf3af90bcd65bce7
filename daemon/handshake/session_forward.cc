// The forwarding steps of a session (action "forward", daemon/forward/forward.h): the receiver's
// socket inside the crash's container, its handshake, and the fallback to the host's own store.
#include <boost/asio/post.hpp>

#include <spdlog/spdlog.h>

#include "daemon/handshake/session.h"
#include "daemon/report/log_limiter.h"
#include "daemon/report/logging.h"
#include "protocol/marker.h"
#include "protocol/relay.h"
#include "store/record_extras.h"

namespace coredumpd {

namespace asio = boost::asio;

void Session::maybe_forward() {
  if (policy_.action != Action::Forward) return send_ack();
  record_.extra[extras::kForward] = {{"socket", policy_.forward_socket}};
  std::string why;
  if (wants_for(policy_, facts_, why).mode != protocol::Mode::Kernel) {
    // RLIMIT_CORE or max_core_bytes say no core: nothing to forward; the record says why.
    record_.extra[extras::kForward]["skipped"] = why;
    return send_ack();
  }
  // No room now: the crash waits for the budget in send_ack(), without a receiver waiting too.
  if (!ctx_.budget.fits_now(dump_need(), budget_limits(*config_))) return send_ack();
  state_ = State::Forwarding;
  // Resolving a path inside the container's file system may block: not on the io thread.
  const int pidfd = peer_.pidfd.get();  // owned by peer_, which lives as long as `self`
  const auto pid = static_cast<pid_t>(record_.pid);
  ctx_.collectors.post([self = shared_from_this(), pidfd, pid, path = policy_.forward_socket] {
    std::string error;
    UniqueFd fd = open_forward_socket(pidfd, pid, path, error);
    asio::post(self->ctx_.io, [self, fd = std::make_shared<UniqueFd>(std::move(fd)), error] {
      self->on_forward_socket(std::move(*fd), error);
    });
  });
}

void Session::on_forward_socket(UniqueFd fd, const std::string& error) {
  if (state_ != State::Forwarding) return;  // the deadline overtook us
  if (!fd) {
    forward_failed(error);
    return send_ack();
  }
  // What is left of the handshake budget, keeping a tenth of it for our own ack.
  const auto deadline = accepted_at_ + config_->handshake_timeout * 9 / 10;
  ReceiverHandshake::start(ctx_.io, std::move(fd), protocol::receiver_request(req_, config_->close_files_bit),
                           config_->close_files_bit, deadline,
                           [self = shared_from_this()](std::optional<ReceiverLink> link, std::string why) {
                             self->on_receiver(std::move(link), why);
                           });
}

void Session::on_receiver(std::optional<ReceiverLink> link, const std::string& error) {
  if (state_ != State::Forwarding) return;  // acked without it: dropping `link` hangs up on the receiver
  if (!link) {
    forward_failed(error);
    return send_ack();
  }
  if (link->ack.mask & protocol::COREDUMP_REJECT) {
    // The kernel's answer to a valid REJECT is REQACK and a hang-up; the crash is still ours to keep.
    send_marker(link->socket.get(), static_cast<std::uint32_t>(protocol::Marker::REQACK));
    forward_failed("the receiver answered REJECT");
    return send_ack();
  }
  record_.extra[extras::kForward]["receiver_ack"] = {{"size", link->ack.size}, {"mask", link->ack.mask},
                                              {"memory_types", link->ack.memory_types}};
  receiver_ = std::move(link);
  send_ack();
}

void Session::forward_failed(const std::string& why) {
  ctx_.stats.count(Outcome::ForwardFallback);
  record_.extra[extras::kForward]["outcome"] = "fallback";
  record_.extra[extras::kForward]["error"] = why;
  if (log_limiter().allow("forward failed"))
    spdlog::warn("pid {} ({}): forwarding to {} failed: {}; the host handles the crash", record_.pid, record_.id,
                 escape_for_log(policy_.forward_socket), escape_for_log(why));
}

}  // namespace coredumpd
