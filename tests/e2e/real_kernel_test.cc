// End-to-end tests against the real kernel: coredumpd on a temp store, core_pattern pointed at it
// (under the global lock), real programs crash, and we check what was stored.
#include <gelf.h>
#include <libelf.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/stat.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <csignal>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

#include "tests/e2e/real_kernel_fixture.h"

using namespace coredumpd;
using namespace coredumpd::test;

namespace {

TEST_F(RealKernel, SegfaultIsStoredWithMetadataAndExactCore) {
  pid_t pid = 0;
  const std::vector<std::string> odd = {"with space", "", "tab\there", "new\nline", "\xff\xfe not utf-8"};
  std::vector<std::string> args{"--mode", "segv", "--"};
  args.insert(args.end(), odd.begin(), odd.end());
  const auto st = crash(args, &pid);
  ASSERT_TRUE(st.exited) << "crasher hung (SIGKILLed)";
  EXPECT_EQ(st.term_signal(), SIGSEGV);
  EXPECT_TRUE(st.core_dumped()) << "the kernel did not report WCOREDUMP";

  const auto rec = stored_dump_of(pid);
  ASSERT_TRUE(rec) << "no dump indexed for pid " << pid;
  EXPECT_EQ(rec->state, DumpState::Complete) << rec->reason;
  expect_released_promptly(*rec);
  EXPECT_EQ(rec->signal, SIGSEGV);
  EXPECT_EQ(rec->uid, static_cast<std::int64_t>(::getuid()));
  EXPECT_EQ(rec->euid, static_cast<std::int64_t>(::geteuid()));
  EXPECT_EQ(rec->comm, "crasher");
  char real[PATH_MAX];
  ASSERT_TRUE(::realpath(CRASHER_BIN, real));
  EXPECT_EQ(rec->exe, real);
  std::vector<std::string> expected_argv{CRASHER_BIN};
  expected_argv.insert(expected_argv.end(), args.begin(), args.end());
  EXPECT_EQ(rec->argv, expected_argv);
  EXPECT_EQ(rec->tid, pid);  // single-threaded: the crashing thread is the leader
  EXPECT_EQ(rec->coredump_mask & 1u, 1u);  // PIDFD_COREDUMPED
  EXPECT_EQ(rec->boot_id.size(), 32u);
  EXPECT_GT(rec->core_size, 0u);
  EXPECT_GT(rec->stored_size, 0u);
  EXPECT_LT(rec->stored_size, rec->core_size);
  EXPECT_EQ(rec->compression, "zstd");
  EXPECT_EQ(rec->path, rec->id + ".zst");
  EXPECT_FALSE(rec->hostname.empty());

  // The handshake's steps, microseconds since accept, in the order they happen.
  const auto& steps = rec->extra["handshake_steps_us"];
  std::int64_t last = 0;
  for (const char* step : {"request", "collect_start", "collect_end", "collected"}) {
    ASSERT_TRUE(steps.contains(step)) << step << " in " << steps.dump();
    EXPECT_GE(steps[step].get<std::int64_t>(), last) << step << " in " << steps.dump();
    last = steps[step].get<std::int64_t>();
  }
  EXPECT_LE(last, rec->extra.value("handshake_us", std::int64_t{0}));
  // The dump job's steps, microseconds since it started: the first read, the stream's end, the
  // release, the stored file, in that order.
  last = 0;
  for (const char* step : {"drain_start_us", "stream_us", "released_us", "stored_us"}) {
    ASSERT_TRUE(rec->extra.contains(step)) << step << " in " << rec->extra.dump();
    EXPECT_GE(rec->extra[step].get<std::int64_t>(), last) << step << " in " << rec->extra.dump();
    last = rec->extra[step].get<std::int64_t>();
  }

  // dumpctl gives back the exact ELF core the kernel sent.
  ASSERT_TRUE(dumped_core_of(*rec, pid, SIGSEGV));

  const auto [lst, list] = run_capture({DUMPCTL_BIN, "--store", store_, "list"});
  EXPECT_EQ(lst.exit_code(), 0);
  EXPECT_NE(list.find(std::to_string(pid)), std::string::npos) << list;
}

// 64 MiB of memory left zero, which the kernel sends as literal zeros: the spool keeps holes, the
// compressor writes them as precompressed zero frames (CoreWriter::write_zeros), and dumpctl
// gives back a core of the full size that is still the crasher's ELF core.
TEST_F(RealKernel, ZeroMemoryIsStoredInNextToNothingAndComesBackWhole) {
  pid_t pid = 0;
  const auto rec = complete_dump_of_crash({"--mode", "segv", "--touch-mib", "64", "--fill", "zero"}, &pid);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->compression, "zstd");
  EXPECT_GT(rec->core_size, 64u << 20);
  EXPECT_LT(rec->stored_size, 512u << 10) << "64 MiB of zeros cost next to nothing";

  const auto out = dumped_core_of(*rec, pid, SIGSEGV);
  ASSERT_TRUE(out);
  const auto bytes = read_file(*out).value_or("");
  ASSERT_EQ(bytes.size(), rec->core_size);
  const auto nonzero = static_cast<std::size_t>(std::count_if(bytes.begin(), bytes.end(), [](char c) { return c != 0; }));
  EXPECT_LT(nonzero, 16u << 20) << "the 64 MiB came back as zeros";
}

// 2 GiB of anonymous memory mapped but never touched, but for a page per 256 MiB: the kernel sends
// the untouched pages as literal zeros (a socket cannot seek), and `dumpctl dump -o` writes them
// back as holes, so the output has the core's size but only the disk of its data.
TEST_F(RealKernel, MostlyUntouchedMemoryComesBackAsASparseFile) {
  pid_t pid = 0;
  const auto rec = complete_dump_of_crash({"--mode", "segv", "--touch-mib", "2048", "--fill", "untouched"}, &pid);
  ASSERT_TRUE(rec);
  EXPECT_GT(rec->core_size, 2048u << 20) << "the kernel left the untouched memory out of the core";
  const auto out = dumped_core_of(*rec, pid, SIGSEGV);
  ASSERT_TRUE(out);
  struct stat sb {};
  ASSERT_EQ(::stat(out->c_str(), &sb), 0);
  const auto allocated = static_cast<std::uint64_t>(sb.st_blocks) * 512;
  std::printf("core %llu bytes (stored %llu, %s); dump -o allocated %llu bytes\n",
              static_cast<unsigned long long>(rec->core_size), static_cast<unsigned long long>(rec->stored_size),
              rec->compression.c_str(), static_cast<unsigned long long>(allocated));
  EXPECT_LT(allocated, 64u << 20) << "dump -o wrote the zero runs instead of leaving holes";
}

// A core of 64 MiB of random memory is not worth compressing: the spool becomes the stored core,
// uncompressed, and it is the exact ELF core (dumpctl gives the same bytes as the file holds).
TEST_F(RealKernel, IncompressibleCoreIsStoredUncompressed) {
  pid_t pid = 0;
  const auto rec = complete_dump_of_crash({"--mode", "segv", "--touch-mib", "64", "--fill", "random"}, &pid);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->compression, "none");
  EXPECT_EQ(rec->path, rec->id + ".core");
  EXPECT_GT(rec->core_size, 64u << 20);
  EXPECT_EQ(rec->stored_size, rec->core_size);
  const std::string stored = store_ + "/" + rec->path;
  EXPECT_EQ(std::filesystem::file_size(stored), rec->core_size);
  const auto core = inspect_core(stored);
  EXPECT_TRUE(core.is_core);
  EXPECT_EQ(core.prstatus_signal, SIGSEGV);
  EXPECT_EQ(core.prstatus_pid, pid);

  const std::string out = *dir_ / "core.out";
  const auto [dst, dtext] = run_capture({DUMPCTL_BIN, "--store", store_, "dump", rec->id, "-o", out});
  ASSERT_EQ(dst.exit_code(), 0) << dtext;
  EXPECT_EQ(read_file(out), read_file(stored)) << "dumpctl dump gives the stored bytes";
}

TEST_F(RealKernel, AbortFromSecondThreadRecordsCrashingThread) {
  pid_t pid = 0;
  const auto st = crash({"--mode", "abort-thread", "--threads", "3"}, &pid);
  ASSERT_TRUE(st.exited);
  EXPECT_EQ(st.term_signal(), SIGABRT);
  EXPECT_TRUE(st.core_dumped());

  const auto rec = stored_dump_of(pid);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->state, DumpState::Complete) << rec->reason;
  expect_released_promptly(*rec);
  EXPECT_EQ(rec->signal, SIGABRT);
  ASSERT_TRUE(rec->tid.has_value());
  EXPECT_NE(*rec->tid, pid) << "abort() ran on a second thread";
  EXPECT_EQ(rec->crashing_tid_ns, rec->tid);  // same pid namespace as ours
  EXPECT_GE(rec->extra.value("threads", 0), 5);  // leader + 3 idle + the aborting one

  const std::string out = *dir_ / "core.out";
  const auto [dst, dtext] = run_capture({DUMPCTL_BIN, "--store", store_, "dump", rec->id, "-o", out});
  ASSERT_EQ(dst.exit_code(), 0) << dtext;
  const auto core = inspect_core(out);
  EXPECT_EQ(core.prstatus_signal, SIGABRT);
  EXPECT_EQ(core.prstatus_pid, *rec->tid);  // NT_PRSTATUS of the crashing thread comes first
}

// A local process that connects to the socket is not a crashing task: refused, nothing stored.
TEST_F(RealKernel, ImpostorPeerIsRefusedAndNothingStored) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  const unsigned char req[16] = {0x10, 0, 0, 0, 0x10, 0, 0, 0, 0x0f, 0, 0, 0, 0, 0, 0, 0};
  // The daemon may refuse us on its accept, from SO_PEERPIDFD alone, and hang up before we send.
  const auto sent = ::send(fd, req, sizeof(req), MSG_NOSIGNAL);
  if (sent < 0) EXPECT_TRUE(errno == EPIPE || errno == ECONNRESET) << std::strerror(errno);
  else EXPECT_EQ(sent, 16);
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  char buf[64];
  const auto n = ::recv(fd, buf, sizeof(buf), 0);
  EXPECT_LE(n, 0) << "an impostor must get no ack";
  ::close(fd);
  EXPECT_TRUE(wait_until([&] { return daemon_->log().find("not a crashing task") != std::string::npos; }, 5s))
      << daemon_->log();
  // Nothing of ours (the peer was this process); another process crashing meanwhile on this
  // machine may be stored, since the core_pattern is global.
  Index index(store_, false);
  for (const auto& r : index.list()) EXPECT_NE(r.pid, ::getpid()) << "the impostor was stored as " << r.id;
}

// 6.18 offers exactly the four base bits in a 16-byte request, and we ack nothing newer.
TEST_F(RealKernel, KernelOffersMask0xFAndGetsKernelWait) {
  pid_t pid = 0;
  const auto st = crash({"--mode", "segv"}, &pid);
  ASSERT_TRUE(st.exited);
  const auto rec = stored_dump_of(pid);
  ASSERT_TRUE(rec);
  expect_released_promptly(*rec);
  EXPECT_EQ(rec->extra["request"]["mask"], 0xF);
  EXPECT_EQ(rec->extra["request"]["size"], 16);
  EXPECT_EQ(rec->extra["request"]["size_ack"], 16);
  EXPECT_EQ(rec->extra["negotiation"]["acked"], 0x9) << "KERNEL|WAIT";
  EXPECT_EQ(rec->extra["negotiation"]["close_files"], "not offered");
  EXPECT_EQ(rec->extra["negotiation"]["records"], "not offered");
  EXPECT_TRUE(rec->extra["proc"].contains("smaps_rollup")) << "post-dump collector ran while WAIT parked the task";
}

// Without CLOSE_FILES (6.18 cannot offer it) a crashed process keeps its POSIX lock until the
// whole core has streamed and the task exits. The test measures and prints how long; the
// benchmark compares it with the fake kernel's CLOSE_FILES behaviour.
TEST_F(RealKernel, LockHeldByCrasherIsReleasedOnlyAfterTheDump) {
  const std::string lock_path = *dir_ / "held.lock";
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t pid = spawn({CRASHER_BIN, "--mode", "segv", "--touch-mib", "256", "--lock-file", lock_path,
                           "--ready-fd", std::to_string(ready[1])});
  ::close(ready[1]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1) << "crasher never got ready";
  ::close(ready[0]);
  const auto crashed = std::chrono::steady_clock::now();

  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  struct flock fl{};
  fl.l_type = F_WRLCK;
  bool held_at_crash = ::fcntl(fd, F_SETLK, &fl) < 0;
  std::chrono::steady_clock::time_point released{};
  const bool got = wait_until(
      [&] {
        fl.l_type = F_WRLCK;
        if (::fcntl(fd, F_SETLK, &fl) == 0) {
          released = std::chrono::steady_clock::now();
          return true;
        }
        return false;
      },
      60s);
  ::close(fd);
  const auto st = wait_for(pid, 60s);
  ASSERT_TRUE(st.exited);
  EXPECT_TRUE(held_at_crash) << "the crasher held the lock when it crashed";
  ASSERT_TRUE(got) << "the lock was never released";
  const auto rec = stored_dump_of(pid);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->state, DumpState::Complete) << rec->reason;
  expect_released_promptly(*rec);
  EXPECT_GT(rec->core_size, 256u << 20);
  const auto held_ms = std::chrono::duration_cast<std::chrono::milliseconds>(released - crashed).count();
  std::printf("lock held %lld ms after the crash (core %llu bytes, stream %lld us, released %lld us after ack)\n",
              static_cast<long long>(held_ms), static_cast<unsigned long long>(rec->core_size),
              static_cast<long long>(rec->extra.value("stream_us", 0)), static_cast<long long>(rec->extra.value("released_us", 0)));
  // Without CLOSE_FILES the lock can only go when the task exits, after the stream: never sooner.
  EXPECT_GE(held_ms * 1000 + 50'000, rec->extra.value("stream_us", 0)) << "lock released before the core had streamed";
}

// By default RLIMIT_CORE is ignored, as by the systemd-coredump Debian ships (passed 2^63 for %c):
// `ulimit -c 0`, the usual shell setting, still gets its core stored.
TEST_F(RealKernel, RlimitCoreZeroIsStoredByDefault) {
  ScopedCoreLimit zero(0);
  pid_t pid = 0;
  const auto rec = complete_dump_of_crash({"--mode", "segv"}, &pid);
  ASSERT_TRUE(rec);
  EXPECT_GT(rec->core_size, 0u);
  EXPECT_FALSE(rec->path.empty());
  EXPECT_EQ(rec->extra.value("rlimit_core", UINT64_MAX), 0u) << "the limit is still recorded";
}

// honor_rlimit_core: a limit below one page means no core, as in systemd-coredump (0 and 100 alike).
TEST_F(RealKernel, RlimitCoreBelowAPageIsHonouredWhenAsked) {
  start_daemon(R"({"defaults": {"honor_rlimit_core": true}})");
  for (const std::uint64_t limit : {0u, 100u}) {
    ScopedCoreLimit small(limit);
    pid_t pid = 0;
    const auto st = crash({"--mode", "segv"}, &pid);
    ASSERT_TRUE(st.exited);
    EXPECT_EQ(st.term_signal(), SIGSEGV);
    EXPECT_FALSE(st.core_dumped()) << "REJECT: the kernel reports no core";
    const auto rec = stored_dump_of(pid);
    ASSERT_TRUE(rec);
    EXPECT_EQ(rec->state, DumpState::Rejected);
    const std::string why = "RLIMIT_CORE is " + std::to_string(limit) + " bytes, below one page";
    EXPECT_NE(rec->reason.find(why), std::string::npos) << rec->reason;
    EXPECT_TRUE(rec->path.empty());
    EXPECT_TRUE(wait_until([&] { return daemon_->log().find(why) != std::string::npos; }, 5s));
    // No core, so no notes: the signal is the kernel's (PIDFD_INFO_COREDUMP_SIGNAL, 6.19+), or the
    // record and `dumpctl info` say this kernel does not report it (6.18).
    const auto [ist, info] = run_capture({DUMPCTL_BIN, "--store", store_, "info", rec->id});
    EXPECT_EQ(ist.exit_code(), 0) << info;
    if (rec->signal) {
      EXPECT_EQ(*rec->signal, SIGSEGV);
      EXPECT_NE(info.find("Signal: 11 (SEGV)"), std::string::npos) << info;  // coredumpctl's short name
    } else {
      EXPECT_NE(rec->extra.value("signal_unavailable", "").find("this kernel does not report it"), std::string::npos)
          << rec->extra.dump();
      EXPECT_NE(info.find("Signal: not known: this kernel does not report it before the core"), std::string::npos) << info;
    }
  }
}

// A collector that blocks for 5 s: the ack still goes out at the 2 s handshake deadline, the dump
// is stored, and the record says which metadata was given up.
TEST_F(RealKernel, HandshakeDeadlineHoldsWhenACollectorBlocks) {
  // Causal bounds, not speed limits: no ack before the 1 s deadline, and one well before the 5 s
  // collector returns, however loaded the machine.
  start_daemon(R"({"handshake_timeout_ms": 1000, "testing": {"collector_delay_ms": 5000}})", {"--enable-test-hooks"});
  pid_t pid = 0;
  const auto st = crash({"--mode", "segv"}, &pid);
  ASSERT_TRUE(st.exited);
  EXPECT_TRUE(st.core_dumped());
  const auto rec = stored_dump_of(pid);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->state, DumpState::Complete) << rec->reason;
  expect_released_promptly(*rec);
  const auto handshake_us = rec->extra.value("handshake_us", std::int64_t{0});
  EXPECT_GE(handshake_us, 500'000) << "acked before the deadline: the blocking collector did not run";
  EXPECT_LT(handshake_us, 4'500'000) << "the task stayed frozen until the blocked collector returned";
  EXPECT_TRUE(rec->extra["collect_errors"].contains("collect"));
  // The ack went out before the collector came back: its steps are not there.
  EXPECT_TRUE(rec->extra["handshake_steps_us"].contains("request"));
  EXPECT_FALSE(rec->extra["handshake_steps_us"].contains("collected"));
}

// Bytes process `pid` has written (the "wchar" of /proc/<pid>/io): a dumping task's writes to the
// core socket count, so it follows the stream. 0 if it cannot be read (the task is gone).
std::uint64_t written_by(pid_t pid) {
  const auto io = read_file("/proc/" + std::to_string(pid) + "/io");
  if (!io) return 0;
  const auto at = io->find("wchar: ");
  return at == std::string::npos ? 0 : std::stoull(io->substr(at + 7));
}

// The crasher is SIGKILLed while the kernel streams its 512 MiB core. The stream is held mid-core
// without any daemon knob: once the task has written 64 MiB, the daemon is SIGSTOPped, so the
// kernel blocks on the full socket; then the task is killed and the daemon continued. The kernel
// closes the stream at that point with a clean EOF: only the core's program headers tell it short.
TEST_F(RealKernel, CoreStreamCutBySigkillIsRecordedTruncatedWithTheCause) {
  constexpr std::uint64_t kCoreMib = 512;
  struct Continue {  // the daemon must never stay stopped, whatever fails
    pid_t pid;
    ~Continue() { ::kill(pid, SIGCONT); }
  } resume{daemon_->pid()};
  pid_t pid = 0;
  bool held = false;
  for (int attempt = 0; attempt < 3 && !held; ++attempt) {  // a descheduled test may miss the stream
    pid = spawn({CRASHER_BIN, "--mode", "segv", "--touch-mib", std::to_string(kCoreMib), "--fill", "random"});
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (written_by(pid) < (64u << 20) && std::chrono::steady_clock::now() < deadline) ::usleep(200);
    ASSERT_EQ(::kill(daemon_->pid(), SIGSTOP), 0);
    // Held once the writes stop short of the memory (unchanged over 500 ms of polls): the kernel is
    // blocked on the full socket. A stream that ran to its end before the stop is not held.
    std::uint64_t last = written_by(pid);
    auto changed = std::chrono::steady_clock::now();
    bool ended = false;
    held = wait_until(
               [&] {
                 const std::uint64_t w = written_by(pid);
                 const auto now = std::chrono::steady_clock::now();
                 if (w != last) last = w, changed = now;
                 ended = w == 0 || w >= (kCoreMib << 20);
                 return ended || now - changed >= 500ms;
               },
               30s) &&
           !ended;
    if (!held) {
      ::kill(daemon_->pid(), SIGCONT);
      wait_for(pid, 60s);
    }
  }
  ASSERT_TRUE(held) << "three crashes finished their stream before the daemon could be stopped";
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  const auto st = wait_for(pid, 60s);  // reaped here: the daemon may then read its PIDFD_INFO_EXIT
  ::kill(daemon_->pid(), SIGCONT);
  ASSERT_TRUE(st.exited);
  EXPECT_EQ(st.term_signal(), SIGKILL);
  EXPECT_FALSE(st.core_dumped());

  const auto rec = stored_dump_of(pid);
  ASSERT_TRUE(rec) << "no dump indexed for pid " << pid;
  EXPECT_EQ(rec->state, DumpState::Truncated) << rec->reason;
  expect_released_promptly(*rec);
  const auto expected = rec->extra.value("core_expected_bytes", std::uint64_t{0});
  const auto received = rec->extra.value("core_received_bytes", std::uint64_t{0});
  EXPECT_GT(expected, kCoreMib << 20) << rec->extra.dump();
  EXPECT_GE(received, 64u << 20);
  EXPECT_LT(received, expected);
  EXPECT_EQ(received, rec->core_size);
  EXPECT_EQ(rec->extra.value("task_exit_status", -1), SIGKILL);
  EXPECT_NE(rec->reason.find("core stream ended after " + std::to_string(received) + " of the " +
                             std::to_string(expected) + " bytes its program headers promise"),
            std::string::npos)
      << rec->reason;
  EXPECT_NE(rec->reason.find("the crashing task was killed by SIGKILL while its core streamed"), std::string::npos)
      << rec->reason;
  // The partial core is kept: what arrived is still useful.
  EXPECT_FALSE(rec->path.empty());
  EXPECT_GT(rec->stored_size, 0u);
  EXPECT_TRUE(wait_until([&] { return daemon_->log().find(rec->id + ": pid " + std::to_string(pid)) != std::string::npos; }, 5s));
  const std::string log = daemon_->log();
  EXPECT_NE(log.find("truncated: core stream ended after " + std::to_string(received)), std::string::npos) << log;

  const auto [ist, info] = run_capture({DUMPCTL_BIN, "--store", store_, "info", rec->id});
  EXPECT_EQ(ist.exit_code(), 0);
  EXPECT_NE(info.find("Warning: the core is short: " + std::to_string(received) + " of " + std::to_string(expected) +
                      " bytes arrived"),
            std::string::npos)
      << info;
  // A truncated record that says so is consistent: verify finds nothing wrong.
  const auto [vst, verify_out] = run_capture({DUMPCTL_BIN, "--store", store_, "verify", "--deep"});
  EXPECT_EQ(vst.exit_code(), 0) << verify_out;
}

// core_pattern is put back even when the process holding the lock dies from a signal.
TEST(CorePatternLockTest, RestoredWhenHolderDiesFromSignal) {
  SKIP_WITHOUT_REAL_KERNEL("core_pattern lock test");
  const pid_t child = ::fork();
  if (child == 0) {
    CorePatternLock lock("@@/run/coredumpd-test-nonexistent.socket");
    ::raise(SIGTERM);
    ::_exit(0);
  }
  const auto st = wait_for(child, 320s);
  ASSERT_TRUE(st.exited);
  EXPECT_EQ(st.term_signal(), SIGTERM);
  // Take the lock ourselves so we read the value after the child's restore, not mid-change.
  CorePatternLock probe("core");
  EXPECT_NE(probe.previous(), "@@/run/coredumpd-test-nonexistent.socket");
}

}  // namespace
