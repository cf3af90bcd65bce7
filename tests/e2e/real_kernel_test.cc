// End-to-end tests against the real kernel: coredumpd on a temp store, core_pattern pointed at it
// (under the global lock), real programs crash, and we check what was stored.
#include <gelf.h>
#include <libelf.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <climits>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <memory>

#include "daemon/store/index.h"
#include "tests/support/test_support.h"

using namespace coredumpd;
using namespace coredumpd::test;

namespace {

// Facts read back from a stored core with elfutils, independently of the daemon's own note scanner.
struct CoreCheck {
  bool is_core = false;
  int prstatus_signal = 0;
  long prstatus_pid = 0;
};

CoreCheck inspect_core(const std::string& path) {
  CoreCheck c;
  elf_version(EV_CURRENT);
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return c;
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  GElf_Ehdr eh;
  if (elf && gelf_getehdr(elf, &eh) && eh.e_type == ET_CORE) {
    c.is_core = true;
    std::size_t phnum = 0;
    elf_getphdrnum(elf, &phnum);
    for (std::size_t i = 0; i < phnum && c.prstatus_pid == 0; ++i) {
      GElf_Phdr ph;
      if (!gelf_getphdr(elf, static_cast<int>(i), &ph) || ph.p_type != PT_NOTE) continue;
      Elf_Data* data = elf_getdata_rawchunk(elf, static_cast<off_t>(ph.p_offset), ph.p_filesz, ELF_T_NHDR);
      GElf_Nhdr nh;
      std::size_t off = 0, name_off = 0, desc_off = 0;
      while (data && (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
        if (nh.n_type == NT_PRSTATUS) {
          const auto* desc = static_cast<const char*>(data->d_buf) + desc_off;
          std::uint16_t cursig = 0;
          std::int32_t pid = 0;
          std::memcpy(&cursig, desc + 12, 2);  // pr_cursig (x86_64 elf_prstatus)
          std::memcpy(&pid, desc + 32, 4);     // pr_pid
          c.prstatus_signal = cursig;
          c.prstatus_pid = pid;
          break;
        }
      }
    }
  }
  if (elf) elf_end(elf);
  ::close(fd);
  return c;
}

class RealKernel : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = real_kernel_unavailable()) {
      std::fprintf(stderr, "SKIPPED real-kernel test: %s\n", why->c_str());
      GTEST_SKIP() << *why;
    }
    dir_ = std::make_unique<TempDir>();
    socket_ = *dir_ / "coredump.socket";
    store_ = *dir_ / "store";
    daemon_ = std::make_unique<Daemon>(COREDUMPD_BIN, socket_, store_, *dir_ / "coredumpd.log");
    pattern_ = std::make_unique<CorePatternLock>("@@" + socket_);
  }

  void TearDown() override {
    pattern_.reset();  // restore core_pattern first: nothing else may crash into our socket
    if (daemon_) {
      const auto st = daemon_->stop();
      EXPECT_EQ(st.exit_code(), 0) << "coredumpd did not stop cleanly; log:\n" << daemon_->log();
      if (HasFailure()) std::fprintf(stderr, "coredumpd log:\n%s\n", daemon_->log().c_str());
    }
  }

  // Crashes the crasher with `args` and returns its exit status (bounded: 60 s, then SIGKILL).
  ExitStatus crash(const std::vector<std::string>& args, pid_t* pid_out) {
    std::vector<std::string> argv{CRASHER_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    const pid_t pid = spawn(argv);
    *pid_out = pid;
    return wait_for(pid, 60s);
  }

  // Waits (bounded) until the dump of `pid` has left InProgress, and returns it.
  std::optional<DumpRecord> stored_dump_of(pid_t pid) {
    std::optional<DumpRecord> found;
    wait_until(
        [&] {
          try {
            Index index(store_, false);
            for (auto& r : index.list())
              if (r.pid == pid && r.state != DumpState::InProgress) found = r;
          } catch (const IndexError&) {
          }
          return found.has_value();
        },
        30s);
    return found;
  }

  std::unique_ptr<TempDir> dir_;
  std::string socket_, store_;
  std::unique_ptr<Daemon> daemon_;
  std::unique_ptr<CorePatternLock> pattern_;
};

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

  // dumpctl gives back the exact ELF core the kernel sent.
  const std::string out = *dir_ / "core.out";
  const auto [dst, dtext] = run_capture({DUMPCTL_BIN, "--store", store_, "dump", rec->id, "-o", out});
  ASSERT_EQ(dst.exit_code(), 0) << dtext;
  EXPECT_EQ(std::filesystem::file_size(out), rec->core_size);
  const auto core = inspect_core(out);
  EXPECT_TRUE(core.is_core);
  EXPECT_EQ(core.prstatus_signal, SIGSEGV);
  EXPECT_EQ(core.prstatus_pid, pid);

  const auto [lst, list] = run_capture({DUMPCTL_BIN, "--store", store_, "list"});
  EXPECT_EQ(lst.exit_code(), 0);
  EXPECT_NE(list.find(std::to_string(pid)), std::string::npos) << list;
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
  ASSERT_EQ(::send(fd, req, sizeof(req), MSG_NOSIGNAL), 16);
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  char buf[64];
  const auto n = ::recv(fd, buf, sizeof(buf), 0);
  EXPECT_LE(n, 0) << "an impostor must get no ack";
  ::close(fd);
  EXPECT_TRUE(wait_until([&] { return daemon_->log().find("not a crashing task") != std::string::npos; }, 5s))
      << daemon_->log();
  Index index(store_, false);
  EXPECT_TRUE(index.list().empty());
}

// core_pattern is put back even when the process holding the lock dies from a signal.
TEST(CorePatternLockTest, RestoredWhenHolderDiesFromSignal) {
  if (auto why = real_kernel_unavailable()) {
    std::fprintf(stderr, "SKIPPED: %s\n", why->c_str());
    GTEST_SKIP() << *why;
  }
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
