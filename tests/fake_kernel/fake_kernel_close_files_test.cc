// COREDUMP_CLOSE_FILES (docs/PROTOCOL.md §6.4) on the fake kernel, cell by cell as the RFC selftest
// coredump_close_files_test.c ("coredump, files: exit files on request") pins it down: a real
// fake-crasher holds a write lock, shared or not; the scripted server looks at the lock and at the
// crasher's fd table before the ack and once the kernel is past the close (the first stream byte,
// or the hang-up in USERSPACE mode); after the dump the sharing process reports whether its
// descriptor survived. Which locks go is decided by the real kernel's lock code.
#include "tests/fake_kernel/fake_kernel.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include <gtest/gtest.h>

#include "tests/fake_kernel/crasher.h"
#include "tests/fake_kernel/test_support.h"

namespace coredumpd::fake_kernel {
namespace {

using namespace coredumpd::fake_kernel::testing;
using protocol::COREDUMP_KERNEL;
using protocol::COREDUMP_REJECT;
using protocol::COREDUMP_USERSPACE;
using protocol::COREDUMP_WAIT;

// Entries of /proc/<pid>/fd: the descriptors of the crasher's (main thread's) table; -1 on error.
int count_fds(pid_t pid) {
  DIR* dir = ::opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
  if (!dir) return -1;
  int n = 0;
  while (const dirent* de = ::readdir(dir)) n += de->d_name[0] != '.';
  ::closedir(dir);
  return n;
}

// One cell of the selftest's table.
struct Cell {
  const char* name;
  LockKind kind;
  LockShare share;
  int threads;
  bool close;      // ack with CLOSE_FILES
  bool userspace;  // USERSPACE instead of KERNEL
  bool released;   // the lock is gone once the kernel is past the close
};

std::ostream& operator<<(std::ostream& os, const Cell& c) { return os << c.name; }

struct CellRun {
  std::vector<std::byte> request;
  bool held_before_ack = false, held_after_close = true;
  int fds_before_ack = -1, fds_after_close = -1;
  std::optional<std::uint32_t> marker;
  ReadEnd stream;
  Result result;
  std::optional<char> sharer;  // 'O': the sharing process's descriptor stayed open
};

CellRun run_cell(const Cell& cell, std::uint64_t ack_extra = 0) {
  CellRun out;
  const std::string dir = make_temp_dir();
  const std::string lock = dir + "/coredump.lock";
  std::string error;
  auto crasher = Crasher::start({FAKE_CRASHER_BIN, lock, cell.kind, cell.share, cell.threads}, error);
  EXPECT_TRUE(crasher) << error;
  if (!crasher) return out;
  const ScopedFd probe(::open(lock.c_str(), O_RDWR | O_CLOEXEC));
  const pid_t pid = crasher->pid();

  ScriptedServer server([&](ServerConn& c) {
    out.request = c.read_request();
    out.held_before_ack = lock_held(probe.get(), cell.kind);  // the task waits with everything in place
    out.fds_before_ack = count_fds(pid);
    const std::uint64_t mask = COREDUMP_WAIT | (cell.userspace ? COREDUMP_USERSPACE : COREDUMP_KERNEL) |
                               (cell.close ? kCloseFiles : 0) | ack_extra;
    c.send(make_ack(protocol::COREDUMP_ACK_SIZE_VER1, mask));
    out.marker = c.read_marker();
    if (out.marker != 0u) return;
    std::byte b{};
    const ssize_t n = ::recv(c.fd(), &b, 1, MSG_PEEK | MSG_WAITALL);  // 1 byte, or EOF (USERSPACE)
    if (n != (cell.userspace ? 0 : 1)) ADD_FAILURE() << "read after the marker returned " << n;
    out.held_after_close = lock_held(probe.get(), cell.kind);
    out.fds_after_close = count_fds(pid);
    out.stream = c.read_to_end();
  });
  Options o = rfc_close_files_kernel(server.path());
  o.crasher = &*crasher;
  o.core = CoreSource::pattern(64 * 1024);
  o.timeout = std::chrono::seconds(5);
  out.result = run(o);
  server.join();
  crasher->end();  // the kernel ends the task after its dump
  out.sharer = crasher->sharer_verdict();
  std::filesystem::remove_all(dir);
  return out;
}

class CloseFilesMatrix : public ::testing::TestWithParam<Cell> {};

TEST_P(CloseFilesMatrix, LockStateAndFdTableAfterTheClose) {
  const Cell& cell = GetParam();
  const CellRun got = run_cell(cell);
  EXPECT_TRUE(got.held_before_ack);
  EXPECT_GT(got.fds_before_ack, 0);
  ASSERT_EQ(got.marker, 0u) << describe(got.result);
  EXPECT_EQ(got.held_after_close, !cell.released) << (cell.released ? "still held" : "released") << " after the close";
  if (cell.close) {
    EXPECT_EQ(got.fds_after_close, 0) << "the crasher's fd table is not empty";
  } else {
    EXPECT_GT(got.fds_after_close, 0);
  }
  EXPECT_TRUE(task_released(got.result));
  EXPECT_EQ(got.result.close_files_acked, cell.close);
  EXPECT_EQ(got.result.close_files_called, cell.close);
  EXPECT_EQ(got.stream.data.size(), cell.userspace ? 0u : 64u * 1024);
  const Timeline& t = got.result.timeline;
  if (cell.close) {  // closed after the marker, before the first byte / the hang-up
    ASSERT_TRUE(t.marker_sent && t.files_closed && t.shutdown_sent);
    EXPECT_LE(*t.marker_sent, *t.files_closed);
    if (!cell.userspace) {
      ASSERT_TRUE(t.first_stream_byte);
      EXPECT_LE(*t.files_closed, *t.first_stream_byte);
    }
    EXPECT_LE(*t.files_closed, *t.shutdown_sent);
  }
  // The crashing task is gone; what it shared with is untouched.
  if (cell.share == LockShare::Fork || cell.share == LockShare::Files) {
    EXPECT_EQ(got.sharer, 'O');
  }
}

constexpr LockKind P = LockKind::Posix, O = LockKind::Ofd, F = LockKind::Flock;
INSTANTIATE_TEST_SUITE_P(
    Rfc, CloseFilesMatrix,
    ::testing::Values(
        // Held by the crasher alone: released, with or without idle threads.
        Cell{"posix", P, LockShare::None, 0, true, false, true}, Cell{"posix_threads", P, LockShare::None, 4, true, false, true},
        Cell{"ofd", O, LockShare::None, 0, true, false, true}, Cell{"ofd_threads", O, LockShare::None, 4, true, false, true},
        Cell{"flock", F, LockShare::None, 0, true, false, true}, Cell{"flock_threads", F, LockShare::None, 4, true, false, true},
        // A dup in the crasher's own table is closed with it.
        Cell{"flock_dup", F, LockShare::Dup, 0, true, false, true},
        // POSIX locks belong to the process: a forked child keeping the file does not keep them.
        Cell{"posix_fork", P, LockShare::Fork, 0, true, false, true},
        // flock and OFD locks belong to the open file: a forked child keeps it.
        Cell{"flock_fork", F, LockShare::Fork, 0, true, false, false}, Cell{"ofd_fork", O, LockShare::Fork, 0, true, false, false},
        // A CLONE_FILES child keeps the fd table, so nothing in it is closed.
        Cell{"posix_shared_table", P, LockShare::Files, 0, true, false, false},
        Cell{"flock_shared_table", F, LockShare::Files, 4, true, false, false},
        // USERSPACE mode: closed before the hang-up.
        Cell{"userspace", F, LockShare::None, 0, true, true, true},
        Cell{"userspace_posix_threads", P, LockShare::None, 4, true, true, true},
        // Not requested: everything stays until the task is gone.
        Cell{"not_requested", F, LockShare::None, 4, false, false, false},
        Cell{"not_requested_posix", P, LockShare::None, 0, false, false, false}),
    [](const ::testing::TestParamInfo<Cell>& i) { return std::string(i.param.name); });

TEST(FakeKernelCloseFiles, TheRfcKernelSendsThe32ByteRequest) {
  const CellRun got = run_cell({"posix", P, LockShare::None, 0, true, false, true});
  ASSERT_EQ(got.request.size(), 32u);
  protocol::coredump_req req{};
  std::memcpy(&req, got.request.data(), sizeof(req));
  EXPECT_EQ(req.size, 32u);
  EXPECT_EQ(req.size_ack, 24u);
  EXPECT_EQ(req.mask, 0x7FULL | kCloseFiles);
  EXPECT_EQ(req.memory_types_mask, 0x1FFULL);
}

TEST(FakeKernelCloseFiles, RejectWithCloseFilesIsConflictingAndClosesNothing) {
  const std::string dir = make_temp_dir();
  std::string error;
  auto crasher = Crasher::start({FAKE_CRASHER_BIN, dir + "/l", LockKind::Flock, LockShare::None, 0}, error);
  ASSERT_TRUE(crasher) << error;
  int fds_after = -1;
  ScriptedServer server([&](ServerConn& c) {
    c.read_request();
    c.send(make_ack(protocol::COREDUMP_ACK_SIZE_VER1, COREDUMP_REJECT | kCloseFiles));
    EXPECT_EQ(c.read_marker(), static_cast<std::uint32_t>(protocol::Marker::CONFLICTING));
    EXPECT_TRUE(c.wait_peer_closed());
    fds_after = count_fds(crasher->pid());
  });
  Options o = rfc_close_files_kernel(server.path());
  o.crasher = &*crasher;
  const Result r = run(o);
  server.join();
  EXPECT_EQ(r.outcome, Outcome::Refused) << describe(r);
  EXPECT_FALSE(r.close_files_called);
  EXPECT_GT(fds_after, 0);
  std::filesystem::remove_all(dir);
}

TEST(FakeKernelCloseFiles, TheBitValueIsConfigurable) {
  const std::string dir = make_temp_dir();
  std::string error;
  auto crasher = Crasher::start({FAKE_CRASHER_BIN, dir + "/l", LockKind::Flock, LockShare::None, 0}, error);
  ASSERT_TRUE(crasher) << error;
  constexpr std::uint64_t kOtherBit = 1ULL << 9;
  int fds_after = -1;
  ScriptedServer server([&](ServerConn& c) {
    c.read_request();
    c.send(make_ack(16, COREDUMP_KERNEL | kOtherBit));
    c.read_marker();
    c.read_to_end();
    fds_after = count_fds(crasher->pid());
  });
  Options o = options_for(server);
  o.crasher = &*crasher;
  o.mask = protocol::COREDUMP_MASK_VER0 | kOtherBit;
  o.close_files_bit = kOtherBit;
  o.core = CoreSource::pattern(8192);
  const Result r = run(o);
  server.join();
  EXPECT_TRUE(r.close_files_called) << describe(r);
  EXPECT_EQ(fds_after, 0);
  // The default bit is then unknown to this kernel: UNSUPPORTED.
  ScriptedServer refused_server([&](ServerConn& c) {
    c.read_request();
    c.send(make_ack(16, COREDUMP_KERNEL | kCloseFiles));
    c.read_marker();
  });
  o.socket_path = refused_server.path();
  o.crasher = nullptr;
  const Result refused = run(o);
  refused_server.join();
  EXPECT_EQ(refused.marker, static_cast<std::uint32_t>(protocol::Marker::UNSUPPORTED));
  EXPECT_FALSE(refused.close_files_called);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace coredumpd::fake_kernel
