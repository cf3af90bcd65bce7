// Real kernel + systemd-nspawn: a crash inside a booted Debian machine is forwarded by the host
// coredumpd (rule: runtime systemd-nspawn -> action forward) to a coredumpd inside the machine,
// socket-activated by the machine's own systemd (a socket unit and its service, accept_forwarded):
// the forward's connection starts it, and the dump lands in the inner store. With the socket unit
// stopped (and its socket file removed), the next crash falls back to the host store.
//
// The machine's root is a minimal bookworm made once with debootstrap into kCache (reused across
// runs, never written: the machine boots with --volatile=overlay). Without network (the mirror
// cannot be resolved or reached) the test skips saying which; any other debootstrap failure fails
// it. The machine runs in a cgroup named like machinectl's template unit
// (machine.slice/systemd-nspawn@<name>.service), which is how coredumpd identifies nspawn machines.
// The inner coredumpd is this build's binary, run with the host's dynamic loader and libraries
// (bind-mounted read-only), so the machine needs none of the build's packages.
#include <fcntl.h>
#include <netdb.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "tests/e2e/real_kernel_fixture.h"

using namespace coredumpd;
using namespace coredumpd::test;
namespace fs = std::filesystem;

namespace {

constexpr const char* kCache = "/var/cache/coredumpd-tests/bookworm";
constexpr const char* kNspawn = "/usr/bin/systemd-nspawn";
constexpr const char* kDebootstrap = "/usr/sbin/debootstrap";
constexpr const char* kInnerSocket = "/run/coredumpd/coredump.socket";

constexpr const char* kMirrorHost = "deb.debian.org";
constexpr const char* kMirror = "http://deb.debian.org/debian";
constexpr const char* kSuite = "bookworm";

// Why the mirror cannot be reached, or std::nullopt if it can: a DNS lookup of its host (unless
// a proxy resolves it for us), then a HEAD of the suite's Release file with wget, debootstrap's own
// downloader, bounded (20 s, one try). Only this decides that a failing debootstrap means "no network";
// a mirror that answers, even with an error, is reachable.
std::optional<std::string> mirror_unreachable() {
  const char* proxy = std::getenv("http_proxy");
  if (proxy == nullptr || *proxy == '\0') {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (const int rc = ::getaddrinfo(kMirrorHost, "80", &hints, &found); rc != 0)
      return std::string("DNS lookup of ") + kMirrorHost + " failed: " + ::gai_strerror(rc);
    ::freeaddrinfo(found);
  }
  const std::string release = std::string(kMirror) + "/dists/" + kSuite + "/Release";
  const auto [st, out] =
      run_capture({"/bin/sh", "-c", "exec wget --spider --timeout=20 --tries=1 \"$0\" 2>&1", release}, 60s);
  // wget's exit status 4 is a network failure (resolving, connecting, a timeout); any other one
  // means the mirror answered (8: an HTTP error, e.g. 404), which is not "no network".
  if (!st.exited || st.exit_code() == 4)
    return "HEAD " + release + (st.exited ? " failed (wget: network failure): " : " timed out: ") +
           out.substr(out.size() > 300 ? out.size() - 300 : 0);
  return std::nullopt;
}

// The last `lines` lines of `text`.
std::string tail_lines(const std::string& text, int lines) {
  std::size_t pos = text.size();
  while (lines-- > 0 && pos > 0) {
    const auto nl = text.rfind('\n', pos - 1);
    if (nl == std::string::npos) return text;
    pos = nl;
  }
  return text.substr(pos);
}

// Why there is no machine root: a network failure (the test skips) or anything else (it fails).
struct RootProblem {
  bool network = false;
  std::string why;
};

// Makes kCache once (under a lock, into a temp dir renamed on success). The mirror's reachability
// is checked first, and again after a failure (the network may have gone meanwhile); any other
// debootstrap failure is reported with the tail of its log.
std::optional<RootProblem> ensure_root() {
  fs::create_directories(fs::path(kCache).parent_path());
  const int lock = ::open((std::string(kCache) + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock < 0 || ::flock(lock, LOCK_EX) != 0)
    return RootProblem{false, "cannot lock " + std::string(kCache) + ".lock"};
  std::optional<RootProblem> problem;
  if (!fs::exists(std::string(kCache) + "/lib/systemd/systemd")) {
    const std::string tmp = std::string(kCache) + ".tmp";
    fs::remove_all(tmp);
    if (auto why = mirror_unreachable()) {
      problem = RootProblem{true, "cannot debootstrap " + std::string(kSuite) + ", the mirror is unreachable: " + *why};
    } else {
      const auto [st, out] = run_capture({"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1", kDebootstrap, "--variant=minbase",
                                          "--include=systemd,systemd-sysv,dbus", kSuite, tmp, kMirror},
                                         900s);
      if (st.exit_code() == 0) {
        fs::rename(tmp, kCache);
      } else if (auto gone = mirror_unreachable()) {
        problem = RootProblem{true, "debootstrap failed and the mirror is now unreachable: " + *gone};
      } else {
        const auto log = read_file(tmp + "/debootstrap/debootstrap.log");
        problem = RootProblem{false, "debootstrap of " + std::string(kSuite) + " failed (exit " +
                                         std::to_string(st.exit_code()) + ", " + (st.exited ? "" : "timed out, ") +
                                         "mirror reachable); its output:\n" + tail_lines(out, 15) +
                                         "\n" + tmp + "/debootstrap/debootstrap.log:\n" +
                                         (log ? tail_lines(*log, 30) : "(none)")};
      }
      fs::remove_all(tmp);
    }
  }
  ::close(lock);
  return problem;
}

// rmdir of a cgroup tree, children first (cgroupfs directories vanish only when empty).
void remove_cgroup(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_directory()) remove_cgroup(e.path());
  ::rmdir(dir.c_str());
}

class NspawnForward : public RealKernel {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_REAL_KERNEL("nspawn test");
    if (!fs::exists(kNspawn) || !fs::exists(kDebootstrap))
      GTEST_SKIP() << "needs systemd-nspawn and debootstrap (scripts/install-deps.sh installs them)";
    if (auto problem = ensure_root()) {
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
    if (machine_pid_ > 0) {
      ::kill(machine_pid_, SIGTERM);  // nspawn powers the machine off
      if (!wait_for(machine_pid_, 30s).exited) std::fprintf(stderr, "machine did not power off; killed\n");
    }
    for (const auto& c : cgroups_) {
      remove_cgroup(c);
      ::rmdir(c.parent_path().c_str());  // machine.slice, unless something else lives there
    }
    if (HasFailure() && dir_) {  // no dir_: SetUp failed before the daemon (debootstrap)
      if (const auto log = read_file(*dir_ / "machine.log")) std::fprintf(stderr, "machine log:\n%s\n", log->c_str());
      if (leader_ > 0) {
        const auto [st, j] = in_machine({"journalctl", "-u", "coredumpd-inner.socket", "-u", "coredumpd-inner.service",
                                         "--no-pager", "-n", "50"});
        std::fprintf(stderr, "inner coredumpd journal:\n%s\n", j.c_str());
      }
    }
  }

  void boot() {
    name_ = "cdfwd" + std::to_string(::getpid());
    inner_store_ = *dir_ / "inner-store";
    fs::create_directories(inner_store_);
    std::ofstream(*dir_ / "inner.json") << R"({"accept_forwarded": true})";
    std::string enter;  // the machine's cgroup, as machinectl start would place it
    for (const char* h : {"systemd", "unified"}) {
      const fs::path d = fs::path("/sys/fs/cgroup") / h / "machine.slice" / ("systemd-nspawn@" + name_ + ".service");
      if (!fs::exists(d.parent_path().parent_path())) continue;
      fs::create_directories(d);
      cgroups_.push_back(d);
      enter += "echo $$ > " + d.string() + "/cgroup.procs && ";
    }
    const auto dir_of = [](const char* p) { return fs::path(p).parent_path().string(); };
    const std::string cmd = enter + "exec " + kNspawn + " -b -q --register=no --keep-unit --volatile=overlay -M " + name_ +
                            " -D " + kCache + " --bind-ro=/usr:/opt/host-usr --bind-ro=" + dir_of(COREDUMPD_BIN) +
                            ":/opt/cd-daemon --bind-ro=" + dir_of(CRASHER_BIN) + ":/opt/cd-programs --bind=" + inner_store_ +
                            ":/var/lib/coredumpd --bind-ro=" + *dir_ / "inner.json" + ":/etc/coredumpd.json";
    machine_pid_ = spawn({"/bin/sh", "-c", cmd}, *dir_ / "machine.log");
    // The machine's init: nspawn's child running systemd; then wait for its boot to finish.
    ASSERT_TRUE(wait_until(
        [&] {
          const auto p = std::to_string(machine_pid_);
          const auto kids = read_file("/proc/" + p + "/task/" + p + "/children");
          if (!kids || kids->empty()) return false;
          leader_ = static_cast<pid_t>(std::stol(*kids));
          return read_file("/proc/" + std::to_string(leader_) + "/comm").value_or("") == "systemd\n";
        },
        30s))
        << "the machine did not start";
    ASSERT_TRUE(wait_until(
        [&] {
          const auto [st, out] = in_machine({"systemctl", "is-system-running"}, 10s);
          return out.starts_with("running") || out.starts_with("degraded");
        },
        90s))
        << "the machine did not finish booting";
    start_inner();
  }

  // coredumpd-inner.socket listens on kInnerSocket (systemd-run makes the socket unit and its
  // service); the service starts with the first connection and gets the socket from systemd.
  void start_inner() {
    const auto [st, out] = in_machine({"systemd-run", "-q", "--unit=coredumpd-inner",
                                       std::string("--socket-property=ListenStream=") + kInnerSocket,
                                       "--socket-property=RemoveOnStop=yes",
                                       "/opt/host-usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "--library-path",
                                       "/opt/host-usr/lib/x86_64-linux-gnu", "/opt/cd-daemon/coredumpd", "--socket",
                                       kInnerSocket, "--store", "/var/lib/coredumpd", "--config", "/etc/coredumpd.json",
                                       "--log-level", "debug"});
    ASSERT_EQ(st.exit_code(), 0) << out;
    const std::string sock = "/proc/" + std::to_string(leader_) + "/root" + kInnerSocket;
    ASSERT_TRUE(wait_until([&] { return fs::is_socket(sock); }, 30s)) << "coredumpd-inner.socket did not come up";
  }

  // `systemctl is-active UNIT` inside the machine ("active", "inactive", ...).
  std::string unit_state(const std::string& unit) {
    auto [st, out] = in_machine({"systemctl", "is-active", unit}, 10s);
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
  }

  // Runs `argv` in all of the machine's namespaces (bounded).
  std::pair<ExitStatus, std::string> in_machine(const std::vector<std::string>& argv, std::chrono::milliseconds t = 60s) {
    std::vector<std::string> full{"/usr/bin/nsenter", "-t", std::to_string(leader_), "-a"};
    full.insert(full.end(), argv.begin(), argv.end());
    return run_capture(full, t);
  }

  // Crashes the crasher inside the machine as a transient unit of the machine's systemd (so no
  // nsenter parent re-raises the signal and dumps too).
  void crash_inside() {
    in_machine({"systemd-run", "-q", "--wait", "-p", "LimitCORE=infinity", "/opt/cd-programs/crasher", "--mode", "segv"});
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

  std::string name_, inner_store_;
  std::vector<fs::path> cgroups_;
  pid_t machine_pid_ = -1, leader_ = -1;
};

TEST_F(NspawnForward, SocketActivatedReceiverGetsTheDumpAndAMissingSocketFallsBack) {
  ASSERT_EQ(unit_state("coredumpd-inner.socket"), "active");
  ASSERT_EQ(unit_state("coredumpd-inner.service"), "inactive") << "nothing has connected yet";
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
  EXPECT_EQ(host->extra["container"]["key"], "nspawn:" + name_);
  // Both views of the pid: the host's, and the one in the machine's pid namespace.
  ASSERT_TRUE(host->extra["container"]["ns_pid"].is_number_integer()) << host->extra["container"].dump();
  EXPECT_NE(host->extra["container"]["ns_pid"].get<std::int64_t>(), host->pid);
  EXPECT_EQ(host->extra["container"]["ns_uid"], host->uid) << "no user namespace: the same uid";
  EXPECT_EQ(inner->crashing_tid_ns, host->extra["container"]["ns_pid"].get<std::int64_t>())
      << "the core's NT_PRSTATUS pid, in the machine's pid namespace";
  EXPECT_EQ(host->extra["forward"]["outcome"], "delivered");
  EXPECT_EQ(host->core_size, inner->core_size);
  EXPECT_TRUE(host->path.empty()) << "a delivered dump keeps no core on the host";
  EXPECT_EQ(unit_state("coredumpd-inner.service"), "active") << "the forward's connection started the service";

  // The receiver is stopped and its socket removed: the next crash is stored on the host, with
  // the reason.
  const auto [sst, sout] = in_machine({"systemctl", "stop", "coredumpd-inner.socket", "coredumpd-inner.service"});
  ASSERT_EQ(sst.exit_code(), 0) << sout;
  ASSERT_FALSE(fs::exists("/proc/" + std::to_string(leader_) + "/root" + kInnerSocket)) << "RemoveOnStop=yes";
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
