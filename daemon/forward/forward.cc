#include "daemon/forward/forward.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <cerrno>
#include <cstring>
#include <memory>

#include "daemon/proc/proc_dir.h"
#include "protocol/marker.h"
#include "protocol/negotiate.h"
#include "util/poll.h"

namespace coredumpd {

namespace asio = boost::asio;
using boost::system::error_code;

UniqueFd open_forward_socket(int pidfd, pid_t pid, const std::string& path, std::string& error) {
  auto proc = ProcDir::open(pidfd, pid, error);
  if (!proc) return {};
  // The root link is followed here on purpose: it is the kernel's own handle on the task's root.
  UniqueFd root(::openat(proc->dirfd(), "root", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root) {
    error = "/proc/" + std::to_string(pid) + "/root: " + std::strerror(errno);
    return {};
  }
  if (!proc->still_ours()) {
    error = "/proc/" + std::to_string(pid) + "/root: the process is gone";
    return {};
  }
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  const std::string rel = path.substr(path.find_first_not_of('/'));
  UniqueFd fd(static_cast<int>(::syscall(SYS_openat2, root.get(), rel.c_str(), &how, sizeof(how))));
  if (!fd) {
    error = path + " in the root of pid " + std::to_string(pid) + ": " + std::strerror(errno) +
            (errno == ELOOP ? " (symlinks are not followed)" : "");
    return {};
  }
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
    error = path + " in the root of pid " + std::to_string(pid) + ": not a socket";
    return {};
  }
  return fd;
}

bool send_marker(int socket, std::uint32_t marker) {
  return ::send(socket, &marker, sizeof(marker), MSG_NOSIGNAL | MSG_DONTWAIT) == static_cast<ssize_t>(sizeof(marker));
}

namespace {

using Socket = asio::local::stream_protocol::socket;

// One handshake in flight; kept alive by its pending handlers.
class Handshake : public std::enable_shared_from_this<Handshake> {
 public:
  Handshake(asio::io_context& io, UniqueFd path_fd, const protocol::coredump_req& req, std::uint64_t close_files_bit,
            ReceiverHandshake::Done done)
      : socket_(io), timer_(io), path_fd_(std::move(path_fd)), req_(req), close_files_bit_(close_files_bit),
        done_(std::move(done)) {}

  void start(std::chrono::steady_clock::time_point deadline) {
    timer_.expires_at(deadline);
    timer_.async_wait([self = shared_from_this()](error_code ec) {
      if (!ec) self->finish("the receiver did not complete the handshake within the handshake deadline");
    });
    error_code open_ec;
    socket_.open(asio::local::stream_protocol(), open_ec);
    if (open_ec) return finish("socket: " + open_ec.message());
    // Names exactly the inode open_forward_socket() resolved; no path is looked up again.
    const asio::local::stream_protocol::endpoint ep("/proc/self/fd/" + std::to_string(path_fd_.get()));
    socket_.async_connect(ep, [self = shared_from_this()](error_code ec) {
      self->path_fd_.reset();
      if (ec) return self->finish("connect: " + ec.message());
      self->send_request();
    });
  }

 private:
  void send_request() {
    std::memcpy(wire_.data(), &req_, sizeof(req_));
    asio::async_write(socket_, asio::buffer(wire_.data(), req_.size), [self = shared_from_this()](error_code ec, std::size_t) {
      if (ec) return self->finish("sending the coredump_req: " + ec.message());
      self->read_ack_size();
    });
  }

  // docs/PROTOCOL.md §4.5 steps 1-2: the size field decides MINSIZE/MAXSIZE before the rest is read.
  void read_ack_size() {
    asio::async_read(socket_, asio::buffer(ack_.data(), 4), [self = shared_from_this()](error_code ec, std::size_t) {
      if (ec) return self->finish("no coredump_ack: " + ec.message());
      std::uint32_t size = 0;
      std::memcpy(&size, self->ack_.data(), 4);
      if (const auto verdict = protocol::kernel_size_verdict(self->req_, size))
        return self->refuse(*verdict, "ack size " + std::to_string(size));
      self->read_ack_rest(size);
    });
  }

  void read_ack_rest(std::uint32_t size) {
    asio::async_read(socket_, asio::buffer(ack_.data() + 4, size - 4), [self = shared_from_this(), size](error_code ec, std::size_t) {
      if (ec) return self->finish("truncated coredump_ack: " + ec.message());
      const auto wire = std::span<const std::byte>(self->ack_.data(), size);
      const auto verdict = protocol::kernel_ack_verdict(self->req_, wire, self->close_files_bit_);
      if (verdict != protocol::Marker::REQACK) return self->refuse(verdict, "ack");
      ReceiverLink link;
      std::memcpy(&link.ack, self->ack_.data(), size);
      link.request = self->req_;
      self->timer_.cancel();
      link.socket.reset(self->socket_.release());
      self->complete(std::move(link), "");
    });
  }

  void refuse(protocol::Marker m, const std::string& what) {
    send_marker(socket_.native_handle(), static_cast<std::uint32_t>(m));
    const auto r = protocol::interpret_marker(static_cast<std::uint32_t>(m));
    finish("the receiver's " + what + " is invalid (" + std::string(r.name) + ": " + r.reason + ")");
  }

  void finish(const std::string& error) {
    timer_.cancel();
    error_code ignored;
    socket_.close(ignored);
    complete(std::nullopt, error);
  }

  void complete(std::optional<ReceiverLink> link, const std::string& error) {
    if (!done_) return;
    auto done = std::move(done_);
    done_ = nullptr;
    done(std::move(link), error);
  }

  Socket socket_;
  asio::steady_timer timer_;
  UniqueFd path_fd_;
  protocol::coredump_req req_;
  std::uint64_t close_files_bit_;
  ReceiverHandshake::Done done_;
  std::array<std::byte, sizeof(protocol::coredump_req)> wire_{};
  std::array<std::byte, sizeof(protocol::coredump_ack)> ack_{};
};

}  // namespace

void ReceiverHandshake::start(asio::io_context& io, UniqueFd socket_path_fd, const protocol::coredump_req& request,
                              std::uint64_t close_files_bit, std::chrono::steady_clock::time_point deadline, Done done) {
  std::make_shared<Handshake>(io, std::move(socket_path_fd), request, close_files_bit, std::move(done))->start(deadline);
}

Relay::Relay(UniqueFd socket, std::chrono::milliseconds idle) : socket_(std::move(socket)), idle_(idle) {}

void Relay::fail(const std::string& why) {
  if (error_.empty()) error_ = why;
  socket_.reset();
}

void Relay::send(std::span<const std::byte> bytes) {
  while (alive() && !bytes.empty()) {
    const ssize_t n = ::send(socket_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      bytes = bytes.subspan(static_cast<std::size_t>(n));
      sent_ += static_cast<std::uint64_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) return fail("the receiver stopped taking the stream after " + std::to_string(sent_) +
                                              " bytes: " + std::strerror(errno));
    const PollResult waited = poll_for(socket_.get(), POLLOUT, idle_);
    if (waited.status == PollStatus::Timeout)
      return fail("the receiver took no bytes for " + std::to_string(idle_.count()) + " ms");
    if (waited.status == PollStatus::Failed) return fail(std::string("poll: ") + std::strerror(waited.error));
  }
}

bool Relay::finish(std::chrono::milliseconds timeout) {
  if (!alive()) return false;
  if (::shutdown(socket_.get(), SHUT_WR) != 0) {
    fail(std::string("shutdown: ") + std::strerror(errno));
    return false;
  }
  // The receiver hangs up once it has drained everything (it never sends bytes after its ack).
  const auto until = std::chrono::steady_clock::now() + timeout;
  std::array<char, 256> buf{};
  while (true) {
    const PollResult waited = poll_until(socket_.get(), POLLIN, until);
    if (waited.status == PollStatus::Timeout) {
      fail("the receiver did not hang up within " + std::to_string(timeout.count()) + " ms after the stream");
      return false;
    }
    if (waited.status == PollStatus::Failed) {
      fail(std::string("poll: ") + std::strerror(waited.error));
      return false;
    }
    const ssize_t n = ::recv(socket_.get(), buf.data(), buf.size(), MSG_DONTWAIT);
    if (n == 0) break;
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) {
      fail(std::string("the receiver's hang-up: ") + std::strerror(errno));
      return false;
    }
    fail("the receiver sent " + std::to_string(n) + " bytes after its ack (protocol violation)");
    return false;
  }
  socket_.reset();
  return true;
}

void Relay::abandon(const std::string& why) { fail(why); }

}  // namespace coredumpd
