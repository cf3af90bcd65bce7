#include "daemon/query/query_session.h"

#include <sys/socket.h>

#include <boost/asio/write.hpp>

#include <cerrno>
#include <fstream>

#include <fmt/format.h>

#include "util/fd_passing.h"

namespace coredumpd {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

// A reply is formatted and written in chunks of about this size: a list of thousands of records is
// never held as one string, and each chunk must leave within the stall timeout.
constexpr std::size_t kChunkBytes = 64 * 1024;

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77  // Linux 6.5, include/uapi/asm-generic/socket.h
#endif

// The pid a pidfd stands for, from its fdinfo ("Pid:"): the peer as it is now, not a recycled pid.
pid_t pid_of_pidfd(int pidfd) {
  std::ifstream in("/proc/self/fdinfo/" + std::to_string(pidfd));
  std::string key;
  while (in >> key) {
    if (key == "Pid:") {
      long pid = 0;
      in >> pid;
      return static_cast<pid_t>(pid);
    }
    in.ignore(4096, '\n');
  }
  return 0;
}

}  // namespace

std::string QueryPeer::describe() const { return fmt::format("uid {} pid {}", uid, pid); }

std::optional<QueryPeer> query_peer(int fd) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return std::nullopt;
  QueryPeer peer{cred.uid, cred.pid};
  int pidfd = -1;
  len = sizeof(pidfd);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0 && pidfd >= 0) {
    const UniqueFd owned(pidfd);
    if (const pid_t pid = pid_of_pidfd(pidfd); pid > 0) peer.pid = pid;
  }
  return peer;
}

QuerySession::QuerySession(asio::local::stream_protocol::socket socket, QueryPeer peer, QueryAnswers& answers,
                           QueryTimeouts timeouts, QueryOutcomeFn outcome, std::function<void()> on_close)
    : socket_(std::move(socket)),
      timer_(socket_.get_executor()),
      peer_(peer),
      answers_(answers),
      timeouts_(timeouts),
      outcome_(std::move(outcome)),
      on_close_(std::move(on_close)) {
  socket_.non_blocking(true);
}

QuerySession::~QuerySession() {
  if (on_close_) on_close_();
}

void QuerySession::start() { read_request(); }

void QuerySession::read_request() {
  if (closed_) return;
  timer_.expires_after(timeouts_.request);
  timer_.async_wait([self = shared_from_this()](error_code ec) {
    if (ec) return;
    self->outcome_(self->peer_, false, "no complete request within the deadline");
    self->close();
  });
  socket_.async_read_some(asio::buffer(buf_), [self = shared_from_this()](error_code ec, std::size_t n) {
    if (self->closed_) return;
    self->timer_.cancel();
    if (ec) return self->close();  // hang-up (or an error): nothing to answer
    self->on_read(n);
  });
}

void QuerySession::on_read(std::size_t n) {
  std::string_view in(buf_.data(), n);
  const auto nl = in.find('\n');
  if (nl == std::string_view::npos) {
    line_.append(in);
    if (line_.size() >= kMaxRequestBytes)
      return refuse(QueryErrorCode::TooLarge, fmt::format("request longer than {} bytes", kMaxRequestBytes));
    return read_request();
  }
  line_.append(in.substr(0, nl));
  // One request at a time: bytes after the first line are a pipelined request. Kept for the next
  // round only if they fit; the client waits for each reply anyway.
  std::string rest(in.substr(nl + 1));
  std::string line = std::exchange(line_, std::move(rest));
  if (line.size() >= kMaxRequestBytes)
    return refuse(QueryErrorCode::TooLarge, fmt::format("request longer than {} bytes", kMaxRequestBytes));
  handle_line(line);
}

void QuerySession::handle_line(std::string_view line) {
  auto parsed = parse_query_request(line);
  if (auto* e = std::get_if<QueryError>(&parsed)) {
    if (e->code == QueryErrorCode::TooLarge) return refuse(e->code, e->message);
    outcome_(peer_, false, "");
    return send_reply(QueryReply::line(query_error_line(*e), false));
  }
  QueryReply reply = answers_.answer(std::get<QueryRequest>(parsed), peer_.uid);
  outcome_(peer_, reply.ok(), "");
  send_reply(std::move(reply));
}

void QuerySession::send_reply(QueryReply reply) {
  reply_.emplace(std::move(reply));
  chunk_fd_ = reply_->take_fd();
  write_next();
}

void QuerySession::write_next() {
  if (closed_) return;
  chunk_ = reply_->next_chunk(kChunkBytes);
  chunk_sent_ = 0;
  if (chunk_.empty()) {  // the reply is done
    reply_.reset();
    if (close_after_reply_) return close();
    // A request pipelined behind this one is answered now; else wait for the next.
    if (const auto nl = line_.find('\n'); nl != std::string::npos) {
      std::string line = line_.substr(0, nl);
      line_.erase(0, nl + 1);
      return handle_line(line);
    }
    return read_request();
  }
  timer_.expires_after(timeouts_.stall);
  timer_.async_wait([self = shared_from_this()](error_code ec) {
    if (ec) return;
    self->outcome_(self->peer_, false, "reply left unread for too long");
    self->close();
  });
  write_chunk();
}

// Writes what is left of chunk_ without blocking; the descriptor (if any) goes with its first byte
// (sendmsg SCM_RIGHTS, which Asio does not do). Waits for writability when the buffer is full.
void QuerySession::write_chunk() {
  while (chunk_sent_ < chunk_.size()) {
    const std::string_view rest = std::string_view(chunk_).substr(chunk_sent_);
    const ssize_t n = send_with_fd(socket_.native_handle(), rest, chunk_fd_ ? chunk_fd_.get() : -1);
    if (n > 0) {
      chunk_fd_.reset();
      chunk_sent_ += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      socket_.async_wait(asio::socket_base::wait_write, [self = shared_from_this()](error_code ec) {
        if (self->closed_) return;
        if (ec) return self->close();
        self->write_chunk();
      });
      return;
    }
    return close();  // EPIPE, ECONNRESET: the client left
  }
  timer_.cancel();
  write_next();
}

void QuerySession::refuse(QueryErrorCode code, const std::string& message) {
  outcome_(peer_, false, message);
  close_after_reply_ = true;
  line_.clear();
  send_reply(QueryReply::line(query_error_line({code, message}), false));
}

void QuerySession::close() {
  if (closed_) return;
  closed_ = true;
  error_code ignored;
  timer_.cancel();
  socket_.shutdown(asio::socket_base::shutdown_both, ignored);
  socket_.close(ignored);
}

}  // namespace coredumpd
