// The fake kernel's rule table (tests/fake_kernel/kernel_rules.h) and the daemon's
// protocol::kernel_ack_verdict(), held against the running kernel: core_pattern points at a socket
// this test serves itself (no coredumpd), the crasher crashes once per case, and the test answers
// its coredump_req with a chosen ack, valid or deliberately invalid, then reads the 4-byte marker
// the kernel writes back. Each marker must be what both statements of the rules predict, and what
// follows it (EOF, or ECONNRESET for an ack left unread) must match the rule's stage.
//
// Every wait is bounded: the kernel waits for an ack forever, so each case always sends its ack
// (or closes), and the crasher is SIGKILLed if a case fails half-way. Needs root and Linux 6.17+.
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "protocol/negotiate.h"
#include "protocol/wire.h"
#include "tests/fake_kernel/kernel_rules.h"
#include "tests/fake_kernel/scoped_fd.h"
#include "tests/e2e/real_kernel_fixture.h"
#include "tests/support/test_support.h"

namespace coredumpd::test {
namespace {

namespace kr = coredumpd::fake_kernel::kernel_rules;
namespace proto = coredumpd::protocol;
using coredumpd::fake_kernel::ScopedFd;

constexpr auto kCaseBound = 20s;       // accept, request, marker and drain of one case
constexpr int kIoTimeoutSeconds = 10;  // SO_RCVTIMEO/SO_SNDTIMEO on the connection

// One ack to send: its fields, and how many bytes of it go out (may differ from `size`).
struct AckCase {
  const char* name;
  std::uint32_t size;
  std::uint32_t spare;
  std::uint64_t mask;
  std::uint32_t bytes_sent;
};

std::vector<std::byte> wire_of(const AckCase& c) {
  std::vector<std::byte> buf(std::max<std::size_t>(c.bytes_sent, kr::ACK_SIZE_VER1), std::byte{0});
  std::memcpy(buf.data(), &c.size, 4);
  std::memcpy(buf.data() + kr::ACK_OFF_SPARE, &c.spare, 4);
  std::memcpy(buf.data() + kr::ACK_OFF_MASK, &c.mask, 8);
  buf.resize(c.bytes_sent);
  return buf;
}

constexpr std::uint64_t K = kr::KERNEL, U = kr::USERSPACE, R = kr::REJECT, W = kr::WAIT;

const std::vector<AckCase> kCases{
    {"valid KERNEL", 16, 0, K, 16},
    {"valid REJECT|WAIT", 16, 0, R | W, 16},
    {"size field 0", 0, 0, K, 16},
    {"size 8", 8, 0, R | W, 8},
    {"size 15", 15, 0, K, 15},
    {"size 17 > size_ack", 17, 0, K, 17},
    {"size 24 (VER1) > size_ack", 24, 0, K, 24},
    {"size field 4096, 16 bytes sent", 4096, 0, K, 16},
    {"unknown flag bit 63", 16, 0, K | (1ULL << 63), 16},
    {"flag not offered: RECORDS", 16, 0, K | kr::RECORDS, 16},
    {"flag not offered: CLOSE_FILES 0x80", 16, 0, K | 0x80, 16},
    {"two modes KERNEL|REJECT", 16, 0, K | R, 16},
    {"three modes and WAIT", 16, 0, K | U | R | W, 16},
    {"no mode: WAIT alone", 16, 0, W, 16},
    {"mask 0", 16, 0, 0, 16},
    {"spare 1", 16, 1, K, 16},
    {"spare 0x80000000", 16, 0x80000000u, U, 16},
    {"order: spare and two modes", 16, 1, K | U, 16},
    {"order: flag not offered and no mode", 16, 0, kr::RECORDS, 16},
    {"order: flag not offered and spare", 16, 1, K | (1ULL << 63), 16},
};

ScopedFd listen_on(const std::string& path) {
  ScopedFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
  if (!fd.valid() || ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(fd.get(), 8) != 0) {
    return ScopedFd();
  }
  return fd;
}

// Kills and reaps the crasher unless the case reaped it already.
struct Crasher {
  pid_t pid = -1;
  std::optional<ExitStatus> status;
  ~Crasher() {
    if (pid > 0 && !status) {
      ::kill(pid, SIGKILL);
      wait_for(pid, 10s);
    }
  }
};

// Accepts the crasher's connection; connections of other crashing processes are closed unanswered
// (the kernel then sends no marker and dumps nothing for them).
ScopedFd accept_crasher(int listener, pid_t crasher, std::string& error) {
  const auto deadline = std::chrono::steady_clock::now() + kCaseBound;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{listener, POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (::poll(&p, 1, static_cast<int>(std::max<long long>(left.count(), 1))) <= 0) break;
    ScopedFd conn(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
    if (!conn.valid()) continue;
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (::getsockopt(conn.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.pid != crasher) {
      std::fprintf(stderr, "ack oracle: closing a connection from pid %d (not the crasher)\n", cred.pid);
      continue;
    }
    const timeval tv{kIoTimeoutSeconds, 0};
    ::setsockopt(conn.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ::setsockopt(conn.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    return conn;
  }
  error = "the crasher did not connect within " + std::to_string(kCaseBound.count()) + " s";
  return ScopedFd();
}

// recv() of exactly buf.size() bytes, bounded by SO_RCVTIMEO. Returns bytes read; errno_out the
// error (0 on EOF or success).
std::size_t recv_exact(int fd, std::span<std::byte> buf, int flags, int& errno_out) {
  errno_out = 0;
  const ssize_t n = ::recv(fd, buf.data(), buf.size(), MSG_WAITALL | flags);
  if (n < 0) {
    errno_out = errno;
    return 0;
  }
  return static_cast<std::size_t>(n);
}

bool is_6_17_or_6_18() {
  utsname u{};
  ::uname(&u);
  return std::strncmp(u.release, "6.17.", 5) == 0 || std::strncmp(u.release, "6.18.", 5) == 0;
}

struct Observed {
  std::uint32_t marker = 0;
  std::string after;  // "EOF", "ECONNRESET", or what else the next read gave
};

// One crash: request in, `c` out, marker back. Fills `seen`; returns false (with ADD_FAILUREs) if
// the kernel did not get that far.
bool run_case(int listener, const AckCase& c, const std::string& log, Observed& seen) {
  Crasher crasher;
  crasher.pid = spawn({CRASHER_BIN}, log);
  std::string error;
  ScopedFd conn = accept_crasher(listener, crasher.pid, error);
  if (!conn.valid()) {
    ADD_FAILURE() << error;
    return false;
  }

  // The request: its size field first, then the rest (the kernel sends it in one piece).
  std::array<std::byte, 4096> req_buf{};
  int err = 0;
  if (recv_exact(conn.get(), std::span(req_buf).first(4), MSG_PEEK, err) != 4) {
    ADD_FAILURE() << "no coredump_req size field: " << std::strerror(err);
    return false;
  }
  std::uint32_t req_size = 0;
  std::memcpy(&req_size, req_buf.data(), 4);
  if (req_size < proto::COREDUMP_REQ_SIZE_VER0 || req_size >= req_buf.size() ||
      recv_exact(conn.get(), std::span(req_buf).first(req_size), 0, err) != req_size) {
    ADD_FAILURE() << "bad coredump_req (size " << req_size << "): " << std::strerror(err);
    return false;
  }
  proto::coredump_req req{};
  std::memcpy(&req, req_buf.data(), std::min<std::size_t>(req_size, sizeof(req)));
  if (is_6_17_or_6_18()) {
    EXPECT_EQ(req.size, kr::REQUEST_6_18.size);
    EXPECT_EQ(req.size_ack, kr::REQUEST_6_18.size_ack);
    EXPECT_EQ(req.mask, kr::REQUEST_6_18.mask);
  }

  // What the two statements of the rules predict for this request and ack.
  const std::vector<std::byte> wire = wire_of(c);
  const std::uint64_t close_bit = proto::COREDUMP_CLOSE_FILES_DEFAULT;
  const kr::Offer offer{req.size_ack, req.mask, req.memory_types_mask, close_bit};
  const std::optional<kr::Verdict> by_size = kr::size_verdict(offer, c.size);
  const kr::Verdict oracle = by_size ? *by_size : kr::ack_verdict(offer, wire);
  const std::optional<proto::Marker> daemon_size = proto::kernel_size_verdict(req, c.size);
  const proto::Marker daemon = daemon_size ? *daemon_size : proto::kernel_ack_verdict(req, wire, close_bit);

  if (::send(conn.get(), wire.data(), wire.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(wire.size())) {
    ADD_FAILURE() << "sending the ack failed: " << std::strerror(errno);
    return false;
  }
  std::uint32_t marker = 0;
  if (recv_exact(conn.get(), std::as_writable_bytes(std::span(&marker, 1)), 0, err) != 4) {
    ADD_FAILURE() << "no marker from the kernel: " << (err ? std::strerror(err) : "EOF");
    return false;
  }
  seen.marker = marker;

  // What follows the marker: the core (valid KERNEL ack, drained to EOF), else EOF or ECONNRESET.
  std::array<std::byte, 65536> sink{};
  ssize_t n = 0;
  std::uint64_t streamed = 0;
  while ((n = ::recv(conn.get(), sink.data(), sink.size(), 0)) > 0) streamed += static_cast<std::uint64_t>(n);
  seen.after = n == 0 ? "EOF" : (errno == ECONNRESET ? "ECONNRESET" : std::strerror(errno));
  conn.reset();
  crasher.status = wait_for(crasher.pid, kCaseBound);

  const auto mark = static_cast<kr::Mark>(marker);
  EXPECT_EQ(marker, static_cast<std::uint32_t>(oracle.mark))
      << "kernel answered " << kr::mark_name(mark) << ", kernel_rules predicted " << kr::mark_name(oracle.mark)
      << (oracle.rule ? " (rule " + std::string(oracle.rule->id) + ": " + std::string(oracle.rule->source) + ")" : "");
  EXPECT_EQ(marker, static_cast<std::uint32_t>(daemon))
      << "kernel answered " << kr::mark_name(mark) << ", kernel_ack_verdict predicted "
      << kr::mark_name(static_cast<kr::Mark>(daemon));
  // A size-field refusal leaves the ack unread, which turns our next read into ECONNRESET.
  const bool unread = oracle.rule && oracle.rule->stage == kr::Stage::SizeField;
  EXPECT_EQ(seen.after, unread ? "ECONNRESET" : "EOF");
  EXPECT_TRUE(crasher.status->exited) << "the crasher did not end within the bound";
  EXPECT_TRUE(crasher.status->signaled());
  // Only an accepted KERNEL ack dumps; a refusal and REJECT leave WCOREDUMP clear.
  const bool dumped = mark == kr::Mark::REQACK && (c.mask & K);
  EXPECT_EQ(crasher.status->core_dumped(), dumped);
  if (dumped) {
    EXPECT_GT(streamed, 0u);
  }
  return true;
}

TEST(RealKernelAckOracle, EveryAckGetsTheMarkerTheRulesPredict) {
  SKIP_WITHOUT_REAL_KERNEL("real-kernel test");
  TempDir dir;
  const std::string path = dir / "ack.sock";
  ScopedFd listener = listen_on(path);
  ASSERT_TRUE(listener.valid()) << "listen on " << path << ": " << std::strerror(errno);
  CorePatternLock pattern("@@" + path);

  std::string table;
  for (const AckCase& c : kCases) {
    SCOPED_TRACE(c.name);
    Observed seen;
    const bool ran = run_case(listener.get(), c, dir / "crasher.log", seen);
    char line[200];
    std::snprintf(line, sizeof(line), "  %-38s -> %s%s\n", c.name,
                  ran ? std::string(kr::mark_name(static_cast<kr::Mark>(seen.marker))).c_str() : "(no marker)",
                  ran ? (", then " + seen.after).c_str() : "");
    table += line;
  }
  std::printf("markers from the running kernel:\n%s", table.c_str());
}

}  // namespace
}  // namespace coredumpd::test
