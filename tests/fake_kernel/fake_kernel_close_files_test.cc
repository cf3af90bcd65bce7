// COREDUMP_CLOSE_FILES (docs/PROTOCOL.md §6.4): a helper process holds a flock(); the close-files callback
// kills it; the server checks the lock is held during the handshake and free once the marker and
// one byte (KERNEL) or the EOF (USERSPACE) arrived.
#include "tests/fake_kernel/fake_kernel.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>

#include <gtest/gtest.h>

#include "tests/fake_kernel/test_support.h"

namespace coredumpd::fake_kernel {
namespace {

using namespace coredumpd::fake_kernel::testing;
using protocol::COREDUMP_KERNEL;
using protocol::COREDUMP_USERSPACE;
using protocol::COREDUMP_WAIT;

// ---------------------------------------------------------------------------------------------
// CLOSE_FILES (docs/PROTOCOL.md §6.4): a helper process holds a flock; the callback kills it.

// A child process holding an exclusive flock() on `path` until killed.
class LockHolder {
 public:
  explicit LockHolder(std::string path) : path_(std::move(path)) {
    int ready[2];
    if (::pipe2(ready, O_CLOEXEC) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      // Async-signal-safe calls only: the test process is multi-threaded.
      const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT, 0600);
      const char ok = (fd >= 0 && ::flock(fd, LOCK_EX) == 0) ? 'y' : 'n';
      (void)!::write(ready[1], &ok, 1);
      for (;;) ::pause();
    }
    ::close(ready[1]);
    char ok = 0;
    locked_ = ::read(ready[0], &ok, 1) == 1 && ok == 'y';
    ::close(ready[0]);
  }
  ~LockHolder() { kill_and_reap(); }
  LockHolder(const LockHolder&) = delete;
  LockHolder& operator=(const LockHolder&) = delete;

  [[nodiscard]] bool locked() const { return locked_; }

  /// True if this process can take the lock now (then releases it).
  [[nodiscard]] bool lock_is_free() const {
    ScopedFd fd(::open(path_.c_str(), O_RDWR | O_CLOEXEC));
    if (!fd.valid() || ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) return false;
    ::flock(fd.get(), LOCK_UN);
    return true;
  }

  void kill_and_reap() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  std::string path_;
  pid_t pid_ = -1;
  bool locked_ = false;
};

struct CloseFilesRun {
  Result result;
  bool free_before_ack = true;
  bool free_after_first_byte_or_eof = false;
  ReadEnd stream;
};

CloseFilesRun run_close_files(std::uint64_t ack_mask, std::uint64_t close_files_bit, bool use_callback) {
  const std::string dir = testing::make_temp_dir();
  LockHolder holder(dir + "/lock");
  EXPECT_TRUE(holder.locked());
  CloseFilesRun out;
  const bool kernel = ack_mask & COREDUMP_KERNEL;
  ScriptedServer server([&](ServerConn& c) {
    c.read_request();
    out.free_before_ack = holder.lock_is_free();  // docs/PROTOCOL.md §5.4: fds still there during the handshake
    c.send(make_ack(16, ack_mask));
    if (c.read_marker() != 0u) return;
    if (kernel) {
      std::byte b{};
      ::recv(c.fd(), &b, 1, MSG_PEEK | MSG_WAITALL);  // marker + 1 byte: the close has happened
      out.free_after_first_byte_or_eof = holder.lock_is_free();
      out.stream = c.read_to_end();
    } else {
      out.stream = c.read_to_end();  // EOF: the close has happened
      out.free_after_first_byte_or_eof = holder.lock_is_free();
    }
  });
  Options o = options_for(server);
  o.mask = protocol::COREDUMP_MASK_VER0 | close_files_bit;
  o.close_files_bit = close_files_bit;
  o.core = CoreSource::pattern(8192);
  if (use_callback) o.close_files = [&holder] { holder.kill_and_reap(); };
  out.result = run(o);
  server.join();
  holder.kill_and_reap();
  std::filesystem::remove_all(dir);
  return out;
}

TEST(FakeKernelCloseFiles, KernelModeClosesBeforeTheFirstStreamByte) {
  const auto got = run_close_files(COREDUMP_KERNEL | COREDUMP_WAIT | kCloseFiles, kCloseFiles, true);
  const Result& r = got.result;
  EXPECT_FALSE(got.free_before_ack);
  EXPECT_TRUE(got.free_after_first_byte_or_eof);
  EXPECT_TRUE(task_released(r));
  EXPECT_TRUE(r.close_files_acked);
  EXPECT_TRUE(r.close_files_called);
  ASSERT_TRUE(r.timeline.files_closed && r.timeline.first_stream_byte && r.timeline.marker_sent);
  EXPECT_LE(*r.timeline.marker_sent, *r.timeline.files_closed);
  EXPECT_LE(*r.timeline.files_closed, *r.timeline.first_stream_byte);
  EXPECT_EQ(got.stream.data.size(), 8192u);
}

TEST(FakeKernelCloseFiles, UserspaceModeClosesBeforeTheEof) {
  const auto got = run_close_files(COREDUMP_USERSPACE | kCloseFiles, kCloseFiles, true);
  EXPECT_FALSE(got.free_before_ack);
  EXPECT_TRUE(got.free_after_first_byte_or_eof);
  EXPECT_TRUE(got.stream.data.empty());
  EXPECT_TRUE(got.result.close_files_called);
  ASSERT_TRUE(got.result.timeline.files_closed && got.result.timeline.shutdown_sent);
  EXPECT_LE(*got.result.timeline.files_closed, *got.result.timeline.shutdown_sent);
}

TEST(FakeKernelCloseFiles, NotRequestedKeepsTheLock) {
  const auto got = run_close_files(COREDUMP_KERNEL, kCloseFiles, true);
  EXPECT_FALSE(got.free_after_first_byte_or_eof);
  EXPECT_FALSE(got.result.close_files_acked);
  EXPECT_FALSE(got.result.close_files_called);
  EXPECT_FALSE(got.result.timeline.files_closed);
}

TEST(FakeKernelCloseFiles, TheBitValueIsConfigurable) {
  constexpr std::uint64_t kOtherBit = 1ULL << 9;
  const auto got = run_close_files(COREDUMP_KERNEL | kOtherBit, kOtherBit, true);
  EXPECT_TRUE(got.result.close_files_called) << describe(got.result);
  EXPECT_TRUE(got.free_after_first_byte_or_eof);
  // The default bit is then unknown to this kernel: UNSUPPORTED.
  const auto refused = run_close_files(COREDUMP_KERNEL | kCloseFiles, kOtherBit, true);
  EXPECT_EQ(refused.result.marker, static_cast<std::uint32_t>(protocol::Marker::UNSUPPORTED));
  EXPECT_FALSE(refused.result.close_files_called);
}

}  // namespace
}  // namespace coredumpd::fake_kernel
