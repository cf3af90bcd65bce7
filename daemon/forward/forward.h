// Forwarding a crash to a coredump server inside the crashing process's container (Action::Forward).
//
// The host coredumpd plays the kernel towards that receiver, with the same @@ protocol
// (docs/PROTOCOL.md §4–§6, §10):
//
//   1. open_forward_socket(): the rule's forward_socket is resolved inside /proc/<pid>/root (the
//      container's root), opened only after the pidfd proved /proc/<pid> is the crashing process,
//      with openat2(RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS): no symlink
//      anywhere in the path is followed (the kernel itself refuses them for core_pattern, docs/PROTOCOL.md §2.3),
//      so nothing planted in the container can point the host elsewhere. The O_PATH descriptor is
//      then connected to through /proc/self/fd/<n>, which names exactly that inode.
//   2. ReceiverHandshake: send the receiver a coredump_req with what the kernel offered
//      (protocol/relay.h), read its ack and judge it with the kernel's own rules
//      (kernel_size_verdict, kernel_ack_verdict) — all within what is left of the handshake
//      deadline, because the crashing task is frozen meanwhile. A refused ack gets its marker and
//      a hang-up, exactly as the kernel would do.
//   3. The session acks the kernel with the same mode and stream flags, and passes the kernel's
//      marker on to the receiver.
//   4. Relay (in the dump job): every byte the kernel streams goes to the receiver unchanged, and
//      is also spooled on the host. Delivered (whole stream written, receiver hung up cleanly):
//      the host keeps a "forwarded" record without a core. Otherwise the host stores the spooled
//      core itself and records why the forward failed.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "util/unique_fd.h"
#include "protocol/wire.h"

namespace coredumpd {

/// Opens `path` (absolute, as seen inside the crashing process's root) as an O_PATH descriptor of a
/// socket inode. `pidfd` and `pid` (our pid namespace) name the crashing process; its root is
/// /proc/<pid>/root, used only after pidfd_alive() proved the /proc entry is still that process.
/// Returns an empty UniqueFd and sets `error` (naming the path and errno's text) if the path does
/// not exist, crosses a symlink, is not a socket, or the process is gone.
UniqueFd open_forward_socket(int pidfd, pid_t pid, const std::string& path, std::string& error);

/// A receiver that accepted the forwarder's request: the connected socket and its (valid) ack.
struct ReceiverLink {
  UniqueFd socket;                 ///< connected; the REQACK marker is still to be sent
  protocol::coredump_req request;  ///< what the receiver was offered
  protocol::coredump_ack ack{};    ///< its ack, accepted by kernel_ack_verdict(request, ...)
};

/// The forwarder's handshake with a receiver, asynchronous on `io` (never blocks it). Connects to
/// `socket_path_fd` (from open_forward_socket), sends `request`, reads and validates the ack, and
/// calls `done` once: with a ReceiverLink, or with std::nullopt and a reason. Anything not done by
/// `deadline` is abandoned (socket closed; the receiver sees a hang-up). A refused ack is answered
/// with its marker before the hang-up, as the kernel does.
class ReceiverHandshake {
 public:
  using Done = std::function<void(std::optional<ReceiverLink>, std::string error)>;
  static void start(boost::asio::io_context& io, UniqueFd socket_path_fd, const protocol::coredump_req& request,
                    std::uint64_t close_files_bit, std::chrono::steady_clock::time_point deadline, Done done);
};

/// Sends one 4-byte marker to a receiver (non-blocking: its socket buffer is empty at this point).
/// Returns false if it could not be sent whole.
bool send_marker(int socket, std::uint32_t marker);

/// The host's copy of a KERNEL-mode stream towards the receiver, used by the dump job's drain
/// (blocking; on the dump pool). Once a write fails or stalls, the relay is dead for the rest of
/// the dump and error() says why; the drain goes on regardless (the host spools everything).
class Relay {
 public:
  /// Takes the connected receiver socket. `idle` bounds each wait for the receiver to take bytes.
  Relay(UniqueFd socket, std::chrono::milliseconds idle);

  /// Writes `bytes` (the kernel's stream, verbatim). No-op once dead.
  void send(std::span<const std::byte> bytes);
  /// The stream ended complete: half-closes, then waits up to `timeout` for the receiver to hang
  /// up (it does once it drained the stream). Returns true if the dump was delivered.
  bool finish(std::chrono::milliseconds timeout);
  /// Gives up (the kernel's stream was incomplete): closes the socket; the receiver sees the cut.
  void abandon(const std::string& why);

  bool alive() const { return socket_.get() >= 0 && error_.empty(); }
  const std::string& error() const { return error_; }
  std::uint64_t bytes_sent() const { return sent_; }

 private:
  void fail(const std::string& why);

  UniqueFd socket_;
  std::chrono::milliseconds idle_;
  std::string error_;
  std::uint64_t sent_ = 0;
};

}  // namespace coredumpd
