// The fake kernel: plays the crashing task's side of the core_pattern "@@" socket protocol exactly
// as docs/PROTOCOL.md §4–§6 and §11 describe it, so integration tests can drive coredumpd with things the
// running kernel (6.18) cannot produce: VER1 requests, RECORDS/SPARSE streams, MEMORY_TYPES,
// CLOSE_FILES, malformed or oversized requests, and hostile timing.
//
// One call to run() is one crash:
//   connect (non-blocking, like the kernel) → send coredump_req in one send → peek the ack's 4-byte
//   size field → kernel_rules::size_verdict() → read exactly `size` bytes → kernel_rules::ack_verdict() → send the
//   4-byte marker → act on the acked mask (stream / nothing / close) → shutdown(SHUT_WR) → WAIT:
//   block on a 1-byte read until the server hangs up.
// The kernel's ack checks are tests/fake_kernel/kernel_rules.h, the fake kernel's own table from the
// kernel source, deliberately not the daemon's protocol::kernel_ack_verdict(); this file only does
// the I/O around them.
//
// Differences from the real kernel, all deliberate:
//  - Every blocking step is bounded by Options::timeout (the kernel has none), so a test never hangs;
//    hitting it is reported as Result::timed_out and treated like a SIGKILL of the task.
//  - The peer of this client is the test process, not a crashing task. Its SO_PEERPIDFD pidfd reports
//    only the dumpability policy bit (e.g. PIDFD_COREDUMP_USER, 0x4) and never PIDFD_COREDUMPED
//    (docs/PROTOCOL.md §3.4), so a real coredumpd refuses it as an impostor unless started with
//    `--allow-unverified-peers` (docs/PROTOCOL.md §11.1). That refusal is the expected behaviour,
//    not a bug of the fake kernel.
//  - The crashing task is the test process itself, unless Options::crasher names a real one
//    (tests/fake_kernel/crasher.h): that process then makes the connect() and its fd table is what
//    COREDUMP_CLOSE_FILES closes, before the first stream byte (KERNEL) or the hang-up (USERSPACE),
//    as the RFC selftest coredump_close_files_test.c pins down. Options::close_files runs after it.
//
// Not thread-safe per call, but independent run() calls may run concurrently (one socket each).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/negotiate.h"
#include "protocol/wire.h"
#include "tests/fake_kernel/core_source.h"
#include "tests/fake_kernel/crasher.h"
#include "tests/fake_kernel/records_writer.h"

namespace coredumpd::fake_kernel {

/// Every mask bit a NEXT (linux-next fs-next) kernel offers: the 6.17 base plus RECORDS, SPARSE and
/// MEMORY_TYPES. Add protocol::COREDUMP_CLOSE_FILES_DEFAULT to simulate the CLOSE_FILES RFC.
inline constexpr std::uint64_t MASK_NEXT = protocol::COREDUMP_MASK_VER0 | protocol::COREDUMP_RECORDS |
                                           protocol::COREDUMP_SPARSE | protocol::COREDUMP_MEMORY_TYPES;
/// The memory types the RFC kernel knows (COREDUMP_MEMORY_ANON_PRIVATE .. DAX_SHARED, docs/PROTOCOL.md §6.3).
inline constexpr std::uint64_t MEMORY_TYPES_MASK_RFC = 0x1FF;
/// Every mask bit the CLOSE_FILES RFC kernel offers (its selftest): 0x7F plus COREDUMP_CLOSE_FILES.
inline constexpr std::uint64_t MASK_RFC_CLOSE_FILES = MASK_NEXT | protocol::COREDUMP_CLOSE_FILES_DEFAULT;
/// The default /proc/<pid>/coredump_filter (docs/PROTOCOL.md §7.2), used as the task's own memory types.
inline constexpr std::uint64_t DEFAULT_COREDUMP_FILTER = 0x33;

/// Moments of a session at which Options::hook, stalls and injections act.
enum class Point {
  Connected,     ///< connect() succeeded; nothing sent yet
  RequestSent,   ///< the whole request is out; about to wait for the ack
  AckRead,       ///< the ack was read (or only peeked, for MINSIZE/MAXSIZE); marker not yet sent
  MarkerSent,    ///< the marker is out; next: close (refusal, REJECT) or close-files and the stream
  StreamOffset,  ///< Options::hook_stream_offset stream bytes are out (fires at most once)
  StreamDone,    ///< the stream is complete (KERNEL) / nothing was sent (USERSPACE); before SHUT_WR
  ShutdownSent,  ///< shutdown(SHUT_WR) done; before the WAIT read (or the close without WAIT)
  BeforeClose,   ///< about to close the socket, whatever the outcome (only if connected)
};

/// Name of a point as used by the CLI and in JSON ("connected", "request-sent", "ack-read",
/// "marker-sent", "stream-offset", "stream-done", "shutdown-sent", "before-close").
std::string_view point_name(Point point);
/// Parses a point_name(); std::nullopt if unknown.
std::optional<Point> parse_point(std::string_view name);

/// Sleep at a point (bounded by the session deadline), to simulate a slow or stuck task.
struct Stall {
  Point at = Point::Connected;            ///< where to sleep
  std::chrono::microseconds duration{0};  ///< how long
};

/// Bytes the fake kernel sends at a point — something a real kernel never does (e.g. junk after the
/// marker in USERSPACE mode), to test the daemon's resilience. They do not count as stream bytes.
struct Injection {
  Point at = Point::MarkerSent;  ///< where to send them
  std::vector<std::byte> bytes;  ///< what to send
};

/// Everything one simulated crash does. Defaults reproduce a 6.18 kernel (docs/PROTOCOL.md §11.3):
/// 16-byte request, size_ack 16, mask 0xF, plain byte stream.
struct Options {
  /// Path of the server's listening socket (the part after "@@" in core_pattern).
  std::string socket_path;

  /// Simulate plain "@" mode (docs/PROTOCOL.md §9): no request/ack/marker, the core is streamed right after
  /// connect, then shutdown(SHUT_WR). Request, ack and mode options are then ignored.
  bool plain_mode = false;
  /// In plain mode, park on a 1-byte read after the stream, as with kernel.core_pipe_limit != 0.
  bool plain_wait = false;

  // ---- The request (docs/PROTOCOL.md §4.2) ----
  /// Bytes sent as the request: 16 (VER0), 32 (VER1), more (fields of a "newer kernel", zero
  /// padded) or fewer (hostile: a truncated request). The fields are the first bytes of a
  /// coredump_req; bytes beyond 32 are zero.
  std::uint32_t request_size = protocol::COREDUMP_REQ_SIZE_VER0;
  /// Value written to the request's `size` field when it should lie about request_size (hostile
  /// sizes such as 8, 4096, 0xFFFFFFFF). std::nullopt: the truth.
  std::optional<std::uint32_t> size_field;
  /// Largest ack this kernel accepts; also what kernel_rules::size_verdict() checks against.
  std::uint32_t size_ack = protocol::COREDUMP_ACK_SIZE_VER0;
  /// Features offered (req.mask); kernel_rules::ack_verdict() refuses ack bits outside it.
  std::uint64_t mask = protocol::COREDUMP_MASK_VER0;
  /// req.memory_types: the task's own coredump_filter selection (sent only if request_size >= 24).
  std::uint64_t memory_types = DEFAULT_COREDUMP_FILTER;
  /// req.memory_types_mask: every type this kernel knows (sent only if request_size >= 32).
  std::uint64_t memory_types_mask = MEMORY_TYPES_MASK_RFC;
  /// Hostile timing: send the request in two pieces, the first `request_split_at` bytes, then
  /// sleep request_split_delay, then the rest. std::nullopt (the kernel's way): one send.
  std::optional<std::size_t> request_split_at;
  /// Pause between the two pieces of a split request.
  std::chrono::microseconds request_split_delay{0};
  /// Value of COREDUMP_CLOSE_FILES on this simulated kernel (RFC; value not settled, docs/PROTOCOL.md §6.4).
  /// Passed to kernel_rules::ack_verdict(); 0 disables the flag entirely.
  std::uint64_t close_files_bit = protocol::COREDUMP_CLOSE_FILES_DEFAULT;

  // ---- The core (KERNEL mode, or plain mode) ----
  /// What to stream.
  CoreSource core;
  /// If set, called after REQACK in KERNEL mode to choose the core from the accepted ack (e.g. a
  /// smaller core when MEMORY_TYPES dropped a type); overrides `core`.
  std::function<CoreSource(const protocol::coredump_ack&)> select_core;
  /// Bytes per send() of a plain stream.
  std::size_t chunk_size = 64 * 1024;
  /// How to cut a records stream (used only if RECORDS was acked). `records.sparse` is ignored:
  /// ZERO records are produced exactly when SPARSE was acked, as the kernel does.
  RecordsOptions records;

  // ---- Faults ----
  /// Simulate a SIGKILL mid-dump (docs/PROTOCOL.md §6.2, §11.2 groups D and F): once this many
  /// stream bytes (headers included) are out and more remain, stop, and close without shutdown and
  /// without END. WCOREDUMP clear.
  std::optional<std::uint64_t> kill_after_bytes;
  /// Send this marker whatever the ack was (any u32, including values >= 5 no kernel defines yet),
  /// to test the daemon's handling of each refusal; the ack is still read in full first.
  std::optional<std::uint32_t> force_marker;

  // ---- The crashing task ----
  /// A real process playing the crashing task (not owned): it makes the connect(), so the
  /// server's SO_PEERCRED/SO_PEERPIDFD name it, and when CLOSE_FILES is acked its fd table is
  /// closed (Crasher::close_files) before `close_files` below runs. nullptr: the test process.
  Crasher* crasher = nullptr;

  // ---- Hooks ----
  /// COREDUMP_CLOSE_FILES was acked: called once, before the first stream byte (KERNEL) or before
  /// the EOF (USERSPACE), where the RFC kernel closes the task's files. Tests use it to close fds or
  /// kill/signal a helper process holding locks. May be empty (the close is then only timed).
  std::function<void()> close_files;
  /// Called at every Point with the connected socket, before the stalls and injections of that
  /// point. Free to sleep, send or shutdown; it runs outside the deadline.
  std::function<void(Point, int fd)> hook;
  /// Sleeps at chosen points, in order.
  std::vector<Stall> stalls;
  /// Bytes sent at chosen points, in order, after the stalls of the same point.
  std::vector<Injection> injections;
  /// Stream offset (bytes after the marker) at which Point::StreamOffset fires.
  std::optional<std::uint64_t> hook_stream_offset;

  /// Overall budget for the whole session (connect to close). <= 0: none, like the real kernel —
  /// never in tests.
  std::chrono::milliseconds timeout{10'000};
};

/// How a session ended, from the simulated kernel's point of view.
enum class Outcome {
  ConnectFailed,    ///< connect() failed (ENOENT, ECONNREFUSED, EAGAIN = backlog full): no dump
  RequestFailed,    ///< sending the request failed (server gone): no dump
  HungUpBeforeAck,  ///< EOF or error before a whole ack: no marker, close, no dump (docs/PROTOCOL.md §4.5 steps 1, 3)
  Refused,          ///< a non-zero marker was sent, then close: no dump
  MarkerFailed,     ///< sending the REQACK marker failed: the kernel gives up, no dump
  Rejected,         ///< REQACK for REJECT: closed right after the marker, WAIT ignored
  Dumped,           ///< REQACK for KERNEL (whole stream sent) or USERSPACE; released: WAIT (if acked)
                    ///< ended because the server hung up (or sent data / errored, which also release)
  NotReleased,      ///< the dump went out but the server never hung up: the WAIT read hit the deadline
                    ///< (wait_end Timeout), i.e. a real task would still be frozen
  StreamAborted,    ///< KERNEL stream failed because the server hung up (WCOREDUMP still set)
  Killed,           ///< kill_after_bytes fired: the task was "SIGKILLed" mid-dump
  TimedOut,         ///< the deadline passed before the dump was complete; treated as SIGKILL
  Error,            ///< invalid options or a local failure (core file unreadable)
};

/// snake_case name of an outcome ("connect_failed", "hung_up_before_ack", "dumped", ...).
std::string_view outcome_name(Outcome outcome);

/// How the WAIT read (docs/PROTOCOL.md §5.3) returned.
enum class WaitEnd {
  None,     ///< no WAIT read was made
  Eof,      ///< the server closed or shut down its write side: the normal release
  Reset,    ///< ECONNRESET: the server closed with our bytes unread
  Data,     ///< the server sent a byte ("Coredump socket had unexpected data")
  Timeout,  ///< the deadline passed while parked
  Error,    ///< another socket error
};

/// Name of a WaitEnd ("none", "eof", "reset", "data", "timeout", "error").
std::string_view wait_end_name(WaitEnd end);

/// When things happened, in microseconds since run() started. Unset: did not happen.
struct Timeline {
  std::optional<std::int64_t> connected;          ///< connect() succeeded
  std::optional<std::int64_t> request_sent;       ///< last request byte sent
  std::optional<std::int64_t> ack_read;           ///< ack read (or size field peeked)
  std::optional<std::int64_t> marker_sent;        ///< marker sent
  std::optional<std::int64_t> files_closed;       ///< close_files callback returned
  std::optional<std::int64_t> first_stream_byte;  ///< first stream byte about to be sent
  std::optional<std::int64_t> stream_done;        ///< stream finished (or nothing, USERSPACE)
  std::optional<std::int64_t> shutdown_sent;      ///< shutdown(SHUT_WR) done
  std::optional<std::int64_t> wait_done;          ///< WAIT read returned
  std::optional<std::int64_t> closed;             ///< socket closed
};

/// Everything observed in one session.
struct Result {
  Outcome outcome = Outcome::Error;  ///< how it ended (see Outcome)
  std::string error;                 ///< one sentence on what went wrong; empty for Dumped/Rejected

  // Connection
  bool connected = false;  ///< connect() succeeded
  int connect_errno = 0;   ///< errno of a failed connect() (ENOENT, ECONNREFUSED, EAGAIN, ...), else 0

  // Request
  bool request_sent = false;     ///< all request bytes were sent
  std::vector<std::byte> request;  ///< the request bytes as built (sent in full iff request_sent)

  // Ack
  /// The ack as received: the `size` bytes read (possibly fewer on hangup). For MINSIZE/MAXSIZE only
  /// the 4 peeked bytes, which stay unread in the socket (so the server then sees ECONNRESET).
  std::vector<std::byte> ack_raw;
  bool ack_consumed = false;                    ///< the full ack was read off the socket
  std::optional<std::uint32_t> ack_size_field;  ///< the peeked size field, if 4 bytes arrived
  /// The ack decoded from ack_raw (first min(size, 24) bytes, rest zero) once fully read.
  std::optional<protocol::coredump_ack> ack;

  // Marker
  std::optional<protocol::Marker> verdict;  ///< the kernel's decision (even if sending it failed)
  bool marker_sent = false;                 ///< the 4-byte marker went out
  std::optional<std::uint32_t> marker;      ///< the marker value, if sent

  // What the REQACK'd ack asked for (all false / unset on refusal)
  std::optional<protocol::Mode> mode;  ///< the acked mode (plain mode: Kernel)
  bool wait_acked = false;             ///< WAIT acked with KERNEL/USERSPACE (ignored with REJECT)
  bool records_acked = false;          ///< RECORDS acked: the stream was records
  bool sparse_acked = false;           ///< SPARSE acked: zero pages became ZERO records
  bool memory_types_acked = false;     ///< MEMORY_TYPES acked
  bool close_files_acked = false;      ///< CLOSE_FILES (Options::close_files_bit) acked
  /// The memory types the kernel would dump: ack.memory_types with MEMORY_TYPES, else the task's own.
  std::uint64_t effective_memory_types = 0;

  // Stream
  std::uint64_t bytes_streamed = 0;  ///< bytes sent after the marker, record headers included
  std::uint64_t core_bytes = 0;      ///< core bytes covered by what was sent (complete records)
  std::uint64_t records_sent = 0;    ///< records sent completely (header and payload)
  bool stream_complete = false;      ///< the whole core (and END, if wanted) was sent
  bool close_files_called = false;   ///< the close-files step ran (see Timeline::files_closed)
  bool shutdown_sent = false;        ///< shutdown(SHUT_WR) was done
  bool killed = false;               ///< kill_after_bytes fired
  std::uint64_t bytes_injected = 0;  ///< bytes sent by Options::injections

  // WAIT
  bool waited = false;               ///< the 1-byte WAIT read was made
  std::int64_t parked_us = 0;        ///< how long that read blocked, in microseconds
  WaitEnd wait_end = WaitEnd::None;  ///< how it returned
  /// The server sent bytes after a consumed ack: the WAIT read returned data, or bytes were still
  /// unread at close (the real kernel logs "Coredump socket had unexpected data"; the server then
  /// gets ECONNRESET). Never a protocol-conforming server's behaviour.
  bool server_sent_data = false;
  std::size_t unread_at_close = 0;   ///< bytes queued but unread when we closed (FIONREAD)

  /// What the parent's wait status would show (docs/PROTOCOL.md §5.5): set after REQACK for KERNEL (even if the
  /// server hung up mid-stream) and USERSPACE; clear for REJECT, refusals, no connection, and a
  /// SIGKILL during the dump (kill_after_bytes, or a timeout before the dump completed).
  bool wcoredump = false;
  /// The deadline (Options::timeout) passed somewhere: before the dump completed (outcome
  /// TimedOut, WCOREDUMP clear), while parked in WAIT (outcome NotReleased, wait_end Timeout), or
  /// during a stall.
  bool timed_out = false;

  Timeline timeline;  ///< when each step happened
};

/// The kernel of the CLOSE_FILES RFC aimed at `socket_path`: the 32-byte request, size_ack 24, mask
/// MASK_RFC_CLOSE_FILES (0x7F plus CLOSE_FILES), memory_types_mask 0x1FF (its selftest's
/// coredump_close_files_test.c with the fs-next request of docs/PROTOCOL.md §4.2).
Options rfc_close_files_kernel(std::string socket_path);

/// Runs one simulated crash against `options.socket_path`. Never throws for protocol or socket
/// failures (they are results); exceptions from user callbacks propagate.
Result run(const Options& options);

}  // namespace coredumpd::fake_kernel
