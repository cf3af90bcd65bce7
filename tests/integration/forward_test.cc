// Forwarding (policy action "forward", daemon/forward/forward.h) through the fake kernel: a host coredumpd
// (--allow-unverified-peers, since the fake kernel's pidfd never shows PIDFD_COREDUMPED) forwards to
// a receiver socket under a temp dir. The peer is this test process, whose /proc/<pid>/root is "/",
// so an absolute path under the temp dir plays a path inside the container's root.
//
// The receiving coredumpd runs in a new pid namespace (unshare --pid --fork): the host daemon is then
// outside its pid namespace (SO_PEERCRED pid 0), exactly as a host forwarder is for a coredumpd in a
// container, so its accept_forwarded check is the real one (no --allow-unverified-peers there).
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>

#include "store/index.h"
#include "tests/fake_kernel/expect_released.h"
#include "tests/fake_kernel/fake_kernel.h"
#include "tests/fake_kernel/scripted_server.h"
#include "tests/support/test_support.h"

using namespace coredumpd;
using namespace coredumpd::test;
namespace fk = coredumpd::fake_kernel;
namespace cp = coredumpd::protocol;

namespace {

// One coredumpd with its store and config in `dir`/`name`.*.
struct Instance {
  std::string socket, store, log;
  std::unique_ptr<Daemon> daemon;

  std::vector<DumpRecord> records() const {
    try {
      return Index(store, false).list();
    } catch (const IndexError&) {
      return {};
    }
  }
  // The single record, once it left InProgress.
  std::optional<DumpRecord> only_record() const {
    std::optional<DumpRecord> found;
    wait_until(
        [&] {
          const auto all = records();
          if (all.size() == 1 && all[0].state != DumpState::InProgress) found = all[0];
          return found.has_value();
        },
        15s);
    return found;
  }
  std::optional<std::vector<std::byte>> core(const DumpRecord& r, const std::string& out) const {
    const auto [st, text] = run_capture({DUMPCTL_BIN, "--store", store, "dump", r.id, "-o", out});
    if (st.exit_code() != 0) return std::nullopt;
    const auto bytes = read_file(out);
    if (!bytes) return std::nullopt;
    const auto* p = reinterpret_cast<const std::byte*>(bytes->data());
    return std::vector<std::byte>(p, p + bytes->size());
  }
};

class Forward : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "the receiver runs in a new pid namespace: needs root";
    dir_ = std::make_unique<TempDir>();
    std::filesystem::create_directories(*dir_ / "root/run");
  }
  void TearDown() override {
    // unshare ignores SIGTERM while it waits for its child: stop the receiver itself (it is the
    // init of its pid namespace, and handles SIGTERM), and unshare exits with it.
    if (receiver_.daemon && receiver_.daemon->pid() > 0) {
      const auto pid = std::to_string(receiver_.daemon->pid());
      if (const auto children = read_file("/proc/" + pid + "/task/" + pid + "/children"); children && !children->empty())
        ::kill(static_cast<pid_t>(std::stol(*children)), SIGTERM);
    }
    if (!HasFailure()) return;
    for (const auto* i : {&host_, &receiver_})
      if (i->daemon) std::fprintf(stderr, "%s log:\n%s\n", i->socket.c_str(), i->daemon->log().c_str());
  }

  // The receiver: a coredumpd in its own pid namespace listening at `socket`.
  void start_receiver(const std::string& socket, const std::string& config) {
    receiver_ = start(socket, "receiver", config, {"/usr/bin/unshare", "--pid", "--fork", "--kill-child", "--"}, {});
  }
  // The host: forwards every crash to `forward_socket`.
  void start_host(const std::string& forward_socket, const std::string& more_config = "") {
    host_ = start(*dir_ / "host.sock", "host",
                  R"({)" + more_config + R"("defaults": {"action": "forward", "forward_socket": ")" + forward_socket + R"("}})",
                  {}, {"--allow-unverified-peers"});
  }

  Instance start(const std::string& socket, const std::string& name, const std::string& config,
                 const std::vector<std::string>& launcher, std::vector<std::string> args) {
    Instance i;
    i.socket = socket;
    i.store = *dir_ / (name + ".store");
    i.log = *dir_ / (name + ".log");
    std::ofstream(*dir_ / (name + ".json")) << config;
    args.insert(args.end(), {"--config", *dir_ / (name + ".json")});
    i.daemon = std::make_unique<Daemon>(COREDUMPD_BIN, i.socket, i.store, i.log, args, launcher);
    return i;
  }

  fk::Options options(std::uint64_t size = 256 * 1024) {
    fk::Options o;
    o.socket_path = host_.socket;
    o.core = fk::CoreSource::pattern(size, 3, 4096, 7, true);
    o.timeout = std::chrono::milliseconds(15'000);
    return o;
  }

  static std::vector<std::byte> plain(const fk::CoreSource& core) {
    std::string error;
    return core.materialize(error).value();
  }

  // The host's record of a forward that fell back: the core stored here, byte-identical.
  void expect_fallback(const fk::Options& o, const std::string& why) {
    const auto r = host_.only_record();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->state, DumpState::Complete) << r->reason;
    EXPECT_EQ(r->extra["forward"]["outcome"], "fallback") << r->extra.dump();
    const auto error = r->extra["forward"].value("error", std::string());
    EXPECT_FALSE(error.empty());
    EXPECT_NE(error.find(why), std::string::npos) << error;
    EXPECT_EQ(host_.core(*r, *dir_ / "host.core"), plain(o.core));
    EXPECT_TRUE(wait_until([&] { return host_.daemon->log().find("forwarding to") != std::string::npos; }, 5s))
        << "the fallback is logged with its reason";
  }

  std::string inner_socket() const { return *dir_ / "root/run/coredump.sock"; }

  std::unique_ptr<TempDir> dir_;
  Instance host_, receiver_;
  ScopedCoreLimit core_limit_{~0ULL};
};

TEST_F(Forward, ReceiverStoresTheExactCoreAndTheHostKeepsAForwardedRecord) {
  start_receiver(inner_socket(), R"({"accept_forwarded": true})");
  start_host(inner_socket());
  auto o = options();
  const auto res = fk::run(o);
  ASSERT_TRUE(fk::task_released(res));
  EXPECT_EQ(res.ack->mask, cp::COREDUMP_KERNEL) << "the receiver's choice (no WAIT for a forwarded crash)";
  EXPECT_FALSE(res.server_sent_data);

  const auto inner = receiver_.only_record();
  ASSERT_TRUE(inner);
  EXPECT_EQ(inner->state, DumpState::Complete) << inner->reason;
  EXPECT_TRUE(inner->extra.contains("forwarded_from_host")) << inner->extra.dump();
  EXPECT_FALSE(inner->extra.value("unverified_peer", false));
  EXPECT_EQ(inner->core_size, o.core.size());
  EXPECT_EQ(receiver_.core(*inner, *dir_ / "inner.core"), plain(o.core));

  const auto host = host_.only_record();
  ASSERT_TRUE(host);
  EXPECT_EQ(host->state, DumpState::Forwarded) << host->reason;
  EXPECT_TRUE(host->path.empty());
  EXPECT_EQ(host->stored_size, 0u);
  EXPECT_EQ(host->extra["forward"]["socket"], inner_socket());
  EXPECT_EQ(host->extra["forward"]["outcome"], "delivered");
  EXPECT_EQ(host->extra["forward"]["bytes_relayed"], o.core.size());
  EXPECT_EQ(host->core_size, o.core.size());
  const auto [st, ls] = run_capture({"/bin/ls", "-A", host_.store});
  EXPECT_EQ(ls.find(".zst"), std::string::npos) << "no core kept on the host: " << ls;
}

// A NEXT kernel: the receiver chooses RECORDS+SPARSE, the host acks the kernel the same and relays
// the record stream verbatim; the receiver reassembles the plain core.
TEST_F(Forward, RecordStreamIsRelayedVerbatim) {
  start_receiver(inner_socket(), R"({"accept_forwarded": true})");
  start_host(inner_socket());
  auto o = options(2 << 20);
  o.mask = fk::MASK_NEXT;
  o.request_size = 32;
  o.size_ack = 24;
  const auto res = fk::run(o);
  ASSERT_TRUE(fk::task_released(res));
  EXPECT_TRUE(res.records_acked);
  EXPECT_TRUE(res.sparse_acked);
  const auto inner = receiver_.only_record();
  ASSERT_TRUE(inner);
  EXPECT_EQ(inner->state, DumpState::Complete) << inner->reason;
  EXPECT_EQ(inner->extra["negotiation"]["sparse"], "granted");
  EXPECT_EQ(receiver_.core(*inner, *dir_ / "inner.core"), plain(o.core));
  const auto host = host_.only_record();
  ASSERT_TRUE(host);
  EXPECT_EQ(host->state, DumpState::Forwarded);
  EXPECT_EQ(host->extra["forward"]["bytes_relayed"], res.bytes_streamed);
}

TEST_F(Forward, MissingReceiverSocketFallsBackToTheHostStore) {
  start_host(inner_socket());
  auto o = options();
  ASSERT_TRUE(fk::task_released(fk::run(o)));
  expect_fallback(o, "No such file or directory");
}

TEST_F(Forward, ReceiverWithoutAcceptForwardedRefusesTheForwarder) {
  start_receiver(inner_socket(), "{}");
  start_host(inner_socket());
  auto o = options();
  ASSERT_TRUE(fk::task_released(fk::run(o)));
  expect_fallback(o, "");  // the hang-up lands on the request or the ack read, whichever comes first
  EXPECT_TRUE(wait_until([&] { return receiver_.daemon->log().find("not a crashing task") != std::string::npos; }, 5s));
  EXPECT_TRUE(receiver_.records().empty());
}

TEST_F(Forward, ReceiverThatRejectsMakesTheHostStoreIt) {
  start_receiver(inner_socket(), R"({"accept_forwarded": true, "defaults": {"action": "reject"}})");
  start_host(inner_socket());
  auto o = options();
  ASSERT_TRUE(fk::task_released(fk::run(o)));
  expect_fallback(o, "REJECT");
  const auto inner = receiver_.only_record();
  ASSERT_TRUE(inner);
  EXPECT_EQ(inner->state, DumpState::Rejected) << "the receiver got REQACK for its REJECT, as from a kernel";
}

TEST_F(Forward, ReceiverClosingMidStreamMakesTheHostStoreIt) {
  fk::testing::ScriptedServer receiver([](fk::testing::ServerConn& c) {
    if (c.read_request().empty()) return;
    c.send(fk::testing::make_ack(16, cp::COREDUMP_KERNEL));
    if (!c.read_marker()) return;
    std::vector<std::byte> buf(64 * 1024);
    ::recv(c.fd(), buf.data(), buf.size(), MSG_WAITALL);
    c.close();
  });
  start_host(receiver.path());
  auto o = options(4 << 20);
  ASSERT_TRUE(fk::task_released(fk::run(o)));
  receiver.join();
  EXPECT_TRUE(receiver.accepted());
  expect_fallback(o, "stopped taking the stream");
}

// The host validates the receiver's ack with the kernel's rules: an ack with a bit the kernel never
// offered gets UNSUPPORTED and a hang-up; the host stores the crash.
TEST_F(Forward, InvalidReceiverAckIsRefusedWithTheKernelsMarker) {
  std::optional<std::uint32_t> marker;
  fk::testing::ScriptedServer receiver([&](fk::testing::ServerConn& c) {
    if (c.read_request().empty()) return;
    c.send(fk::testing::make_ack(16, cp::COREDUMP_KERNEL | cp::COREDUMP_RECORDS));  // not offered by a 6.18 kernel
    marker = c.read_marker();
  });
  start_host(receiver.path());
  auto o = options();
  ASSERT_TRUE(fk::task_released(fk::run(o)));
  receiver.join();
  EXPECT_EQ(marker, static_cast<std::uint32_t>(cp::Marker::UNSUPPORTED));
  expect_fallback(o, "UNSUPPORTED");
}

// A symlink planted at the socket path, pointing at a live socket outside the container's root, is
// not followed: the host stores the crash and the socket behind the link never sees a connection.
TEST_F(Forward, SymlinkAtTheSocketPathIsNotFollowed) {
  start_receiver(*dir_ / "outside.sock", R"({"accept_forwarded": true})");
  ASSERT_EQ(::symlink((*dir_ / "outside.sock").c_str(), inner_socket().c_str()), 0);
  start_host(inner_socket());
  auto o = options();
  ASSERT_TRUE(fk::task_released(fk::run(o)));
  expect_fallback(o, "symlinks are not followed");
  EXPECT_TRUE(receiver_.records().empty());
  EXPECT_EQ(receiver_.daemon->log().find("accepting a crash forwarded"), std::string::npos);
}

// A symlinked directory on the way is refused just the same.
TEST_F(Forward, SymlinkedDirectoryOnThePathIsNotFollowed) {
  std::filesystem::create_directories(*dir_ / "elsewhere");
  start_receiver(*dir_ / "elsewhere/coredump.sock", R"({"accept_forwarded": true})");
  ASSERT_EQ(::symlink((*dir_ / "elsewhere").c_str(), (*dir_ / "root/link").c_str()), 0);
  start_host(*dir_ / "root/link/coredump.sock");
  auto o = options();
  ASSERT_TRUE(fk::task_released(fk::run(o)));
  expect_fallback(o, "symlinks are not followed");
  EXPECT_TRUE(receiver_.records().empty());
}

TEST_F(Forward, SomethingOtherThanASocketIsRefused) {
  std::ofstream(inner_socket()) << "not a socket";
  start_host(inner_socket());
  auto o = options();
  ASSERT_TRUE(fk::task_released(fk::run(o)));
  expect_fallback(o, "not a socket");
}

// A receiver that takes the request and never answers must not keep the task frozen: the host acks
// the kernel on its own handshake deadline and stores the crash. The receiver stays silent until
// the fake kernel's session is over (bounded), so the ack the kernel got can only be the host's own
// decision; the bounds on how long the task was frozen are far from the 1 s deadline either way.
TEST_F(Forward, SilentReceiverCannotHoldTheTaskPastTheHandshakeDeadline) {
  std::atomic<bool> session_over{false};
  bool silent_throughout = false;
  fk::testing::ScriptedServer receiver([&](fk::testing::ServerConn& c) {
    c.read_request();
    silent_throughout = wait_until([&] { return session_over.load(); }, 180s);
  });
  start_host(receiver.path(), R"("handshake_timeout_ms": 1000, )");
  auto o = options();
  o.timeout = 120s;  // a host that waited for the receiver would hold the task until this
  const auto res = fk::run(o);
  session_over = true;
  receiver.join();
  ASSERT_TRUE(fk::task_released(res));
  EXPECT_TRUE(silent_throughout) << "the receiver was released before the session ended";
  ASSERT_TRUE(res.timeline.request_sent && res.timeline.ack_read);
  const auto frozen_us = *res.timeline.ack_read - *res.timeline.request_sent;
  EXPECT_LT(frozen_us, 60'000'000) << "the kernel got its ack only after " << frozen_us << " us";
  // The host gives the receiver 0.9 of handshake_timeout_ms from accept, which follows the start of
  // run() (the timeline's zero): a lower bound that load can only lengthen.
  EXPECT_GE(*res.timeline.ack_read, 850'000) << "the host did not wait for the receiver";
  expect_fallback(o, "did not complete the handshake");
}

}  // namespace
