// Real kernel + systemd-nspawn: a crash inside a booted Debian machine is forwarded by the host
// coredumpd (rule: runtime systemd-nspawn -> action forward) to a coredumpd inside the machine,
// socket-activated by the machine's own systemd (a socket unit and its service, accept_forwarded):
// the forward's connection starts it, and the dump lands in the inner store. With the socket unit
// stopped (and its socket file removed), the next crash falls back to the host store.
//
// The machine is tests/e2e/nspawn_machine.h's: a cached debootstrapped bookworm, booted with
// --volatile=overlay in a cgroup named like machinectl's (how coredumpd identifies nspawn machines).
// Without network for the first debootstrap the test skips saying why; any other failure fails it.
// The inner coredumpd is this build's binary, run with the host's dynamic loader and libraries
// (bind-mounted read-only), so the machine needs none of the build's packages.
#include <signal.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "tests/e2e/nspawn_machine.h"
#include "tests/e2e/real_kernel_fixture.h"

using namespace coredumpd;
using namespace coredumpd::test;
namespace fs = std::filesystem;

namespace {

const std::string kCache = std::string(kMachineCache) + "/bookworm";
constexpr const char* kInnerSocket = "/run/coredumpd/coredump.socket";

class NspawnForward : public RealKernel {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_REAL_KERNEL("nspawn test");
    if (!fs::exists(kNspawn) || !fs::exists(kDebootstrap))
      GTEST_SKIP() << "needs systemd-nspawn and debootstrap (scripts/install-deps.sh installs them)";
    if (auto problem = ensure_debootstrap_root(kCache)) {
      if (!problem->network) GTEST_FAIL() << problem->why;
      std::fprintf(stderr, "SKIPPED nspawn test: %s\n", problem->why.c_str());
      GTEST_SKIP() << problem->why;
    }
    start_daemon(R"({"rules": [{"name": "nspawn", "match": {"runtime": "systemd-nspawn"}, "action": "forward",
                                 "forward_socket": ")" + std::string(kInnerSocket) + R"("}]})");
    boot();
  }

  void TearDown() override {
    RealKernel::TearDown();  // core_pattern restored first
    if (HasFailure() && dir_) {  // no dir_: SetUp failed before the daemon (debootstrap)
      if (const auto log = read_file(*dir_ / "machine.log")) std::fprintf(stderr, "machine log:\n%s\n", log->c_str());
      if (machine_.running()) {
        const auto [st, j] = machine_.run({"journalctl", "-u", "coredumpd-inner.socket", "-u", "coredumpd-inner.service",
                                           "--no-pager", "-n", "50"});
        std::fprintf(stderr, "inner coredumpd journal:\n%s\n", j.c_str());
      }
    }
    machine_.stop();
  }

  void boot() {
    inner_store_ = *dir_ / "inner-store";
    fs::create_directories(inner_store_);
    std::ofstream(*dir_ / "inner.json") << R"({"accept_forwarded": true})";
    const auto dir_of = [](const char* p) { return fs::path(p).parent_path().string(); };
    const auto failed = machine_.boot("cdfwd" + std::to_string(::getpid()), kCache,
                                      {"--bind-ro=/usr:/opt/host-usr", "--bind-ro=" + dir_of(COREDUMPD_BIN) + ":/opt/cd-daemon",
                                       "--bind-ro=" + dir_of(CRASHER_BIN) + ":/opt/cd-programs",
                                       "--bind=" + inner_store_ + ":/var/lib/coredumpd",
                                       "--bind-ro=" + *dir_ / "inner.json" + ":/etc/coredumpd.json"},
                                      *dir_ / "machine.log");
    ASSERT_FALSE(failed) << *failed;
    start_inner();
  }

  // coredumpd-inner.socket listens on kInnerSocket (systemd-run makes the socket unit and its
  // service); the service starts with the first connection and gets the socket from systemd.
  void start_inner() {
    const auto [st, out] = machine_.run({"systemd-run", "-q", "--unit=coredumpd-inner",
                                       std::string("--socket-property=ListenStream=") + kInnerSocket,
                                       "--socket-property=RemoveOnStop=yes",
                                       "/opt/host-usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "--library-path",
                                       "/opt/host-usr/lib/x86_64-linux-gnu", "/opt/cd-daemon/coredumpd", "--socket",
                                       kInnerSocket, "--store", "/var/lib/coredumpd", "--config", "/etc/coredumpd.json",
                                       "--log-level", "debug"});
    ASSERT_EQ(st.exit_code(), 0) << out;
    const std::string sock = machine_.host_path(kInnerSocket);
    ASSERT_TRUE(wait_until([&] { return fs::is_socket(sock); }, 30s)) << "coredumpd-inner.socket did not come up";
  }

  // Crashes the crasher inside the machine as a transient unit of the machine's systemd (so no
  // nsenter parent re-raises the signal and dumps too).
  void crash_inside() {
    machine_.run({"systemd-run", "-q", "--wait", "-p", "LimitCORE=infinity", "/opt/cd-programs/crasher", "--mode", "segv"});
  }

  static std::optional<DumpRecord> settled(const std::string& store, std::size_t n, std::size_t index) {
    std::optional<DumpRecord> found;
    wait_until(
        [&] {
          try {
            auto all = Index(store, false).list();
            if (all.size() != n) return false;
            for (const auto& r : all)
              if (r.state == DumpState::InProgress) return false;
            std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.timestamp_us < b.timestamp_us; });
            found = all[index];
          } catch (const IndexError&) {
          }
          return found.has_value();
        },
        60s);
    return found;
  }

  std::string inner_store_;
  NspawnMachine machine_;
};

TEST_F(NspawnForward, SocketActivatedReceiverGetsTheDumpAndAMissingSocketFallsBack) {
  ASSERT_EQ(machine_.unit_state("coredumpd-inner.socket"), "active");
  ASSERT_EQ(machine_.unit_state("coredumpd-inner.service"), "inactive") << "nothing has connected yet";
  crash_inside();
  const auto inner = settled(inner_store_, 1, 0);
  ASSERT_TRUE(inner) << "no dump in the machine's store";
  EXPECT_EQ(inner->state, DumpState::Complete) << inner->reason;
  EXPECT_TRUE(inner->extra.contains("forwarded_from_host")) << inner->extra.dump();
  EXPECT_EQ(inner->signal, SIGSEGV);
  const std::string out = *dir_ / "inner.core";
  const auto [dst, dtext] = run_capture({DUMPCTL_BIN, "--store", inner_store_, "dump", inner->id, "-o", out});
  ASSERT_EQ(dst.exit_code(), 0) << dtext;
  const auto core = inspect_core(out);
  EXPECT_TRUE(core.is_core);
  EXPECT_EQ(core.prstatus_signal, SIGSEGV);

  const auto host = settled(store_, 1, 0);
  ASSERT_TRUE(host);
  EXPECT_EQ(host->state, DumpState::Forwarded) << host->reason << " " << host->extra.dump();
  expect_released_promptly(*host);
  EXPECT_EQ(host->comm, "crasher");
  EXPECT_EQ(host->extra["rule"], "nspawn");
  EXPECT_EQ(host->extra["container"]["runtime"], "systemd-nspawn");
  EXPECT_EQ(host->extra["container"]["key"], "nspawn:" + machine_.name());
  // Both views of the pid: the host's, and the one in the machine's pid namespace.
  ASSERT_TRUE(host->extra["container"]["ns_pid"].is_number_integer()) << host->extra["container"].dump();
  EXPECT_NE(host->extra["container"]["ns_pid"].get<std::int64_t>(), host->pid);
  EXPECT_EQ(host->extra["container"]["ns_uid"], host->uid) << "no user namespace: the same uid";
  EXPECT_EQ(inner->crashing_tid_ns, host->extra["container"]["ns_pid"].get<std::int64_t>())
      << "the core's NT_PRSTATUS pid, in the machine's pid namespace";
  EXPECT_EQ(host->extra["forward"]["outcome"], "delivered");
  EXPECT_EQ(host->core_size, inner->core_size);
  EXPECT_TRUE(host->path.empty()) << "a delivered dump keeps no core on the host";
  EXPECT_EQ(machine_.unit_state("coredumpd-inner.service"), "active") << "the forward's connection started the service";

  // The receiver is stopped and its socket removed: the next crash is stored on the host, with
  // the reason.
  const auto [sst, sout] = machine_.run({"systemctl", "stop", "coredumpd-inner.socket", "coredumpd-inner.service"});
  ASSERT_EQ(sst.exit_code(), 0) << sout;
  ASSERT_FALSE(fs::exists(machine_.host_path(kInnerSocket))) << "RemoveOnStop=yes";
  crash_inside();
  const auto fallback = settled(store_, 2, 1);
  ASSERT_TRUE(fallback);
  EXPECT_EQ(fallback->state, DumpState::Complete) << fallback->reason;
  expect_released_promptly(*fallback);
  EXPECT_EQ(fallback->extra["forward"]["outcome"], "fallback");
  const std::string why = fallback->extra["forward"].value("error", std::string());
  EXPECT_NE(why.find(std::string(kInnerSocket) + " in the root of pid"), std::string::npos) << why;
  EXPECT_NE(why.find(std::strerror(ENOENT)), std::string::npos) << why;
  ASSERT_FALSE(fallback->path.empty());
  EXPECT_TRUE(fs::exists(store_ + "/" + fallback->path));
  EXPECT_EQ(Index(inner_store_, false).list().size(), 1u);
}

}  // namespace
