// One client of the query service: read a request line (with a deadline), answer it (streamed,
// with a bound on how long the client may leave the reply unread), then the next request.
#pragma once

#include <sys/types.h>

#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>

#include <array>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "daemon/query/query_answers.h"

namespace coredumpd {

/// Who is on the other end (SO_PEERCRED; the pid from SO_PEERPIDFD where the kernel has it).
struct QueryPeer {
  uid_t uid = static_cast<uid_t>(-1);
  pid_t pid = 0;
  std::string describe() const;  ///< "uid 1000 pid 4242", for log lines
};

/// The peer of connected socket `fd`; std::nullopt if SO_PEERCRED fails.
std::optional<QueryPeer> query_peer(int fd);

/// How long a client may take, and how much it may send.
struct QueryTimeouts {
  std::chrono::milliseconds request{10'000};  ///< to send a whole request line, from the last reply
  std::chrono::milliseconds stall{30'000};    ///< a reply chunk left unread this long drops the client
};

/// Called once per request answered (ok or not) and once per refusal that ends the connection
/// (`refused_reason` non-empty).
using QueryOutcomeFn = std::function<void(const QueryPeer&, bool ok, const std::string& refused_reason)>;

/// A connection, kept alive by its pending handlers (Asio's idiom); single-threaded (the query
/// thread's io_context). `on_close` runs once when it ends, for the connection counts.
class QuerySession : public std::enable_shared_from_this<QuerySession> {
 public:
  QuerySession(boost::asio::local::stream_protocol::socket socket, QueryPeer peer, QueryAnswers& answers,
               QueryTimeouts timeouts, QueryOutcomeFn outcome, std::function<void()> on_close);
  ~QuerySession();
  /// Starts reading the first request.
  void start();
  /// Sends an error line instead (a limit refused the connection), then closes.
  void start_refused(QueryErrorCode code, const std::string& message) { refuse(code, message); }

 private:
  void read_request();
  void on_read(std::size_t n);
  void handle_line(std::string_view line);
  void send_reply(QueryReply reply);
  void write_next();
  void write_chunk();
  void refuse(QueryErrorCode code, const std::string& message);  ///< error line, then close
  void close();

  boost::asio::local::stream_protocol::socket socket_;
  boost::asio::steady_timer timer_;
  QueryPeer peer_;
  QueryAnswers& answers_;
  QueryTimeouts timeouts_;
  QueryOutcomeFn outcome_;
  std::function<void()> on_close_;
  std::array<char, 4096> buf_{};
  std::string line_;             ///< the request line so far
  std::optional<QueryReply> reply_;
  std::string chunk_;            ///< bytes of the reply being written
  std::size_t chunk_sent_ = 0;
  UniqueFd chunk_fd_;            ///< goes with chunk_'s first byte
  bool close_after_reply_ = false;
  bool closed_ = false;
};

}  // namespace coredumpd
