// One connection from the kernel, from accept to the hand-off of the core stream.
//
// The handshake is an explicit state machine on the io_context (never blocking it):
//
//   ReadingRequest --request read--> Collecting --facts in, or deadline--> SendingAck
//        --ack written--> ReadingMarker --REQACK--> (KERNEL) DumpJob on the dump pool
//                                                   (USERSPACE/REJECT) record, close
//
// With policy action "forward" (daemon/forward/forward.h) a Forwarding step sits between Collecting and
// SendingAck: the receiver in the task's container is handshaken first (within the same deadline),
// the kernel is then acked with the receiver's choices, and the kernel's marker is passed on to the
// receiver. A receiver that is absent, refuses or is too slow makes the session ack for the host's
// own store instead (the fallback), with the reason in the record's extra.forward.
//
// Any error, timeout or refusal ends the session through end(): with an Outcome (daemon/report/
// outcome.h) that is counted, and a reason that is logged and recorded where a record exists; the
// socket is closed (which is what releases a parked task).
// A session keeps itself alive through its pending handlers (shared_from_this).
#pragma once

#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "daemon/proc/collect.h"
#include "daemon/forward/forward.h"
#include "daemon/proc/peer.h"
#include "daemon/policy/policy.h"
#include "daemon/report/outcome.h"
#include "daemon/handshake/server_context.h"
#include "store/dump_record.h"
#include "protocol/negotiate.h"
#include "protocol/wire.h"

namespace coredumpd {

/// Nice value of the threads that run handshakes (the io_context thread and the collectors): below
/// the dump streams (0) and compressors (10), since a task stays frozen until its ack.
inline constexpr int kHandshakeNice = -5;

/// The bounds of the dumps in flight that `config` sets (dump_memory_budget, dump_disk_budget,
/// max_concurrent_dumps).
DumpBudgetLimits budget_limits(const Config& config);

/// The handshake of one accepted connection. Create with std::make_shared and call start().
class Session : public std::enable_shared_from_this<Session> {
 public:
  using Socket = boost::asio::local::stream_protocol::socket;
  using Clock = std::chrono::steady_clock;

  /// Takes ownership of an accepted socket. `accepted_us` is the crash timestamp (UTC microseconds
  /// since the epoch) taken right after accept().
  Session(ServerContext& ctx, Socket socket, std::int64_t accepted_us);
  ~Session();

  /// Identifies the peer and starts reading the coredump_req. Call once.
  void start();

 private:
  enum class State { ReadingRequest, Collecting, Forwarding, WaitingForBudget, SendingAck, ReadingMarker, Done };

  void read_request_size();
  void read_request_body(std::uint32_t known, std::uint32_t discard);
  void discard_request_tail(std::uint32_t discard);
  void on_request();
  void collect();
  void on_collected(HandshakeFacts facts);
  /// Some collectors missed (facts_.missed): records extra.metadata_incomplete {missed, reason}
  /// and logs it (rate-limited) with the pid and the missed collectors.
  void note_metadata_incomplete(const std::string& why);
  /// Identifies the container and chooses the policy from the collected facts.
  void decide();
  /// Action::Forward: resolves the receiver's socket (collector pool) and starts its handshake;
  /// otherwise goes straight to send_ack().
  void maybe_forward();
  void on_forward_socket(UniqueFd fd, const std::string& error);
  void on_receiver(std::optional<ReceiverLink> link, const std::string& error);
  /// Forwarding is off for this crash: logs and records `why`; the host handles the crash itself.
  void forward_failed(const std::string& why);
  void send_ack();
  /// Sends the ack for `wants` (after the budget admitted a KERNEL-mode dump, or for any other mode).
  void ack_with(protocol::Wants wants, std::string why);
  /// What this crash's dump would hold in flight (memory, estimated core), cut to the limits.
  DumpNeed dump_need() const;
  /// A KERNEL-mode dump reserves its share of ctx_.budget (dump_budget.h) before the ack. True:
  /// reserved, ack now. False: waiting (State::WaitingForBudget) until on_budget_admitted() or,
  /// near the handshake deadline, budget_deadline(), which ack with the saved wants.
  bool reserve_or_wait(const protocol::Wants& wants, const std::string& why);
  void on_budget_admitted();
  /// No room freed up in time: the crash gets overload_action, with the reason in the record.
  void budget_deadline();
  void refuse_core_if_unable(protocol::Wants& wants, std::string& why);
  /// Turns a store into metadata-only when the rule's rate limit (policy_.rate_limit) is exceeded
  /// for (rule, container, exe); records the reason and counts in record_.extra["rate_limited"].
  void apply_rate_limit(protocol::Wants& wants, std::string& why, const std::string& rule, const std::string& container);
  void read_marker();
  void on_marker();
  void on_deadline();
  /// Ends the session without a core stream, the one way it does: counts `outcome` (stats.h),
  /// records the crash if the kernel took our ack (RefusedByKernel as Failed with `reason`,
  /// Rejected, MetadataOnly, Forwarded), logs `reason` (at warn level unless the crash went as the
  /// policy chose) and closes the socket. A core stream instead goes to a DumpJob (hand_off_dump()),
  /// whose verdict is counted when the dump ends (daemon/dump/finalize.h).
  void end(Outcome outcome, const std::string& reason);
  /// The kernel took a KERNEL-mode ack: the socket, the pidfd and the record go to a DumpJob on
  /// the dump pool.
  void hand_off_dump();

  ServerContext& ctx_;
  std::shared_ptr<const Config> config_;
  Socket socket_;
  boost::asio::steady_timer deadline_;
  State state_ = State::ReadingRequest;
  Clock::time_point accepted_at_;

  Peer peer_;
  std::array<std::byte, sizeof(protocol::coredump_req)> req_buf_{};
  std::array<std::byte, 256> discard_buf_{};
  protocol::coredump_req req_{};
  protocol::Negotiation negotiation_;
  std::array<std::byte, protocol::MARKER_SIZE> marker_buf_{};
  HandshakeFacts facts_;
  std::shared_ptr<PartialFacts> partial_;  // what the collectors published so far (collect())
  Policy policy_;
  std::string rule_;           ///< the rule that chose policy_ ("" for the defaults)
  bool to_fallback_ = false;   ///< the store cannot take the core: it goes to ctx_.fallback
  std::string container_key_;  ///< container_key() of the crash's container ("host" outside any)
  bool quiet_ = false;  // the log limiter suppressed this session's lines (flood)
  std::optional<ReceiverLink> receiver_;  // forwarding: a receiver that accepted our request
  bool forwarded_peer_ = false;  // receiver side: the peer is a forwarder (accept_forwarded)
  DumpRecord record_;
  DumpReservation reservation_;          ///< this crash's share of ctx_.budget, once admitted
  DumpBudget::Ticket budget_ticket_ = 0;  ///< while State::WaitingForBudget
  protocol::Wants pending_wants_;        ///< the ack to send once admitted
  std::string pending_why_;
};

}  // namespace coredumpd
