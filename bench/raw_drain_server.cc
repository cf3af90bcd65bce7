// raw-drain-server: the smallest server that speaks the core_pattern "@@" protocol, used by the
// benchmark as the reference coredumpd is compared against (see bench/README.md).
//
//   raw-drain-server --socket PATH [--log FILE] [--write-file DIR] [--idle-timeout-ms N]
//
// Per connection (one thread each, so any number of crashers dump at once):
//   1. read the coredump_req (peek its size, read the known prefix, discard the rest; docs/PROTOCOL.md §4.2),
//   2. send the ack protocol::negotiate() builds for KERNEL|WAIT, read the 4-byte marker,
//   3. read the ELF core to EOF in 1 MiB chunks: discard it, or with --write-file append it to
//      DIR/<seq>.core,
//   4. close the connection (this releases the WAIT-parked task), then fsync and close the file.
// One JSON line per connection goes to --log (default stdout), with CLOCK_REALTIME and
// CLOCK_MONOTONIC nanosecond timestamps (see LogLine). Nothing is validated beyond the protocol:
// no peer check, no metadata, no compression — that is the point of a reference.
//
// It is not dumpable (a crash of the server would make the kernel wait on its own socket, docs/PROTOCOL.md
// §3.4) and stops on SIGINT/SIGTERM.
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "protocol/negotiate.h"
#include "protocol/request.h"
#include "protocol/wire.h"
#include "util/unique_fd.h"

namespace proto = coredumpd::protocol;

namespace {

constexpr std::size_t kReadChunk = 1 << 20;  // same chunk size as the daemon's drain loop
constexpr int kListenBacklog = 4096;         // a full backlog silently loses dumps (docs/PROTOCOL.md §2.4)

struct Options {
  std::string socket_path;
  std::string log_path;       // empty: stdout
  std::string write_dir;      // empty: discard the core
  int idle_timeout_ms = 30000;  // bound on every blocking read or write of a connection
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "raw-drain-server: %s\n"
               "usage: raw-drain-server --socket PATH [--log FILE] [--write-file DIR] [--idle-timeout-ms N]\n",
               why.c_str());
  std::exit(2);
}

Options parse_options(int argc, char** argv) {
  Options o;
  CLI::App app;
  app.set_help_flag();  // usage() is the help
  app.add_option("--socket", o.socket_path)->required();
  app.add_option("--log", o.log_path);
  app.add_option("--write-file", o.write_dir);
  app.add_option("--idle-timeout-ms", o.idle_timeout_ms);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    usage(e.what());
  }
  if (o.socket_path.empty()) usage("--socket is required");
  return o;
}

std::int64_t now_ns(clockid_t clock) {
  timespec ts{};
  ::clock_gettime(clock, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::int64_t mono_ns() { return now_ns(CLOCK_MONOTONIC); }

/// Everything logged about one connection. Monotonic times are 0 when the step was not reached.
struct LogLine {
  std::uint64_t seq = 0;
  std::int64_t pid = -1;          // SO_PEERCRED pid: the crashing TGID (docs/PROTOCOL.md §3.2)
  std::int64_t accept_rt_ns = 0;  // CLOCK_REALTIME at accept
  std::int64_t accept_mono_ns = 0;
  std::int64_t ack_mono_ns = 0;     // ack fully sent
  std::int64_t marker_mono_ns = 0;  // marker read
  std::int64_t eof_mono_ns = 0;     // EOF of the core stream
  std::int64_t close_mono_ns = 0;   // connection closed: the task is released
  std::int64_t close_rt_ns = 0;
  std::int64_t stored_mono_ns = 0;  // --write-file: file fsynced and closed; else = close
  std::uint64_t bytes = 0;          // core bytes read after the marker
  std::int64_t marker = -1;
  std::string error;                // empty on success
};

/// Appends lines to the log with one write(2) each, so lines of concurrent connections never mix.
class Log {
 public:
  explicit Log(const std::string& path) {
    if (path.empty()) return;
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) usage("cannot open log " + path + ": " + std::strerror(errno));
  }

  void write(const LogLine& l) {
    char buf[1024];
    const int n = std::snprintf(
        buf, sizeof(buf),
        "{\"seq\":%llu,\"pid\":%lld,\"accept_rt_ns\":%lld,\"accept_mono_ns\":%lld,\"ack_mono_ns\":%lld,"
        "\"marker_mono_ns\":%lld,\"eof_mono_ns\":%lld,\"close_mono_ns\":%lld,\"close_rt_ns\":%lld,"
        "\"stored_mono_ns\":%lld,\"bytes\":%llu,\"marker\":%lld,\"error\":\"%s\"}\n",
        static_cast<unsigned long long>(l.seq), static_cast<long long>(l.pid),
        static_cast<long long>(l.accept_rt_ns), static_cast<long long>(l.accept_mono_ns),
        static_cast<long long>(l.ack_mono_ns), static_cast<long long>(l.marker_mono_ns),
        static_cast<long long>(l.eof_mono_ns), static_cast<long long>(l.close_mono_ns),
        static_cast<long long>(l.close_rt_ns), static_cast<long long>(l.stored_mono_ns),
        static_cast<unsigned long long>(l.bytes), static_cast<long long>(l.marker), json_safe(l.error).c_str());
    const std::lock_guard lock(mu_);
    (void)!::write(fd_, buf, static_cast<std::size_t>(std::min(n, static_cast<int>(sizeof(buf)) - 1)));
  }

 private:
  // Our own error texts only: replace what would break a JSON string (quote, backslash, controls).
  static std::string json_safe(std::string s) {
    for (char& c : s)
      if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) c = '\'';
    return s;
  }

  int fd_ = STDOUT_FILENO;
  std::mutex mu_;
};

/// Reads exactly buf.size() bytes (fewer only at EOF). Returns bytes read, -1 on error (errno set).
ssize_t read_full(int fd, std::span<std::byte> buf, int flags = 0) {
  std::size_t got = 0;
  while (got < buf.size()) {
    const ssize_t n = ::recv(fd, buf.data() + got, buf.size() - got, flags);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    got += static_cast<std::size_t>(n);
  }
  return static_cast<ssize_t>(got);
}

bool write_full(int fd, std::span<const std::byte> data) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

/// Steps 1–2: request, ack, marker. Returns an error text, empty on REQACK.
std::string handshake(int conn, LogLine& line) {
  std::array<std::byte, 4> first4{};
  if (read_full(conn, first4, MSG_PEEK | MSG_WAITALL) != 4) return errno_text("peeking coredump_req");
  std::string error;
  const auto layout = proto::plan_request_read(proto::peek_size_field(first4), error);
  if (!layout) return error;
  std::array<std::byte, sizeof(proto::coredump_req)> known{};
  if (read_full(conn, std::span(known.data(), layout->known)) != static_cast<ssize_t>(layout->known))
    return errno_text("reading coredump_req");
  std::vector<std::byte> rest(layout->discard);
  if (read_full(conn, rest) != static_cast<ssize_t>(rest.size())) return errno_text("reading coredump_req tail");
  const auto req = proto::decode_request(std::span(known.data(), layout->known));

  proto::Wants wants;
  wants.mode = proto::Mode::Kernel;
  wants.wait = true;
  const auto negotiation = proto::negotiate(req, wants, proto::COREDUMP_CLOSE_FILES_DEFAULT, error);
  if (!negotiation) return error;
  if (!write_full(conn, proto::ack_bytes(negotiation->ack))) return errno_text("sending coredump_ack");
  line.ack_mono_ns = mono_ns();

  std::array<std::byte, proto::MARKER_SIZE> marker{};
  if (read_full(conn, marker) != static_cast<ssize_t>(marker.size())) return errno_text("reading the marker");
  line.marker_mono_ns = mono_ns();
  std::uint32_t value = 0;
  std::memcpy(&value, marker.data(), sizeof(value));
  line.marker = value;
  if (value != static_cast<std::uint32_t>(proto::Marker::REQACK)) return "kernel refused the ack";
  return {};
}

/// Step 3: reads the core to EOF, appending it to `file_fd` when >= 0. Returns an error text.
std::string drain(int conn, int file_fd, LogLine& line) {
  std::vector<std::byte> buf(kReadChunk);
  while (true) {
    const ssize_t n = ::read(conn, buf.data(), buf.size());
    if (n == 0) return {};
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno_text("reading the core");
    }
    line.bytes += static_cast<std::uint64_t>(n);
    if (file_fd >= 0 && !write_full(file_fd, std::span(buf.data(), static_cast<std::size_t>(n))))
      return errno_text("writing the core file");
  }
}

/// Opens DIR/<seq>.core for writing, or returns none and sets `error`.
coredumpd::UniqueFd open_core_file(const std::string& dir, std::uint64_t seq, std::string& error) {
  const std::string path = dir + "/" + std::to_string(seq) + ".core";
  coredumpd::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!fd) error = errno_text(("creating " + path).c_str());
  return fd;
}

void set_timeouts(int conn, int idle_timeout_ms) {
  timeval tv{};
  tv.tv_sec = idle_timeout_ms / 1000;
  tv.tv_usec = (idle_timeout_ms % 1000) * 1000;
  ::setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(conn, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/// One connection, start to end.
void serve(coredumpd::UniqueFd conn, LogLine line, const Options& options, Log& log) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(conn.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) line.pid = cred.pid;
  set_timeouts(conn.get(), options.idle_timeout_ms);

  line.error = handshake(conn.get(), line);
  coredumpd::UniqueFd file;
  if (line.error.empty() && !options.write_dir.empty())
    file = open_core_file(options.write_dir, line.seq, line.error);
  if (line.error.empty()) {
    line.error = drain(conn.get(), file.get(), line);
    line.eof_mono_ns = mono_ns();
  }
  conn.reset();  // releases the WAIT-parked task
  line.close_mono_ns = mono_ns();
  line.close_rt_ns = now_ns(CLOCK_REALTIME);
  if (file) {
    if (::fsync(file.get()) != 0 && line.error.empty()) line.error = errno_text("fsync");
    file.reset();
  }
  line.stored_mono_ns = mono_ns();
  log.write(line);
}

coredumpd::UniqueFd listen_on(const std::string& path) {
  coredumpd::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) usage(errno_text("socket"));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) usage("socket path too long");
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  ::unlink(path.c_str());
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) usage(errno_text("bind"));
  ::chmod(path.c_str(), 0600);
  if (::listen(fd.get(), kListenBacklog) != 0) usage(errno_text("listen"));
  return fd;
}

std::atomic<bool> g_stop{false};

void on_signal(int) { g_stop = true; }

void install_signal_handlers() {
  struct sigaction sa{};
  sa.sa_handler = on_signal;  // no SA_RESTART: accept() returns EINTR
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
}

}  // namespace

int main(int argc, char** argv) {
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  const Options options = parse_options(argc, argv);
  Log log(options.log_path);
  install_signal_handlers();
  coredumpd::UniqueFd listener = listen_on(options.socket_path);
  std::fprintf(stderr, "raw-drain-server: listening on %s (%s)\n", options.socket_path.c_str(),
               options.write_dir.empty() ? "discard" : ("write to " + options.write_dir).c_str());

  std::uint64_t seq = 0;
  while (!g_stop) {
    coredumpd::UniqueFd conn(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!conn) {
      if (errno != EINTR) {
        std::fprintf(stderr, "raw-drain-server: accept: %s\n", std::strerror(errno));
        std::this_thread::sleep_for(std::chrono::milliseconds(10));  // EMFILE and the like: do not spin
      }
      continue;
    }
    LogLine line;
    line.accept_mono_ns = mono_ns();
    line.accept_rt_ns = now_ns(CLOCK_REALTIME);
    line.seq = ++seq;
    std::thread(serve, std::move(conn), std::move(line), std::cref(options), std::ref(log)).detach();
  }
  listener.reset();
  ::unlink(options.socket_path.c_str());
  // Detached threads still draining are cut short by exit; the caller stops us only when idle.
  return 0;
}
