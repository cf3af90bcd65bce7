// The query service (store/query_protocol.h, docs/QUERY.md): users who are not root see the dumps
// of their own processes and receive their cores as passed descriptors. Served on a thread and an
// io_context of its own, never the daemon's io thread: a hostile client cannot delay a handshake.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "daemon/query/query_answers.h"
#include "daemon/query/query_session.h"
#include "daemon/report/stats.h"

namespace coredumpd {

/// Limits that keep hostile clients from stalling the service (docs/QUERY.md, "Limits").
struct QueryLimits {
  std::size_t max_connections = 64;     ///< open connections in all; beyond: "busy", closed
  std::size_t max_per_uid = 8;          ///< open connections of one uid; beyond: "busy", closed
  QueryTimeouts timeouts;
};

struct QueryServerOptions {
  std::string store_dir;
  /// A listening socket systemd passed (FileDescriptorName=query); ownership is taken. -1: bind
  /// `socket_path` instead.
  int passed_fd = -1;
  std::string socket_path;  ///< where to bind when no socket was passed (0666, removed on exit)
  int backlog = 128;
  QueryLimits limits;
  /// Fills the status reply (daemon/main.cc); called on the query thread. The server adds this
  /// store's usage to its store_usage.
  std::function<QueryStatus()> status;
  Stats* stats = nullptr;  ///< QueryServed / QueryRefused are counted here, if set
  /// Answers "delete" (store_deleter() in the daemon); empty: deletes are refused.
  QueryDeleteFn remove;
};

/// Listens at construction (throws std::exception with a readable message), serves once start()ed.
class QueryServer {
 public:
  explicit QueryServer(QueryServerOptions options);
  ~QueryServer();
  QueryServer(const QueryServer&) = delete;
  QueryServer& operator=(const QueryServer&) = delete;

  /// Replaces options.status (before start()): the daemon's status may need socket_path().
  void set_status(std::function<QueryStatus()> status) { answers_->set_status(std::move(status)); }
  /// Starts the service thread.
  void start();
  /// Stops the thread (open connections are dropped) and removes a socket file it created.
  /// Idempotent; the destructor calls it.
  void stop();
  /// The socket's path ("" if systemd passed an unnamed one).
  const std::string& socket_path() const { return path_; }

 private:
  void accept_next();
  void on_accept(boost::asio::local::stream_protocol::socket socket);
  void count(const QueryPeer& peer, bool ok, const std::string& refused_reason);

  // Declared before io_: the sessions io_ still holds at destruction use them.
  QueryServerOptions options_;
  std::unique_ptr<QueryAnswers> answers_;
  std::string path_;
  bool own_socket_ = false;
  std::size_t open_ = 0;                  ///< sessions open (query thread only)
  std::map<uid_t, std::size_t> per_uid_;  ///< sessions open per uid (query thread only)
  boost::asio::io_context io_;
  boost::asio::local::stream_protocol::acceptor acceptor_;
  std::thread thread_;
};

}  // namespace coredumpd
