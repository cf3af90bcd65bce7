// Test-only: a scripted server for the fake kernel to talk to — a listening AF_UNIX socket in a fresh
// temporary directory and a thread that accepts one connection and runs a script on it. Every
// server-side operation is bounded (kServerIoTimeout), so a broken fake kernel fails a test instead
// of hanging it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "tests/fake_kernel/scoped_fd.h"

namespace coredumpd::fake_kernel::testing {

/// Bound on every blocking server-side operation (accept, recv, send).
inline constexpr std::chrono::seconds kServerIoTimeout{5};

/// The bytes of a coredump_ack: `send_len` bytes whose first min(send_len, 24) are the struct
/// {size_field, spare, mask, memory_types}; anything beyond 24 is zero.
std::vector<std::byte> make_ack(std::uint32_t size_field, std::uint64_t mask, std::size_t send_len,
                                std::uint32_t spare = 0, std::uint64_t memory_types = 0);

/// A valid ack of `size` bytes (size field = size) for `mask`.
std::vector<std::byte> make_ack(std::uint32_t size, std::uint64_t mask);

/// How a read-to-the-end on the server side ended.
struct ReadEnd {
  std::vector<std::byte> data;  ///< everything read
  int end_errno = 0;            ///< 0: clean EOF; else the errno of the failing recv (ECONNRESET...)
  bool timed_out = false;       ///< kServerIoTimeout passed first
};

/// The server side of one accepted connection (blocking socket with kServerIoTimeout timeouts).
class ServerConn {
 public:
  /// Takes ownership of the accepted socket.
  explicit ServerConn(ScopedFd fd);

  /// The socket.
  [[nodiscard]] int fd() const { return fd_.get(); }
  /// Reads a request like a server (peek the size field, then read `size` bytes, at most 64 KiB).
  /// Empty on failure.
  std::vector<std::byte> read_request();
  /// Bytes queued for reading right now (FIONREAD), -1 on error.
  int queued() const;
  /// Sends all of `bytes`; false on error.
  bool send(std::span<const std::byte> bytes);
  /// Reads exactly 4 bytes as a marker; std::nullopt on EOF/error/timeout.
  std::optional<std::uint32_t> read_marker();
  /// Reads up to `max` bytes until EOF, an error or the timeout.
  ReadEnd read_to_end(std::size_t max = 1ULL << 30);
  /// One recv() of one byte: 0 for EOF, the errno on error, -1 if a byte arrived, -2 on timeout.
  int next_read();
  /// Waits (bounded) until the peer has closed its socket entirely (POLLHUP), which a half-close
  /// alone does not signal. True if it did.
  bool wait_peer_closed();
  /// shutdown(SHUT_WR), keeping the socket open.
  void shutdown_write();
  /// close().
  void close();

 private:
  ScopedFd fd_;
};

/// A listening socket plus one thread that accepts one connection and runs `script` on it.
class ScriptedServer {
 public:
  /// The script; it owns the connection for its duration. Not called if accept timed out.
  using Script = std::function<void(ServerConn&)>;

  /// Creates the temp dir and socket (listen backlog `backlog`) and starts the thread. With
  /// `accept` false no thread is started (for backlog and not-accepted tests).
  explicit ScriptedServer(Script script, int backlog = 16, bool accept = true);
  /// Joins the thread (the script must end within its own bounded operations) and removes the
  /// socket and directory.
  ~ScriptedServer();
  ScriptedServer(const ScriptedServer&) = delete;
  ScriptedServer& operator=(const ScriptedServer&) = delete;

  /// Socket path to give the fake kernel.
  [[nodiscard]] const std::string& path() const { return path_; }
  /// The listening socket.
  [[nodiscard]] int listen_fd() const { return listen_.get(); }
  /// Waits for the script to finish. Idempotent.
  void join();
  /// True if a connection was accepted (read it after join()).
  [[nodiscard]] bool accepted() const { return accepted_; }

 private:
  std::string dir_;
  std::string path_;
  ScopedFd listen_;
  std::thread thread_;
  bool accepted_ = false;
};

/// A fresh empty directory under $TMPDIR (or /tmp), removed by the caller.
std::string make_temp_dir();

}  // namespace coredumpd::fake_kernel::testing
