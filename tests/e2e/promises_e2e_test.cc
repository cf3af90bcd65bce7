// What README.md promises about `coredumpd --install-pattern`, `coredumpd --probe`, the compressor's
// nice 10 once a core has streamed in, and `dumpctl debug` with a real gdb, checked with real
// crashes (issue 21, item 8). Each fact is compared with what the kernel or /proc says, read here
// independently of the daemon's own code.
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>

#include <array>
#include <csignal>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/e2e/probe_json.h"
#include "tests/e2e/real_kernel_fixture.h"
#include "tests/support/thread_sched.h"

using namespace coredumpd;
using namespace coredumpd::test;

namespace {

// What the lock installs while --install-pattern runs: a pattern no daemon of ours would write.
constexpr const char* kPlaceholder = "|/bin/false coredumpd-install-pattern-test";

std::string core_pattern() {
  auto p = read_file("/proc/sys/kernel/core_pattern").value_or("");
  while (!p.empty() && p.back() == '\n') p.pop_back();
  return p;
}

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

using BitNames = std::vector<std::pair<std::uint64_t, std::string>>;

// The names a mask's bits have in `table`; bits not in it are left out.
std::vector<std::string> named_bits(std::uint64_t mask, const BitNames& table) {
  std::vector<std::string> out;
  for (const auto& [bit, name] : table)
    if (mask & bit) out.push_back(name);
  return out;
}

// The pidfd_info mask the kernel fills for this (live) process when asked for the eight fields
// (uapi <linux/pidfd.h>: PIDFS_IOCTL_MAGIC 0xFF, PIDFD_GET_INFO nr 11, struct pidfd_info).
std::optional<std::uint64_t> own_pidfd_info_mask() {
  struct Info {
    std::uint64_t words[11];  // 88 bytes, as the daemon passes it
  };
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0));
  if (pidfd < 0) return std::nullopt;
  Info info{};
  info.words[0] = 0xFF;
  const int rc = ::ioctl(pidfd, _IOWR(0xFF, 11, Info), &info);
  ::close(pidfd);
  if (rc != 0) return std::nullopt;
  return info.words[0];
}


}  // namespace

// --install-pattern: the daemon itself points core_pattern at its socket (the lock holds the
// pattern it found, kPlaceholder), and puts that pattern back when it stops.
class RealKernelInstallPattern : public RealKernel {
 protected:
  void SetUp() override {
    if (auto why = real_kernel_unavailable()) {
      std::fprintf(stderr, "SKIPPED real-kernel test: %s\n", why->c_str());
      GTEST_SKIP() << *why;
    }
    dir_ = std::make_unique<TempDir>();
    socket_ = *dir_ / "coredump.socket";
    store_ = *dir_ / "store";
    pattern_ = std::make_unique<CorePatternLock>(kPlaceholder);
    daemon_ = std::make_unique<Daemon>(COREDUMPD_BIN, socket_, store_, *dir_ / "coredumpd.log",
                                       std::vector<std::string>{"--install-pattern"});
    ASSERT_TRUE(wait_until([&] { return core_pattern() == "@@" + socket_; }, 10s))
        << "core_pattern is " << core_pattern() << "; log:\n" << daemon_->log();
  }
};

TEST_F(RealKernelInstallPattern, ACrashReachesTheDaemonAndStopRestoresThePattern) {
  pid_t pid = 0;
  const auto rec = complete_dump_of_crash({"--mode", "segv"}, &pid);
  ASSERT_TRUE(rec);
  EXPECT_TRUE(dumped_core_of(*rec, pid, SIGSEGV));
  const auto st = daemon_->stop();
  EXPECT_EQ(st.exit_code(), 0) << daemon_->log();
  EXPECT_EQ(core_pattern(), kPlaceholder) << "the pattern found at start is back";
}

// A pattern somebody else wrote while the daemon ran is theirs: the daemon leaves it.
TEST_F(RealKernelInstallPattern, StopLeavesAPatternSomebodyElseSet) {
  const std::string other = "|/bin/true coredumpd-install-pattern-other";
  {
    FILE* f = std::fopen("/proc/sys/kernel/core_pattern", "w");
    ASSERT_NE(f, nullptr);
    std::fputs(other.c_str(), f);
    ASSERT_EQ(std::fclose(f), 0);
  }
  const auto st = daemon_->stop();
  EXPECT_EQ(st.exit_code(), 0) << daemon_->log();
  EXPECT_EQ(core_pattern(), other);
  EXPECT_NE(daemon_->log().find("changed by someone else"), std::string::npos) << daemon_->log();
}

// --probe: JSON whose every fact matches the kernel, /proc and the store, read here independently.
TEST_F(RealKernel, ProbeTellsWhatTheKernelSays) {
  auto p = probe(store_);
  auto release = read_file("/proc/sys/kernel/osrelease").value_or("");
  while (!release.empty() && release.back() == '\n') release.pop_back();
  EXPECT_EQ(p["kernel"], release);
  EXPECT_EQ(p["core_modes"], nlohmann::json(words(read_file("/proc/sys/kernel/core_modes").value_or(""))));
  EXPECT_EQ(p["socket_protocol"], "@@ (request/ack, 6.17+)") << "real_kernel_unavailable() found the @@ protocol";
  EXPECT_EQ(p["core_pattern"], "@@" + socket_) << "the fixture's pattern, under the lock";

  // pidfd: the daemon asks about itself through SO_PEERPIDFD; this process asks about itself.
  const auto& pidfd = p["pidfd"];
  EXPECT_EQ(pidfd["so_peerpidfd"], true) << pidfd.dump();
  EXPECT_EQ(pidfd["pidfd_get_info"], true) << pidfd.dump();
  const auto mask = own_pidfd_info_mask();
  ASSERT_TRUE(mask) << "PIDFD_GET_INFO failed here: " << std::strerror(errno);
  EXPECT_EQ(pidfd["pidfd_info_mask"], *mask);
  const BitNames pidfd_names{
      {1, "PID"}, {2, "CREDS"}, {4, "CGROUPID"}, {8, "EXIT"}, {16, "COREDUMP"}, {32, "SUPPORTED_MASK"}};
  for (const auto& [bit, name] : pidfd_names) {
    const bool listed = std::find(pidfd["pidfd_info_fields"].begin(), pidfd["pidfd_info_fields"].end(), name) !=
                        pidfd["pidfd_info_fields"].end();
    EXPECT_EQ(listed, (*mask & bit) != 0) << name << " in " << pidfd.dump();
  }

  // host_namespaces: PID 1's inode where /proc/1/ns can be read; elsewhere the kernel's fixed inode
  // of the initial namespace (include/linux/proc_ns.h PROC_*_INIT_INO; net and mnt since 6.18).
  const auto& ns = p["host_namespaces"];
  const std::vector<std::pair<std::string, std::uint64_t>> init_inodes{
      {"ipc", 0xEFFFFFFF}, {"uts", 0xEFFFFFFE}, {"user", 0xEFFFFFFD}, {"pid", 0xEFFFFFFC},
      {"cgroup", 0xEFFFFFFB}, {"time", 0xEFFFFFFA}, {"net", 0xEFFFFFF9}, {"mnt", 0xEFFFFFF8}};
  int major = 0, minor = 0;
  std::sscanf(release.c_str(), "%d.%d", &major, &minor);
  const bool fixed_net_mnt = major > 6 || (major == 6 && minor >= 18);
  std::size_t readable = 0;
  for (const auto& [type, init_ino] : init_inodes) {
    struct stat sb {};
    if (::stat(("/proc/1/ns/" + type).c_str(), &sb) == 0) {
      ++readable;
      EXPECT_EQ(ns["inodes"][type], static_cast<std::uint64_t>(sb.st_ino)) << type << ": " << ns.dump();
      EXPECT_EQ(ns["sources"][type], "/proc/1/ns") << type;
    } else if (fixed_net_mnt || (type != "net" && type != "mnt")) {
      EXPECT_EQ(ns["inodes"][type], init_ino) << type << ": " << ns.dump();
      EXPECT_EQ(ns["sources"][type], "init inode") << type << ": " << ns.dump();
    }
  }
  if (fixed_net_mnt || readable == 8) {
    EXPECT_TRUE(ns["missing"].empty()) << ns.dump();
  }
  EXPECT_EQ(ns["pid1_error"].is_null(), readable == 8) << ns.dump();
  EXPECT_EQ(p["close_files_bit"], p["close_files_bit_default"]) << "no configuration";
  EXPECT_TRUE(p["last_offered"].is_null()) << "an empty store: " << p["last_offered"].dump();

  // After a real crash: the mask the kernel offered for it, with the kernel's names for the bits
  // (uapi <linux/coredump.h>); 6.17+ offers at least the four base flags.
  pid_t pid = 0;
  const auto rec = complete_dump_of_crash({"--mode", "segv"}, &pid);
  ASSERT_TRUE(rec);
  p = probe(store_);
  const auto& offered = p["last_offered"];
  ASSERT_TRUE(offered.is_object()) << p.dump(2);
  EXPECT_EQ(offered["dump"], rec->id);
  const auto offered_mask = offered["mask"].get<std::uint64_t>();
  EXPECT_EQ(offered_mask, rec->extra["request"]["mask"].get<std::uint64_t>());
  EXPECT_EQ(offered_mask & 0xF, 0xFu) << "KERNEL|USERSPACE|REJECT|WAIT";
  const auto names = named_bits(offered_mask, {{1, "KERNEL"}, {2, "USERSPACE"}, {4, "REJECT"}, {8, "WAIT"},
                                               {16, "RECORDS"}, {32, "SPARSE"}, {64, "MEMORY_TYPES"}});
  for (const auto& n : names)
    EXPECT_NE(std::find(offered["flags"].begin(), offered["flags"].end(), n), offered["flags"].end())
        << n << " " << offered.dump();
  EXPECT_GT(offered["request_size"].get<int>(), 0);
}

// Once a core has streamed in, its compressor leaves SCHED_IDLE for nice 10, and the zstd workers it
// starts are at nice 10 too. The daemon holds the dump there (--test-hold-before-store), with the
// workers alive, so /proc can be read at leisure; SCHED_IDLE while streaming is checked with the
// fake kernel, which can stop a stream halfway (tests/integration/compress_priority_test.cc).
TEST_F(RealKernel, CompressorAndItsZstdWorkersRunAtNice10AfterTheStream) {
  constexpr int kWorkers = 2;
  restart_daemon(R"({"compression": {"threads": 2}, "compression_jobs": 1})",
                 {"--enable-test-hooks", "--test-hold-before-store"});
  pid_t pid = 0;
  const auto st = crash({"--mode", "segv", "--touch-mib", "64", "--fill", "half-zero"}, &pid);
  ASSERT_TRUE(st.exited);
  EXPECT_TRUE(st.core_dumped());
  ASSERT_TRUE(wait_until([&] { return daemon_->log().find("holding before storing") != std::string::npos; }, 60s))
      << daemon_->log();
  const auto threads = threads_named(daemon_->pid(), "cd-compress");
  EXPECT_EQ(threads.size(), 1u + kWorkers) << "the compressor and its zstd workers, by name";
  for (const auto& t : threads) {
    EXPECT_EQ(t.policy, SCHED_OTHER) << "thread " << t.tid;
    EXPECT_EQ(t.nice, 10) << "thread " << t.tid;
  }
  // Nothing else of the daemon is lowered: the accept thread runs ahead of all (kHandshakeNice < 0).
  const auto main_thread = read_file("/proc/" + std::to_string(daemon_->pid()) + "/task/" +
                                     std::to_string(daemon_->pid()) + "/comm");
  EXPECT_NE(main_thread.value_or(""), "cd-compress\n");
  daemon_->kill_hard();  // the held dump would never end
}

// `dumpctl debug ID -- -batch -ex bt` runs gdb on the executable and the stored core: the
// backtrace names the function of tests/programs/crasher.cc that faulted.
TEST_F(RealKernel, DumpctlDebugBacktraceNamesTheCrashingFunction) {
  if (::access("/usr/bin/gdb", X_OK) != 0) FAIL() << "gdb is missing (scripts/install-deps.sh installs it)";
  pid_t pid = 0;
  const auto rec = complete_dump_of_crash({"--mode", "segv"}, &pid);
  ASSERT_TRUE(rec);
  const auto [st, out] =
      run_capture({DUMPCTL_BIN, "--store", store_, "debug", rec->id, "--", "-batch", "-ex", "bt"}, 120s);
  EXPECT_EQ(st.exit_code(), 0) << out;
  // The innermost frame is the faulting store in crash_segv, called from main.
  const auto frame0 = out.find("#0 ");
  ASSERT_NE(frame0, std::string::npos) << out;
  const auto line0 = out.substr(frame0, out.find('\n', frame0) - frame0);
  EXPECT_NE(line0.find("crash_segv"), std::string::npos) << out;
  EXPECT_NE(line0.find("crasher.cc"), std::string::npos) << out;
  EXPECT_NE(out.find(" main "), std::string::npos) << out;
}
