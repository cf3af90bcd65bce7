#include "tests/e2e/nspawn_machine.h"

#include <fcntl.h>
#include <netdb.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <system_error>

namespace coredumpd::test {

namespace fs = std::filesystem;

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

std::string tail_lines(const std::string& text, int lines) {
  std::size_t pos = text.size();
  while (lines-- > 0 && pos > 0) {
    const auto nl = text.rfind('\n', pos - 1);
    if (nl == std::string::npos) return text;
    pos = nl;
  }
  return text.substr(pos);
}

std::optional<RootProblem> ensure_debootstrap_root(const std::string& root, const std::vector<std::string>& include) {
  fs::create_directories(fs::path(root).parent_path());
  const std::string debs = std::string(kMachineCache) + "/debs";
  fs::create_directories(debs);
  const int lock = ::open((root + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock < 0 || ::flock(lock, LOCK_EX) != 0) {
    if (lock >= 0) ::close(lock);
    return RootProblem{false, "cannot lock " + root + ".lock"};
  }
  std::optional<RootProblem> problem;
  if (!fs::exists(root + "/lib/systemd/systemd")) {
    const std::string tmp = root + ".tmp";
    fs::remove_all(tmp);
    std::string packages = "systemd,systemd-sysv,dbus";
    for (const auto& p : include) packages += "," + p;
    if (auto why = mirror_unreachable()) {
      problem = RootProblem{true, "cannot debootstrap " + std::string(kSuite) + ", the mirror is unreachable: " + *why};
    } else {
      const auto [st, out] = run_capture({"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1", kDebootstrap, "--variant=minbase",
                                          "--cache-dir=" + debs, "--include=" + packages, kSuite, tmp, kMirror},
                                         900s);
      if (st.exit_code() == 0) {
        fs::rename(tmp, root);
      } else if (auto gone = mirror_unreachable()) {
        problem = RootProblem{true, "debootstrap failed and the mirror is now unreachable: " + *gone};
      } else {
        const auto log = read_file(tmp + "/debootstrap/debootstrap.log");
        problem = RootProblem{false, "debootstrap of " + std::string(kSuite) + " (" + packages + ") failed (exit " +
                                         std::to_string(st.exit_code()) + ", " + (st.exited ? "" : "timed out, ") +
                                         "mirror reachable); its output:\n" + tail_lines(out, 15) + "\n" + tmp +
                                         "/debootstrap/debootstrap.log:\n" + (log ? tail_lines(*log, 30) : "(none)")};
      }
      fs::remove_all(tmp);
    }
  }
  ::close(lock);
  return problem;
}

namespace {

// rmdir of a cgroup tree, children first (cgroupfs directories vanish only when empty).
void remove_cgroup(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_directory()) remove_cgroup(e.path());
  ::rmdir(dir.c_str());
}

}  // namespace

NspawnMachine::~NspawnMachine() { stop(); }

std::optional<std::string> NspawnMachine::boot(const std::string& name, const std::string& root,
                                               const std::vector<std::string>& extra_args, const std::string& log,
                                               std::chrono::milliseconds boot_timeout) {
  name_ = name;
  std::string enter;  // the machine's cgroup, as machinectl start would place it
  for (const char* h : {"systemd", "unified"}) {
    const fs::path d = fs::path("/sys/fs/cgroup") / h / "machine.slice" / ("systemd-nspawn@" + name_ + ".service");
    if (!fs::exists(d.parent_path().parent_path())) continue;
    fs::create_directories(d);
    cgroups_.push_back(d);
    enter += "echo $$ > " + d.string() + "/cgroup.procs && ";
  }
  // The arguments go through "$@", never through the shell's parsing.
  // --pdeathsig: a test that dies without running stop() (an abort, a ctest timeout's SIGKILL) still
  // powers its machine off.
  std::vector<std::string> argv{"/usr/bin/setpriv", "--pdeathsig", "SIGTERM", "/bin/sh", "-c",
                                enter + "exec \"$0\" \"$@\"", kNspawn, "-b", "-q", "--register=no", "--keep-unit",
                                "--volatile=overlay", "-M", name_, "-D", root};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  nspawn_pid_ = spawn(argv, log);
  // The machine's init: nspawn's child running systemd; then wait for its boot to finish.
  const bool started = wait_until(
      [&] {
        const auto p = std::to_string(nspawn_pid_);
        const auto kids = read_file("/proc/" + p + "/task/" + p + "/children");
        if (!kids || kids->empty()) return false;
        leader_ = static_cast<pid_t>(std::stol(*kids));
        return read_file("/proc/" + std::to_string(leader_) + "/comm").value_or("") == "systemd\n";
      },
      30s);
  if (!started) return "the machine did not start within 30 s";
  std::string state;
  const bool booted = wait_until(
      [&] {
        state = run({"systemctl", "is-system-running"}, 10s, true).second;  // before dbus: "Failed to connect"
        return state.starts_with("running") || state.starts_with("degraded");
      },
      boot_timeout);
  if (!booted) return "the machine did not finish booting (systemctl is-system-running: " + state + ")";
  return std::nullopt;
}

std::pair<ExitStatus, std::string> NspawnMachine::run(const std::vector<std::string>& argv,
                                                      std::chrono::milliseconds timeout, bool with_stderr) const {
  // The machine's PATH, not the test's (a ctest environment may lack the sbin directories).
  std::vector<std::string> full{"/usr/bin/nsenter", "-t", std::to_string(leader_), "-a", "/usr/bin/env",
                                "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"};
  if (with_stderr) full.insert(full.end(), {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1"});
  full.insert(full.end(), argv.begin(), argv.end());
  return run_capture(full, timeout);
}

std::string NspawnMachine::unit_state(const std::string& unit) const {
  auto [st, out] = run({"systemctl", "is-active", unit}, 10s);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

std::string NspawnMachine::host_path(const std::string& path) const {
  return "/proc/" + std::to_string(leader_) + "/root" + path;
}

void NspawnMachine::stop() {
  if (nspawn_pid_ > 0) {
    ::kill(nspawn_pid_, SIGTERM);  // nspawn powers the machine off
    if (!wait_for(nspawn_pid_, 30s).exited) std::fprintf(stderr, "machine %s did not power off; killed\n", name_.c_str());
    nspawn_pid_ = -1;
  }
  for (const auto& c : cgroups_) {
    remove_cgroup(c);
    ::rmdir(c.parent_path().c_str());  // machine.slice, unless something else lives there
  }
  cgroups_.clear();
}

}  // namespace coredumpd::test
