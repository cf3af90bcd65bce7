#include "tests/fake_kernel/fake_kernel.h"

#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <span>

#include "protocol/request.h"
#include "tests/fake_kernel/deadline_io.h"
#include "tests/fake_kernel/kernel_rules.h"
#include "tests/fake_kernel/scoped_fd.h"

namespace coredumpd::fake_kernel {

namespace {

using Clock = std::chrono::steady_clock;
namespace proto = coredumpd::protocol;
namespace rules = coredumpd::fake_kernel::kernel_rules;

// The ack is read in pieces of this size, so a hostile size field costs memory only as bytes arrive.
constexpr std::size_t kAckReadPiece = 64 * 1024;

std::span<const std::byte> as_bytes_of(const std::uint32_t& v) {
  return {reinterpret_cast<const std::byte*>(&v), sizeof(v)};
}

std::string errno_text(int err) { return std::string(std::strerror(err)); }

// One crash, as an explicit sequence of steps. Each step returns false when the session is over
// (its outcome set); run() then closes the socket.
class Session {
 public:
  explicit Session(const Options& options) : o_(options), deadline_(options.timeout) {}

  Result run() {
    if (connect_socket()) {
      at(Point::Connected);
      if (o_.plain_mode) {
        plain_mode();
      } else if (send_request() && read_ack() && send_marker()) {
        act_on_ack();
      }
      close_socket();
    }
    return std::move(r_);
  }

 private:
  // ---- Steps ----

  bool connect_socket() {
    if (o_.crasher) {  // the crashing task connects: the server's peer is that process
      int err = 0;
      ScopedFd fd = o_.crasher->connect(o_.socket_path, err, std::chrono::duration_cast<std::chrono::milliseconds>(deadline_.remaining()));
      if (!fd.valid()) return fail_connect(err);
      return connected(std::move(fd));
    }
    int err = 0;
    ScopedFd fd = connect_unix(o_.socket_path, deadline_, err);
    if (!fd.valid()) return fail_connect(err);
    return connected(std::move(fd));
  }

  bool connected(ScopedFd fd) {
    fd_ = std::move(fd);
    r_.connected = true;
    stamp(r_.timeline.connected);
    return true;
  }

  bool send_request() {
    kreq_ = proto::coredump_req{o_.request_size, o_.size_ack, o_.mask, o_.memory_types,
                                o_.memory_types_mask};
    proto::coredump_req wire = kreq_;
    wire.size = o_.size_field.value_or(o_.request_size);
    r_.request.assign(o_.request_size, std::byte{0});
    std::memcpy(r_.request.data(), &wire, std::min<std::size_t>(o_.request_size, sizeof(wire)));

    std::span<const std::byte> bytes(r_.request);
    if (o_.request_split_at && *o_.request_split_at < bytes.size()) {
      const auto first = bytes.first(*o_.request_split_at);
      if (!send_request_part(first)) return false;
      if (!sleep_within(o_.request_split_delay, deadline_)) r_.timed_out = true;
      bytes = bytes.subspan(first.size());
    }
    if (!send_request_part(bytes)) return false;
    r_.request_sent = true;
    stamp(r_.timeline.request_sent);
    at(Point::RequestSent);
    return true;
  }

  bool send_request_part(std::span<const std::byte> bytes) {
    const IoResult io = send_all(fd_.get(), bytes, deadline_);
    if (io.status == IoStatus::Ok) return true;
    if (io.status == IoStatus::Timeout) return timeout("while sending the request");
    return finish(Outcome::RequestFailed, "sending the request failed: " + errno_text(io.error));
  }

  // docs/PROTOCOL.md §4.5 steps 1–3, then the verdict. Leaves verdict set when a marker must be sent.
  bool read_ack() {
    std::array<std::byte, 4> first4{};
    const IoResult peek = peek_exact(fd_.get(), first4, deadline_);
    if (peek.status == IoStatus::Timeout) return timeout("while waiting for the ack");
    if (peek.status != IoStatus::Ok) {
      r_.ack_raw.assign(first4.begin(), first4.begin() + static_cast<std::ptrdiff_t>(peek.done));
      return hung_up_before_ack(peek, "before the ack's size field");
    }
    const std::uint32_t size = proto::peek_size_field(first4);
    r_.ack_size_field = size;

    // Rule 2: decided on the peeked field alone; the ack stays unread (server then sees ECONNRESET).
    if (const auto verdict = rules::size_verdict(offer(), size)) {
      r_.ack_raw.assign(first4.begin(), first4.end());
      take_verdict(*verdict);
      stamp(r_.timeline.ack_read);
      at(Point::AckRead);
      return true;
    }

    // Rule 3: read exactly `size` bytes.
    while (r_.ack_raw.size() < size) {
      const std::size_t at_ = r_.ack_raw.size();
      r_.ack_raw.resize(at_ + std::min<std::size_t>(kAckReadPiece, size - at_));
      const IoResult io = recv_exact(fd_.get(), std::span(r_.ack_raw).subspan(at_), deadline_);
      r_.ack_raw.resize(at_ + io.done);
      if (io.status == IoStatus::Timeout) return timeout("while reading the ack");
      if (io.status != IoStatus::Ok) return hung_up_before_ack(io, "in the middle of the ack");
    }
    r_.ack_consumed = true;
    proto::coredump_ack ack{};
    std::memcpy(&ack, r_.ack_raw.data(), std::min(r_.ack_raw.size(), sizeof(ack)));
    r_.ack = ack;
    // Rules 4–7 and the extensions: the fake kernel's own table, independent of the daemon's
    // kernel_ack_verdict() (kernel_rules.h).
    take_verdict(rules::ack_verdict(offer(), r_.ack_raw));
    stamp(r_.timeline.ack_read);
    at(Point::AckRead);
    return true;
  }

  bool send_marker() {
    if (o_.force_marker) r_.verdict = static_cast<proto::Marker>(*o_.force_marker);
    const auto value = static_cast<std::uint32_t>(*r_.verdict);
    const IoResult io = send_all(fd_.get(), as_bytes_of(value), deadline_);
    if (io.status == IoStatus::Timeout) return timeout("while sending the marker");
    if (io.status != IoStatus::Ok) {
      // The kernel's coredump_sock_mark() fails the dump when the marker cannot be written.
      return finish(Outcome::MarkerFailed, "sending the marker failed: " + errno_text(io.error));
    }
    r_.marker_sent = true;
    r_.marker = value;
    stamp(r_.timeline.marker_sent);
    at(Point::MarkerSent);
    if (*r_.verdict != proto::Marker::REQACK) {
      return finish(Outcome::Refused, "kernel refused the ack with marker " + std::to_string(value) +
                                          (verdict_rule_.empty() ? "" : " (" + verdict_rule_ + ")"));
    }
    return true;
  }

  // docs/PROTOCOL.md §5 after REQACK: REJECT → close; otherwise close files, stream (KERNEL), half-close,
  // WAIT.
  void act_on_ack() {
    const proto::coredump_ack& ack = *r_.ack;
    const std::uint64_t m = ack.mask;
    const proto::Mode mode = (m & proto::COREDUMP_KERNEL)      ? proto::Mode::Kernel
                             : (m & proto::COREDUMP_USERSPACE) ? proto::Mode::Userspace
                                                               : proto::Mode::Reject;
    r_.mode = mode;
    r_.wait_acked = (m & proto::COREDUMP_WAIT) && mode != proto::Mode::Reject;
    r_.records_acked = (m & proto::COREDUMP_RECORDS) != 0;
    r_.sparse_acked = (m & proto::COREDUMP_SPARSE) != 0;
    r_.memory_types_acked = (m & proto::COREDUMP_MEMORY_TYPES) != 0;
    r_.close_files_acked = o_.close_files_bit != 0 && (m & o_.close_files_bit) != 0;
    r_.effective_memory_types = r_.memory_types_acked ? ack.memory_types : o_.memory_types;

    if (mode == proto::Mode::Reject) {
      finish(Outcome::Rejected, "");
      return;
    }
    r_.wcoredump = true;
    if (!close_files()) return;
    if (mode == proto::Mode::Kernel) {
      const CoreSource core = o_.select_core ? o_.select_core(ack) : o_.core;
      if (!stream_core(core)) return;
    }
    stamp(r_.timeline.stream_done);
    at(Point::StreamDone);
    finish_dump();
  }

  // Plain "@" mode (docs/PROTOCOL.md §9): the core right after connect, then EOF, WAIT iff configured.
  void plain_mode() {
    r_.mode = proto::Mode::Kernel;
    r_.wait_acked = o_.plain_wait;
    r_.wcoredump = true;
    r_.effective_memory_types = o_.memory_types;
    if (!stream_core(o_.core)) return;
    stamp(r_.timeline.stream_done);
    at(Point::StreamDone);
    finish_dump();
  }

  // shutdown(SHUT_WR), then the WAIT read if acked. Used after a complete or aborted stream.
  void finish_dump() {
    if (::shutdown(fd_.get(), SHUT_WR) == 0) {
      r_.shutdown_sent = true;
      stamp(r_.timeline.shutdown_sent);
    }
    at(Point::ShutdownSent);
    if (r_.wait_acked) wait_for_release();
    // A wait that only the deadline ended is no release: a real kernel would still hold the task.
    if (r_.wait_end == WaitEnd::Timeout) {
      finish(Outcome::NotReleased, "the server never hung up: still parked in WAIT after " +
                                       std::to_string(r_.parked_us / 1000) + " ms, at the " +
                                       std::to_string(o_.timeout.count()) + " ms deadline" +
                                       (r_.error.empty() ? "" : " (" + r_.error + ")"));
    } else if (r_.outcome != Outcome::StreamAborted) {
      finish(Outcome::Dumped, "");
    }
  }

  // False if the crasher's table was not closed within the deadline (the session is then over).
  bool close_files() {
    if (!r_.close_files_acked) return true;
    if (o_.crasher && !o_.crasher->close_files(std::chrono::duration_cast<std::chrono::milliseconds>(deadline_.remaining())))
      return timeout("while the crasher closed its files");
    if (o_.close_files) o_.close_files();
    r_.close_files_called = true;
    stamp(r_.timeline.files_closed);
    return true;
  }

  // Returns false if the session is over (killed, timed out, local error); a server hangup mid-stream
  // returns true with outcome StreamAborted, because the kernel still half-closes and waits.
  bool stream_core(const CoreSource& core) {
    if (r_.records_acked) return stream_records(core);
    std::vector<std::byte> chunk;
    const std::size_t piece = std::max<std::size_t>(o_.chunk_size, 1);
    for (std::uint64_t off = 0; off < core.size(); off += chunk.size()) {
      chunk.resize(static_cast<std::size_t>(std::min<std::uint64_t>(piece, core.size() - off)));
      std::string error;
      if (!core.read(off, chunk, error)) return finish_killed(Outcome::Error, error);
      if (!stream_out(chunk)) return stream_failed();
      r_.core_bytes = r_.bytes_streamed;
    }
    r_.stream_complete = true;
    return true;
  }

  bool stream_records(const CoreSource& core) {
    RecordsOptions ropts = o_.records;
    ropts.sparse = r_.sparse_acked;  // ZERO records exist only if SPARSE was acked (docs/PROTOCOL.md §6.2)
    RecordsWriter writer(core, std::move(ropts));
    std::vector<std::byte> record;
    std::string error;
    while (writer.next(record, error)) {
      if (!stream_out(record)) return stream_failed();
      r_.records_sent = writer.records();
      r_.core_bytes = writer.core_position();
    }
    if (!error.empty()) return finish_killed(Outcome::Error, error);
    r_.stream_complete = true;
    return true;
  }

  // Sends stream bytes, honouring kill_after_bytes and the StreamOffset hook. False on failure;
  // stream_io_ / r_.killed say why.
  bool stream_out(std::span<const std::byte> data) {
    while (!data.empty()) {
      if (o_.hook_stream_offset && !offset_hook_fired_ && r_.bytes_streamed >= *o_.hook_stream_offset) {
        offset_hook_fired_ = true;
        at(Point::StreamOffset);
      }
      if (o_.kill_after_bytes && r_.bytes_streamed >= *o_.kill_after_bytes) {
        r_.killed = true;
        return false;
      }
      std::uint64_t n = data.size();
      if (o_.hook_stream_offset && !offset_hook_fired_) n = std::min(n, *o_.hook_stream_offset - r_.bytes_streamed);
      if (o_.kill_after_bytes) n = std::min(n, *o_.kill_after_bytes - r_.bytes_streamed);
      if (!r_.timeline.first_stream_byte) stamp(r_.timeline.first_stream_byte);
      const IoResult io = send_all(fd_.get(), data.first(static_cast<std::size_t>(n)), deadline_);
      r_.bytes_streamed += io.done;
      if (io.status != IoStatus::Ok) {
        stream_io_ = io;
        return false;
      }
      data = data.subspan(static_cast<std::size_t>(n));
    }
    return true;
  }

  bool stream_failed() {
    if (r_.killed) {
      return finish_killed(Outcome::Killed, "task killed after " + std::to_string(r_.bytes_streamed) +
                                                " stream bytes (kill_after_bytes)");
    }
    if (stream_io_.status == IoStatus::Timeout) {
      r_.wcoredump = false;  // the task is killed mid-dump
      return timeout("while streaming the core");
    }
    // The server hung up: the kernel's dump fails, but it still half-closes and waits (which returns
    // at once), and the parent still sees WCOREDUMP (docs/PROTOCOL.md §5.5, §11.3).
    finish(Outcome::StreamAborted,
           "server hung up mid-stream after " + std::to_string(r_.bytes_streamed) +
               " bytes: " + errno_text(stream_io_.error));
    return true;
  }

  void wait_for_release() {
    r_.waited = true;
    const auto t0 = Clock::now();
    std::byte b{};
    const IoResult io = recv_some(fd_.get(), std::span(&b, 1), deadline_);
    r_.parked_us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
    stamp(r_.timeline.wait_done);
    switch (io.status) {
      case IoStatus::Ok:
        r_.wait_end = WaitEnd::Data;
        r_.server_sent_data = true;
        break;
      case IoStatus::Eof: r_.wait_end = WaitEnd::Eof; break;
      case IoStatus::Error: r_.wait_end = io.error == ECONNRESET ? WaitEnd::Reset : WaitEnd::Error; break;
      case IoStatus::Timeout:
        r_.wait_end = WaitEnd::Timeout;
        r_.timed_out = true;
        break;
    }
  }

  void close_socket() {
    at(Point::BeforeClose);
    int queued = 0;
    if (::ioctl(fd_.get(), FIONREAD, &queued) == 0 && queued > 0) {
      r_.unread_at_close = static_cast<std::size_t>(queued);
      if (r_.ack_consumed) r_.server_sent_data = true;  // bytes beyond the ack (docs/PROTOCOL.md §5.3)
    }
    fd_.reset();
    stamp(r_.timeline.closed);
  }

  // ---- Helpers ----

  // What this simulated kernel offered, as kernel_rules reads it.
  rules::Offer offer() const {
    return rules::Offer{o_.size_ack, o_.mask, o_.memory_types_mask, o_.close_files_bit};
  }

  void take_verdict(const rules::Verdict& verdict) {
    r_.verdict = static_cast<proto::Marker>(verdict.mark);
    verdict_rule_ = verdict.rule ? std::string(verdict.rule->id) : std::string();
  }

  // Hook, stalls and injections of one point, in that order.
  void at(Point point) {
    if (o_.hook) o_.hook(point, fd_.get());
    for (const Stall& s : o_.stalls) {
      if (s.at == point && !sleep_within(s.duration, deadline_)) r_.timed_out = true;
    }
    for (const Injection& inj : o_.injections) {
      if (inj.at != point) continue;
      r_.bytes_injected += send_all(fd_.get(), inj.bytes, deadline_).done;
    }
  }

  void stamp(std::optional<std::int64_t>& slot) const {
    slot = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start_).count();
  }

  bool finish(Outcome outcome, std::string error) {
    r_.outcome = outcome;
    r_.error = std::move(error);
    return false;
  }

  bool finish_killed(Outcome outcome, std::string error) {
    r_.wcoredump = false;
    return finish(outcome, std::move(error));
  }

  bool fail_connect(int err) {
    r_.connect_errno = err;
    return finish(Outcome::ConnectFailed,
                  "connect to " + o_.socket_path + " failed: " + errno_text(err));
  }

  bool hung_up_before_ack(const IoResult& io, std::string_view where) {
    std::string how = io.status == IoStatus::Eof ? "EOF" : errno_text(io.error);
    return finish(Outcome::HungUpBeforeAck,
                  "server hung up (" + how + ") " + std::string(where) + ": no marker, no dump");
  }

  bool timeout(std::string_view where) {
    r_.timed_out = true;
    return finish(Outcome::TimedOut, "timed out after " + std::to_string(o_.timeout.count()) +
                                         " ms " + std::string(where));
  }

  const Options& o_;
  Deadline deadline_;
  Clock::time_point start_ = Clock::now();
  ScopedFd fd_;
  proto::coredump_req kreq_{};
  IoResult stream_io_{};
  bool offset_hook_fired_ = false;
  std::string verdict_rule_;  // id of the kernel_rules rule that refused the ack, if any
  Result r_;
};

}  // namespace

Options rfc_close_files_kernel(std::string socket_path) {
  Options o;
  o.socket_path = std::move(socket_path);
  o.request_size = proto::COREDUMP_REQ_SIZE_VER1;
  o.size_ack = proto::COREDUMP_ACK_SIZE_VER1;
  o.mask = MASK_RFC_CLOSE_FILES;
  o.memory_types_mask = MEMORY_TYPES_MASK_RFC;
  o.close_files_bit = proto::COREDUMP_CLOSE_FILES_DEFAULT;
  return o;
}

Result run(const Options& options) { return Session(options).run(); }

}  // namespace coredumpd::fake_kernel
