#include "daemon/query/query_server.h"

#include <unistd.h>

#include <exception>

#include <spdlog/spdlog.h>

#include "daemon/query/query_socket.h"
#include "daemon/report/log_limiter.h"

namespace coredumpd {

namespace asio = boost::asio;
using boost::system::error_code;
using local = asio::local::stream_protocol;

namespace {

// Refusals are logged through the daemon's flood limiter: a client that loops cannot fill the log.
void log_refusal(const QueryPeer& peer, const std::string& reason) {
  if (log_limiter().allow("query refused")) spdlog::warn("query from {}: refused: {}", peer.describe(), reason);
}

}  // namespace

QueryServer::QueryServer(QueryServerOptions options) : options_(std::move(options)), acceptor_(io_) {
  answers_ = std::make_unique<QueryAnswers>(options_.store_dir, options_.status, options_.remove);
  UniqueFd fd;
  if (options_.passed_fd >= 0) {
    fd.reset(options_.passed_fd);
    path_ = adopt_query_socket(fd.get());
    spdlog::info("query service on the socket passed by systemd{}{}", path_.empty() ? "" : ": ", path_);
  } else {
    fd = listen_query_socket(options_.socket_path, options_.backlog);
    path_ = options_.socket_path;
    own_socket_ = true;
    spdlog::info("query service on {}", path_);
  }
  acceptor_.assign(local(), fd.release());
}

QueryServer::~QueryServer() { stop(); }

void QueryServer::start() {
  accept_next();
  thread_ = std::thread([this] {
    try {
      io_.run();
    } catch (const std::exception& e) {
      spdlog::error("query service stopped: {}", e.what());
    }
  });
}

void QueryServer::stop() {
  io_.stop();
  if (thread_.joinable()) thread_.join();
  error_code ignored;
  acceptor_.close(ignored);
  if (own_socket_) {
    ::unlink(path_.c_str());
    own_socket_ = false;
  }
}

void QueryServer::accept_next() {
  acceptor_.async_accept([this](error_code ec, local::socket socket) {
    if (ec == asio::error::operation_aborted) return;
    if (ec) {
      // EMFILE and friends: the connection stays queued; try again shortly rather than spin.
      if (log_limiter().allow("query accept failed")) spdlog::error("query service: accept failed: {}", ec.message());
      auto timer = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(100));
      timer->async_wait([this, timer](error_code) { accept_next(); });
      return;
    }
    on_accept(std::move(socket));
    accept_next();
  });
}

void QueryServer::on_accept(local::socket socket) {
  const auto peer = query_peer(socket.native_handle());
  if (!peer) return;  // gone already
  auto outcome = [this](const QueryPeer& p, bool ok, const std::string& reason) { count(p, ok, reason); };
  const std::size_t mine = per_uid_[peer->uid];
  const bool busy_all = open_ >= options_.limits.max_connections;
  const bool busy_uid = mine >= options_.limits.max_per_uid;
  if (busy_all || busy_uid) {
    if (mine == 0) per_uid_.erase(peer->uid);
    auto s = std::make_shared<QuerySession>(std::move(socket), *peer, *answers_, options_.limits.timeouts, outcome,
                                            nullptr);
    s->start_refused(QueryErrorCode::Busy,
                     busy_all ? fmt::format("too many connections ({} open); try again later", open_)
                              : fmt::format("too many connections of uid {} ({} open); try again later", peer->uid, mine));
    return;
  }
  ++open_;
  ++per_uid_[peer->uid];
  const uid_t uid = peer->uid;
  auto on_close = [this, uid] {
    --open_;
    if (--per_uid_[uid] == 0) per_uid_.erase(uid);
  };
  std::make_shared<QuerySession>(std::move(socket), *peer, *answers_, options_.limits.timeouts, outcome, on_close)
      ->start();
}

void QueryServer::count(const QueryPeer& peer, bool ok, const std::string& refused_reason) {
  if (options_.stats) options_.stats->count(ok ? Outcome::QueryServed : Outcome::QueryRefused);
  if (!refused_reason.empty()) log_refusal(peer, refused_reason);
}

}  // namespace coredumpd
