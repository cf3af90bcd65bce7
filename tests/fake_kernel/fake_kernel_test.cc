// The fake kernel's session against scripted in-test servers, by docs/PROTOCOL.md: connection
// failures (§2.4), the request (§4.2), the modes after REQACK (§5, §11.2 groups A and C), timeouts,
// stalls, injections and hooks (§11.2 group D), and the JSON form of a Result. Every wait is bounded.
#include "tests/fake_kernel/fake_kernel.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include "protocol/request.h"
#include "tests/fake_kernel/test_support.h"
#include "tests/support/test_support.h"

namespace coredumpd::fake_kernel {
namespace {

using namespace std::chrono_literals;
using namespace coredumpd::fake_kernel::testing;
using coredumpd::test::wait_until;
using protocol::COREDUMP_KERNEL;
using protocol::COREDUMP_MEMORY_TYPES;
using protocol::COREDUMP_REJECT;
using protocol::COREDUMP_USERSPACE;
using protocol::COREDUMP_WAIT;

// ---------------------------------------------------------------------------------------------
// Connection (docs/PROTOCOL.md §2.4)

TEST(FakeKernelConnect, MissingSocketIsENOENT) {
  Options o;
  o.socket_path = testing::make_temp_dir() + "/missing.sock";
  const Result r = run(o);
  EXPECT_EQ(r.outcome, Outcome::ConnectFailed);
  EXPECT_FALSE(r.connected);
  EXPECT_EQ(r.connect_errno, ENOENT);
  EXPECT_FALSE(r.wcoredump);
  std::filesystem::remove_all(std::filesystem::path(o.socket_path).parent_path());
}

TEST(FakeKernelConnect, BoundButNotListeningIsECONNREFUSED) {
  const std::string dir = testing::make_temp_dir();
  const std::string path = dir + "/s";
  ScopedFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size());
  ASSERT_EQ(::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)), 0);
  Options o;
  o.socket_path = path;
  const Result r = run(o);
  EXPECT_EQ(r.outcome, Outcome::ConnectFailed);
  EXPECT_EQ(r.connect_errno, ECONNREFUSED);
  std::filesystem::remove_all(dir);
}

TEST(FakeKernelConnect, FullBacklogIsEAGAINLikeTheKernelsNonBlockingConnect) {
  ScriptedServer server(nullptr, /*backlog=*/0, /*accept=*/false);
  // listen(fd, 0) admits one pending connection (docs/PROTOCOL.md §11.3); take it.
  ScopedFd first(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, server.path().c_str(), server.path().size());
  ASSERT_EQ(::connect(first.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)), 0);
  const Result r = run(options_for(server));
  EXPECT_EQ(r.outcome, Outcome::ConnectFailed);
  EXPECT_EQ(r.connect_errno, EAGAIN);
}

// ---------------------------------------------------------------------------------------------
// The request (docs/PROTOCOL.md §4.2, §11.3)

TEST(FakeKernelRequest, Ver0RequestIsTheObservedBytesInOneSend) {
  Seen seen;
  int queued_at_first_byte = -1;
  ScriptedServer server([&](ServerConn& c) {
    std::byte b{};
    ::recv(c.fd(), &b, 1, MSG_PEEK | MSG_WAITALL);  // wait for the first byte...
    queued_at_first_byte = c.queued();              // ...and see it all arrived at once
    seen.request = c.read_request();
    c.send(make_ack(16, COREDUMP_REJECT));
    seen.marker = c.read_marker();
    seen.after = c.next_read();
  });
  const Result r = run(options_for(server));
  server.join();
  const std::vector<unsigned char> want{0x10, 0, 0, 0, 0x10, 0, 0, 0, 0x0f, 0, 0, 0, 0, 0, 0, 0};
  ASSERT_EQ(seen.request.size(), want.size());
  EXPECT_EQ(std::memcmp(seen.request.data(), want.data(), want.size()), 0);
  EXPECT_EQ(queued_at_first_byte, 16);
  EXPECT_EQ(r.request, seen.request);
  EXPECT_TRUE(r.request_sent);
  EXPECT_EQ(seen.marker, 0u);
  EXPECT_EQ(seen.after, 0);
}

TEST(FakeKernelRequest, Ver1RequestCarriesMemoryTypes) {
  Seen seen;
  ScriptedServer server([&](ServerConn& c) {
    seen.request = c.read_request();
    c.send(make_ack(24, COREDUMP_KERNEL | COREDUMP_MEMORY_TYPES, 24, 0, 0x13));
    seen.marker = c.read_marker();
    seen.stream = c.read_to_end();
  });
  Options o = next_kernel(server);
  o.memory_types = 0x33;
  o.memory_types_mask = 0x1FF;
  o.core = CoreSource::pattern(5000);
  const Result r = run(o);
  server.join();
  ASSERT_EQ(seen.request.size(), 32u);
  const auto req = protocol::decode_request(seen.request);
  EXPECT_EQ(req.size, 32u);
  EXPECT_EQ(req.size_ack, 24u);
  EXPECT_EQ(req.mask, MASK_NEXT | kCloseFiles);
  EXPECT_EQ(req.memory_types, 0x33u);
  EXPECT_EQ(req.memory_types_mask, 0x1FFu);
  EXPECT_EQ(seen.marker, 0u);
  EXPECT_TRUE(task_released(r));
  EXPECT_TRUE(r.memory_types_acked);
  EXPECT_EQ(r.effective_memory_types, 0x13u);
  EXPECT_EQ(seen.stream.data, bytes_of(o.core));
}

TEST(FakeKernelRequest, LargerThanKnownRequestIsZeroPadded) {
  Seen seen;
  ScriptedServer server([&](ServerConn& c) {
    seen.request = c.read_request();
    c.send(make_ack(16, COREDUMP_REJECT));
    seen.marker = c.read_marker();
  });
  Options o = next_kernel(server);
  o.request_size = 48;
  const Result r = run(o);
  server.join();
  ASSERT_EQ(seen.request.size(), 48u);
  EXPECT_EQ(protocol::decode_request(seen.request).size, 48u);
  for (std::size_t i = 32; i < 48; ++i) EXPECT_EQ(seen.request[i], std::byte{0}) << i;
  EXPECT_EQ(r.outcome, Outcome::Rejected);
}

TEST(FakeKernelRequest, HostileSizeFieldIsSentAsConfigured) {
  std::uint32_t field = 0;
  int queued = -1;
  ScriptedServer server([&](ServerConn& c) {
    ::recv(c.fd(), &field, sizeof(field), MSG_PEEK | MSG_WAITALL);
    // The whole request (one send): wait until it is all here, then see that nothing more came.
    wait_until([&] { return c.queued() >= 16; }, kServerIoTimeout);
    queued = c.queued();
    c.close();  // a server refusing the request: no ack
  });
  Options o = options_for(server);
  o.size_field = 4096;
  const Result r = run(o);
  server.join();
  EXPECT_EQ(field, 4096u);
  EXPECT_EQ(queued, 16);
  EXPECT_EQ(r.outcome, Outcome::HungUpBeforeAck);
  EXPECT_FALSE(r.marker_sent);
}

TEST(FakeKernelRequest, SplitRequestArrivesInTwoPieces) {
  int first_piece = -1;
  Seen seen;
  ScriptedServer server([&](ServerConn& c) {
    std::byte b{};
    ::recv(c.fd(), &b, 1, MSG_PEEK | MSG_WAITALL);
    first_piece = c.queued();
    seen.request = c.read_request();
    c.send(make_ack(16, COREDUMP_REJECT));
    seen.marker = c.read_marker();
  });
  Options o = options_for(server);
  o.request_split_at = 6;
  o.request_split_delay = 1s;  // the server looks at what is queued within it: far from a race
  const Result r = run(o);
  server.join();
  EXPECT_EQ(first_piece, 6);
  EXPECT_EQ(seen.request.size(), 16u);
  EXPECT_EQ(seen.marker, 0u);
  EXPECT_EQ(r.outcome, Outcome::Rejected);
}

// ---------------------------------------------------------------------------------------------
// Basic modes (docs/PROTOCOL.md §5, §11.2 groups A and C)

TEST(FakeKernelModes, KernelWaitStreamsTheExactCoreAndParksUntilClose) {
  Seen seen;
  std::atomic<bool> closing{false};
  ScriptedServer server([&](ServerConn& c) {
    seen.request = c.read_request();
    c.send(make_ack(16, COREDUMP_KERNEL | COREDUMP_WAIT));
    seen.marker = c.read_marker();
    seen.stream = c.read_to_end();
    std::this_thread::sleep_for(200ms);  // a fake that does not park returns meanwhile
    closing = true;
    c.close();
  });
  Options o = options_for(server);
  o.core = CoreSource::pattern((1 << 20) + 123, 0, 4096, 9);
  const Result r = run(o);
  const bool returned_after_close = closing;
  server.join();
  EXPECT_TRUE(returned_after_close) << "the task was released before the server closed";
  EXPECT_EQ(seen.marker, 0u);
  EXPECT_EQ(seen.stream.end_errno, 0);
  EXPECT_EQ(seen.stream.data, bytes_of(o.core));
  EXPECT_TRUE(task_released(r));
  EXPECT_EQ(r.mode, protocol::Mode::Kernel);
  EXPECT_EQ(r.bytes_streamed, o.core.size());
  EXPECT_EQ(r.core_bytes, o.core.size());
  EXPECT_TRUE(r.stream_complete);
  EXPECT_TRUE(r.shutdown_sent);
  EXPECT_TRUE(r.wait_acked);
  EXPECT_TRUE(r.waited);
  EXPECT_EQ(r.wait_end, WaitEnd::Eof);
  EXPECT_GT(r.parked_us, 0);
  EXPECT_FALSE(r.server_sent_data);
  EXPECT_TRUE(r.wcoredump);
  EXPECT_FALSE(r.timed_out);
}

TEST(FakeKernelModes, WaitIsReleasedByShutWrWhileTheSocketStaysOpen) {
  std::atomic<bool> fake_returned{false};
  std::atomic<bool> shut{false};
  bool returned_before_close = false;
  ScriptedServer server([&](ServerConn& c) {
    c.read_request();
    c.send(make_ack(16, COREDUMP_KERNEL | COREDUMP_WAIT));
    c.read_marker();
    c.read_to_end();
    std::this_thread::sleep_for(150ms);  // a fake that does not park returns meanwhile
    shut = true;
    c.shutdown_write();
    returned_before_close = wait_until([&] { return fake_returned.load(); }, kServerIoTimeout);
    c.close();
  });
  Options o = options_for(server);
  o.core = CoreSource::pattern(10'000);
  const Result r = run(o);
  const bool returned_after_shutdown = shut;
  fake_returned = true;
  server.join();
  EXPECT_TRUE(returned_before_close);
  EXPECT_TRUE(returned_after_shutdown) << "the task was released before the server's SHUT_WR";
  EXPECT_TRUE(task_released(r));
  EXPECT_EQ(r.wait_end, WaitEnd::Eof);
  EXPECT_GT(r.parked_us, 0);
  EXPECT_TRUE(r.wcoredump);
}

TEST(FakeKernelModes, KernelWithoutWaitDoesNotPark) {
  Seen seen;
  ScriptedServer server([&](ServerConn& c) {
    c.read_request();
    c.send(make_ack(16, COREDUMP_KERNEL));
    seen.marker = c.read_marker();
    seen.stream = c.read_to_end();
  });
  Options o = options_for(server);
  o.core = CoreSource::pattern(3000);
  const Result r = run(o);
  server.join();
  EXPECT_EQ(seen.stream.data.size(), 3000u);
  EXPECT_TRUE(task_released(r));
  EXPECT_FALSE(r.waited);
  EXPECT_EQ(r.wait_end, WaitEnd::None);
  EXPECT_TRUE(r.wcoredump);
}

TEST(FakeKernelModes, RejectSendsZeroBytesAndIgnoresWait) {
  Seen seen;
  ScriptedServer server([&](ServerConn& c) {
    c.read_request();
    c.send(make_ack(16, COREDUMP_REJECT | COREDUMP_WAIT));
    seen.marker = c.read_marker();
    seen.stream = c.read_to_end();  // EOF at once: the task is not parked
  });
  Options o = options_for(server);
  o.core = CoreSource::pattern(3000);
  const Result r = run(o);
  server.join();
  EXPECT_EQ(seen.marker, 0u);
  EXPECT_TRUE(seen.stream.data.empty());
  EXPECT_EQ(seen.stream.end_errno, 0);
  EXPECT_EQ(r.outcome, Outcome::Rejected) << describe(r);
  EXPECT_EQ(r.mode, protocol::Mode::Reject);
  EXPECT_FALSE(r.wait_acked);
  EXPECT_FALSE(r.waited);
  EXPECT_FALSE(r.shutdown_sent);
  EXPECT_FALSE(r.wcoredump);
  EXPECT_EQ(r.bytes_streamed, 0u);
}

TEST(FakeKernelModes, UserspaceWaitSendsZeroBytesAndParks) {
  Seen seen;
  std::atomic<bool> closing{false};
  ScriptedServer server([&](ServerConn& c) {
    c.read_request();
    c.send(make_ack(16, COREDUMP_USERSPACE | COREDUMP_WAIT));
    seen.marker = c.read_marker();
    seen.stream = c.read_to_end();
    std::this_thread::sleep_for(100ms);  // a fake that does not park returns meanwhile
    closing = true;
    c.close();
  });
  Options o = options_for(server);
  o.core = CoreSource::pattern(3000);
  const Result r = run(o);
  const bool returned_after_close = closing;
  server.join();
  EXPECT_TRUE(returned_after_close) << "the task was released before the server closed";
  EXPECT_EQ(seen.marker, 0u);
  EXPECT_TRUE(seen.stream.data.empty());
  EXPECT_EQ(seen.stream.end_errno, 0);
  EXPECT_TRUE(task_released(r));
  EXPECT_EQ(r.mode, protocol::Mode::Userspace);
  EXPECT_EQ(r.bytes_streamed, 0u);
  EXPECT_TRUE(r.waited);
  EXPECT_GT(r.parked_us, 0);
  EXPECT_TRUE(r.wcoredump);
}

TEST(FakeKernelModes, ExtraBytesAfterTheAckSkipWaitAndResetTheServer) {
  // docs/PROTOCOL.md §5.3, §11.3: full dump, then ECONNRESET instead of EOF, WAIT not honoured.
  Seen seen;
  bool fake_closed_first = false;
  ScriptedServer server([&](ServerConn& c) {
    c.read_request();
    auto ack = make_ack(16, COREDUMP_KERNEL | COREDUMP_WAIT);
    ack.resize(ack.size() + 8, std::byte{0x55});
    c.send(ack);
    // Read only once the fake has closed: its close with our extra bytes unread resets us.
    fake_closed_first = c.wait_peer_closed();
    seen.marker = c.read_marker();
    seen.stream = c.read_to_end();
  });
  Options o = options_for(server);
  o.core = CoreSource::pattern(4096);
  const Result r = run(o);
  server.join();
  EXPECT_EQ(seen.marker, 0u);
  EXPECT_EQ(seen.stream.data, bytes_of(o.core));
  EXPECT_EQ(seen.stream.end_errno, ECONNRESET);
  EXPECT_EQ(r.outcome, Outcome::Dumped) << describe(r);
  EXPECT_TRUE(r.server_sent_data);
  EXPECT_EQ(r.wait_end, WaitEnd::Data);
  EXPECT_TRUE(fake_closed_first) << "the fake waited for the server although WAIT was not honoured";
  EXPECT_EQ(r.unread_at_close, 7u);
  EXPECT_TRUE(r.wcoredump);
}

TEST(FakeKernelModes, ServerClosingMidStreamAbortsTheDumpButKeepsWcoredump) {
  ScriptedServer server([&](ServerConn& c) {
    c.read_request();
    c.send(make_ack(16, COREDUMP_KERNEL | COREDUMP_WAIT));
    c.read_marker();
    c.read_to_end(100 * 1024);
    c.close();
  });
  Options o = options_for(server);
  o.core = CoreSource::pattern(64ULL << 20);
  const Result r = run(o);
  server.join();
  EXPECT_EQ(r.outcome, Outcome::StreamAborted) << describe(r);
  EXPECT_FALSE(r.stream_complete);
  EXPECT_LT(r.bytes_streamed, o.core.size());
  EXPECT_TRUE(r.wcoredump);  // docs/PROTOCOL.md §5.5, §11.3: set although the server hung up mid-stream
  EXPECT_FALSE(r.timed_out);
}

TEST(FakeKernelModes, PlainAtModeStreamsTheElfMagicFirst) {
  std::array<std::byte, 4> first{};
  ReadEnd stream;
  std::atomic<bool> closing{false};
  ScriptedServer server([&](ServerConn& c) {
    ::recv(c.fd(), first.data(), first.size(), MSG_PEEK | MSG_WAITALL);
    stream = c.read_to_end();
    std::this_thread::sleep_for(100ms);  // a fake that does not park returns meanwhile
    closing = true;
    c.close();
  });
  std::vector<std::byte> elf(2000, std::byte{1});
  std::memcpy(elf.data(), "\x7f" "ELF", 4);
  Options o = options_for(server);
  o.plain_mode = true;
  o.plain_wait = true;
  o.core = CoreSource::from_buffer(elf);
  const Result r = run(o);
  const bool returned_after_close = closing;
  server.join();
  EXPECT_TRUE(returned_after_close) << "the task was released before the server closed";
  EXPECT_EQ(std::memcmp(first.data(), "\x7f" "ELF", 4), 0);
  EXPECT_EQ(stream.data, elf);
  EXPECT_TRUE(task_released(r));
  EXPECT_TRUE(r.request.empty());
  EXPECT_FALSE(r.marker_sent);
  EXPECT_TRUE(r.waited);
  EXPECT_GT(r.parked_us, 0);
}

// ---------------------------------------------------------------------------------------------
// Timeouts, stalls, injections, hooks (docs/PROTOCOL.md §11.2 group D)

TEST(FakeKernelTiming, ServerThatNeverAcksTimesOutWithoutMarker) {
  ReadEnd rest;
  ScriptedServer server([&](ServerConn& c) {
    c.read_request();
    rest = c.read_to_end();  // returns when the fake gives up and closes
  });
  Options o = options_for(server);
  o.timeout = 300ms;
  const auto t0 = std::chrono::steady_clock::now();
  const Result r = run(o);
  const auto took = std::chrono::steady_clock::now() - t0;
  server.join();
  EXPECT_EQ(r.outcome, Outcome::TimedOut) << describe(r);
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.marker_sent);
  EXPECT_FALSE(r.wcoredump);
  EXPECT_GE(took, o.timeout);
  // The fake closed on its own deadline, long before the server's read gave up (kServerIoTimeout).
  EXPECT_FALSE(rest.timed_out) << "the fake kept the connection until the server gave up";
  EXPECT_TRUE(rest.data.empty());
  EXPECT_EQ(rest.end_errno, 0);
}

TEST(FakeKernelTiming, ServerHoldingWaitPastTheTimeoutIsReported) {
  bool fake_closed = false;
  ScriptedServer server([&](ServerConn& c) {
    c.read_request();
    c.send(make_ack(16, COREDUMP_KERNEL | COREDUMP_WAIT));
    c.read_marker();
    c.read_to_end();
    fake_closed = c.wait_peer_closed();  // we never release it: the fake's deadline does
  });
  Options o = options_for(server);
  // Long enough that the steps before the WAIT cannot use it up on a loaded machine.
  o.timeout = 2s;
  o.core = CoreSource::pattern(1000);
  const auto t0 = std::chrono::steady_clock::now();
  const Result r = run(o);
  const auto took = std::chrono::steady_clock::now() - t0;
  server.join();
  EXPECT_EQ(r.outcome, Outcome::NotReleased) << describe(r);  // a frozen task is no dump
  EXPECT_FALSE(task_released(r));
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.wait_end, WaitEnd::Timeout);
  EXPECT_TRUE(r.wcoredump);
  EXPECT_GT(r.parked_us, 0);
  EXPECT_GE(took, o.timeout) << "the WAIT ended before the deadline";
  EXPECT_TRUE(fake_closed);
}

TEST(FakeKernelTiming, StallsAndInjectionsHappenAtTheirPoints) {
  Seen seen;
  ScriptedServer server([&](ServerConn& c) {
    c.read_request();
    c.send(make_ack(16, COREDUMP_USERSPACE));
    seen.marker = c.read_marker();
    seen.stream = c.read_to_end();
  });
  Options o = options_for(server);
  o.stalls = {{Point::MarkerSent, 150ms}};
  o.injections = {{Point::MarkerSent, {std::byte{'a'}, std::byte{'b'}, std::byte{'c'}}}};
  const Result r = run(o);
  server.join();
  EXPECT_EQ(seen.marker, 0u);
  ASSERT_EQ(seen.stream.data.size(), 3u);
  EXPECT_EQ(seen.stream.data[2], std::byte{'c'});
  EXPECT_EQ(r.bytes_injected, 3u);
  EXPECT_EQ(r.bytes_streamed, 0u);
  ASSERT_TRUE(r.timeline.marker_sent && r.timeline.stream_done);
  EXPECT_GE(*r.timeline.stream_done - *r.timeline.marker_sent, 140'000);
}

TEST(FakeKernelTiming, HookSeesEveryPointInOrder) {
  ScriptedServer server([&](ServerConn& c) {
    c.read_request();
    c.send(make_ack(16, COREDUMP_KERNEL | COREDUMP_WAIT));
    c.read_marker();
    c.read_to_end();
    c.close();
  });
  Options o = options_for(server);
  o.core = CoreSource::pattern(10'000);
  o.chunk_size = 4096;
  o.hook_stream_offset = 5000;
  std::vector<Point> points;
  o.hook = [&](Point p, int fd) {
    EXPECT_GE(fd, 0);
    points.push_back(p);
  };
  const Result r = run(o);
  server.join();
  EXPECT_EQ(points, (std::vector<Point>{Point::Connected, Point::RequestSent, Point::AckRead,
                                        Point::MarkerSent, Point::StreamOffset, Point::StreamDone,
                                        Point::ShutdownSent, Point::BeforeClose}));
  EXPECT_EQ(r.bytes_streamed, 10'000u);
  for (const Point p : points) EXPECT_EQ(parse_point(point_name(p)), p);
}

// ---------------------------------------------------------------------------------------------
// JSON and the CLI

TEST(FakeKernelJson, ResultHasEveryDocumentedField) {
  ScriptedServer server([&](ServerConn& c) {
    c.read_request();
    c.send(make_ack(8, COREDUMP_KERNEL, 8));
    c.read_marker();
  });
  const Result r = run(options_for(server));
  server.join();
  const auto j = result_to_json(r);
  EXPECT_EQ(j["outcome"], "refused");
  EXPECT_EQ(j["marker"]["value"], 1);
  EXPECT_EQ(j["marker"]["name"], "MINSIZE");
  EXPECT_EQ(j["request"], "10000000100000000f00000000000000");
  EXPECT_EQ(j["ack_raw"], "08000000");
  EXPECT_EQ(j["ack_consumed"], false);
  EXPECT_TRUE(j["ack"].is_null());
  EXPECT_EQ(j["wcoredump"], false);
  for (const char* key : {"connected", "connect_errno", "request_sent", "verdict", "marker_sent", "mode",
                          "bytes_streamed", "records_sent", "waited", "parked_us", "server_sent_data",
                          "timed_out", "error", "timeline"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
}

}  // namespace
}  // namespace coredumpd::fake_kernel
