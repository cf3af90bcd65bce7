#include "tests/e2e/packaged_machine.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "store/index.h"

namespace coredumpd::test {

namespace fs = std::filesystem;

namespace {

// The package names of a Depends field ("libc6 (>= 2.34), libfoo1 | libbar1, ..."): the first
// alternative of each, without its version.
std::set<std::string> depends_names(const std::string& field) {
  std::set<std::string> names;
  std::stringstream in(field);
  std::string item;
  while (std::getline(in, item, ',')) {
    item = item.substr(0, item.find('|'));
    item = item.substr(0, item.find('('));
    item.erase(0, item.find_first_not_of(" \t\n"));
    item.erase(item.find_last_not_of(" \t\n") + 1);
    if (!item.empty()) names.insert(item.substr(0, item.find(':')));  // "libfoo:any" -> "libfoo"
  }
  return names;
}

// `names` with every virtual package (debootstrap cannot resolve those, e.g. libspdlog1.10-fmt9)
// replaced by the host's installed package providing it: the .deb was built here, against them.
std::set<std::string> real_packages(const std::set<std::string>& names) {
  const auto [st, out] = run_capture({"/usr/bin/dpkg-query", "-W", "-f=${Package}\t${Provides}\n"}, 60s);
  std::set<std::string> installed;
  std::map<std::string, std::string> provider;
  std::stringstream in(out);
  for (std::string line; std::getline(in, line);) {
    const auto tab = line.find('\t');
    const std::string pkg = line.substr(0, tab);
    installed.insert(pkg);
    if (tab == std::string::npos) continue;
    for (const auto& p : depends_names(line.substr(tab + 1))) provider.emplace(p, pkg);
  }
  std::set<std::string> real;
  for (const auto& n : names) real.insert(installed.contains(n) || !provider.contains(n) ? n : provider.at(n));
  return real;
}

// 64-bit FNV-1a, hex: a stable name for a cached root made with a given package list.
std::string fnv1a_hex(const std::string& s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Writes `value` to a /proc/sys file; false if it could not.
bool write_sysctl(const std::string& path, const std::string& value) {
  std::ofstream f(path);
  f << value;
  f.flush();
  return static_cast<bool>(f);
}

// fs.suid_dumpable at `value` while in scope (the previous value restored on destruction).
class ScopedSuidDumpable {
 public:
  explicit ScopedSuidDumpable(const std::string& value) {
    saved_ = trimmed(read_file(kPath).value_or("0"));
    if (!write_sysctl(kPath, value)) throw std::runtime_error(std::string("cannot write ") + kPath);
  }
  ~ScopedSuidDumpable() {
    if (!write_sysctl(kPath, saved_)) std::fprintf(stderr, "cannot restore %s to %s\n", kPath, saved_.c_str());
  }
  ScopedSuidDumpable(const ScopedSuidDumpable&) = delete;
  ScopedSuidDumpable& operator=(const ScopedSuidDumpable&) = delete;

 private:
  static constexpr const char* kPath = "/proc/sys/fs/suid_dumpable";
  std::string saved_;
};

}  // namespace

PackagedMachine::PackagedMachine() = default;

PackagedMachine::~PackagedMachine() {
  pattern_.reset();  // core_pattern back first: nothing may crash into a socket that goes away
  machine_.stop();
}

std::optional<MachineProblem> PackagedMachine::build_deb() {
  if (const char* given = std::getenv("COREDUMPD_DEB"); given && *given) {
    deb_ = given;
    if (!fs::exists(deb_)) return MachineProblem{false, "COREDUMPD_DEB=" + deb_ + " does not exist"};
    return std::nullopt;
  }
  // The package of this source tree, built as a user would (RelWithDebInfo, prefix /usr; ninja
  // makes it incremental). Bounded: 40 minutes for a build from scratch on 2 CPUs.
  const std::string log = dir_ / "build-deb.log";
  const auto [st, out] = run_capture(
      {"/bin/sh", "-c", "exec nice \"$0\" >\"$1\" 2>&1", std::string(SOURCE_DIR) + "/packaging/build-deb.sh", log}, 2400s);
  if (st.exit_code() != 0)
    return MachineProblem{false, "packaging/build-deb.sh failed (" + std::string(st.exited ? "exit " + std::to_string(st.exit_code()) : "timed out") +
                                     "):\n" + tail_lines(read_file(log).value_or(""), 30)};
  // lintian's verdict (build-deb.sh fails on its errors), in the test's output where CI shows it.
  const std::string build_log = read_file(log).value_or("");
  if (const auto at = build_log.find("build-deb: lintian:"); at != std::string::npos)
    std::fprintf(stderr, "%s\n", build_log.substr(at, build_log.find('\n', at) - at).c_str());
  for (const auto& e : fs::directory_iterator(std::string(SOURCE_DIR) + "/build/release/package"))
    if (e.path().extension() == ".deb") deb_ = e.path();
  if (deb_.empty()) return MachineProblem{false, "packaging/build-deb.sh made no .deb"};
  return std::nullopt;
}

std::optional<MachineProblem> PackagedMachine::fetch_coredumpctl(const std::string& root) {
  // The systemd-coredump of the machine's own systemd version: its coredumpctl links the
  // machine's libsystemd-shared-252.so.
  const auto [vst, version] =
      run_capture({"/usr/bin/dpkg-query", "--admindir=" + root + "/var/lib/dpkg", "-W", "-f=${Version}", "systemd"}, 30s);
  if (vst.exit_code() != 0 || version.empty()) return MachineProblem{false, "no systemd version in " + root};
  coredumpctl_dir_ = std::string(kMachineCache) + "/systemd-coredump-" + version;
  if (fs::exists(coredumpctl_dir_ + "/usr/bin/coredumpctl")) return std::nullopt;
  const std::string tmp = coredumpctl_dir_ + ".tmp";
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  const auto [st, out] = run_capture({"/bin/sh", "-c",
                                      "cd \"$0\" && apt-get download -q \"systemd-coredump=$1\" 2>&1 && "
                                      "dpkg-deb -x systemd-coredump_*.deb root 2>&1",
                                      tmp, version},
                                     300s);
  if (st.exit_code() != 0) {
    fs::remove_all(tmp);
    if (auto why = mirror_unreachable()) return MachineProblem{true, "cannot download systemd-coredump: " + *why};
    return MachineProblem{false, "apt-get download systemd-coredump=" + version +
                                     " failed (does the host need apt-get update?):\n" + tail_lines(out, 10)};
  }
  fs::rename(tmp + "/root", coredumpctl_dir_);
  fs::remove_all(tmp);
  return std::nullopt;
}

std::optional<MachineProblem> PackagedMachine::setup() {
  if (auto why = real_kernel_unavailable()) return MachineProblem{true, *why};
  for (const char* tool : {kNspawn, kDebootstrap, "/usr/bin/dpkg-deb", "/usr/bin/apt-get", "/usr/bin/nsenter"})
    if (!fs::exists(tool)) return MachineProblem{false, std::string("needs ") + tool + " (scripts/install-deps.sh)"};
  if (auto p = build_deb()) return p;
  const auto [dst, depends] = run_capture({"/usr/bin/dpkg-deb", "-f", deb_, "Depends"}, 30s);
  if (dst.exit_code() != 0) return MachineProblem{false, "dpkg-deb -f " + deb_ + " Depends failed"};
  // A root per dependency list: `dpkg -i` inside then needs no network.
  const auto names = real_packages(depends_names(depends));
  std::string joined;
  for (const auto& n : names) joined += n + ",";
  const std::string root = std::string(kMachineCache) + "/bookworm-deps-" + fnv1a_hex(joined);
  if (auto problem = ensure_debootstrap_root(root, {names.begin(), names.end()})) return MachineProblem{problem->network, problem->why};
  if (auto p = fetch_coredumpctl(root)) return p;

  const std::string run_dir = dir_ / "run";
  fs::create_directories(run_dir);
  fs::permissions(run_dir, fs::perms::owner_all);
  // The store on a host directory: SQLite resolves the /proc/<pid>/root magic link to the host's
  // "/", so the index cannot be opened through host_path().
  fs::create_directories(dir_ / "store");
  const auto dir_of = [](const char* p) { return fs::path(p).parent_path().string(); };
  if (auto failed = machine_.boot("cdpkg" + std::to_string(::getpid()), root,
                                  {"--bind=" + run_dir + ":/run/coredumpd", "--bind=" + dir_ / "store" + ":" + kMachineStore, "--bind-ro=" + deb_ + ":/opt/coredumpd.deb",
                                   "--bind-ro=" + dir_of(CRASHER_BIN) + ":/opt/cd-programs",
                                   "--bind-ro=" + coredumpctl_dir_ + ":/opt/systemd-coredump"},
                                  dir_ / "machine.log"))
    return MachineProblem{false, *failed};
  // /proc/sys is read-only in the machine: whatever the package tries with core_pattern, the
  // install must succeed.
  const auto [ist, iout] = machine_.run({"dpkg", "-i", "/opt/coredumpd.deb"}, 180s, true);
  if (ist.exit_code() != 0) return MachineProblem{false, "dpkg -i coredumpd.deb in the machine failed:\n" + iout};
  const std::string socket = run_dir + "/coredump.socket";
  if (!wait_until([&] { return fs::is_socket(socket); }, 30s))
    return MachineProblem{false, "the machine's coredumpd.socket did not appear as " + socket};
  try {
    pattern_ = std::make_unique<CorePatternLock>("@@" + socket);
  } catch (const std::exception& e) {
    return MachineProblem{false, e.what()};
  }
  const auto [ust, uout] = machine_.run({"useradd", "-m", kMachineUser}, 30s, true);
  if (ust.exit_code() != 0) return MachineProblem{false, "useradd failed: " + uout};
  return std::nullopt;
}

MachineCrash PackagedMachine::crash(int n, const std::string& program, const std::string& user) {
  MachineCrash c;
  c.unit = "crashy-" + std::to_string(n) + ".service";
  std::vector<std::string> argv{"systemd-run", "-q", "--wait", "--unit=" + c.unit, "-p", "LimitCORE=infinity"};
  if (!user.empty()) argv.push_back("--uid=" + user);
  argv.insert(argv.end(), {program, "--mode", "segv"});
  machine_.run(argv, 90s, true);  // fails: the program crashed
  const auto [st, pid] = machine_.run({"systemctl", "show", "-P", "ExecMainPID", c.unit}, 30s);
  try {
    c.pid = std::stoll(pid);
  } catch (const std::exception&) {
    return c;
  }
  wait_until(
      [&] {
        for (auto& r : records())
          if (r.pid == c.pid && r.state != DumpState::InProgress) c.record = r;
        return c.record.has_value();
      },
      60s);
  return c;
}

MachineCrash PackagedMachine::crash_setuid(int n) {
  const char* suid = "/usr/local/bin/crasher-suid";
  machine_.run({"install", "-m", "4755", "-o", "root", "/opt/cd-programs/crasher", suid}, 30s);
  ScopedSuidDumpable dumpable("2");
  return crash(n, suid, kMachineUser);
}

std::pair<ExitStatus, std::string> PackagedMachine::run_as(const std::string& user, const std::vector<std::string>& argv,
                                                           std::chrono::milliseconds timeout) const {
  std::vector<std::string> full;
  if (!user.empty()) full = {"runuser", "-u", user, "--"};
  full.insert(full.end(), argv.begin(), argv.end());
  return machine_.run(full, timeout, true);
}

std::vector<DumpRecord> PackagedMachine::records() const {
  try {
    return Index(dir_ / "store", false).list();
  } catch (const IndexError&) {
    return {};
  }
}

std::string PackagedMachine::log() const { return read_file(dir_ / "machine.log").value_or("(no machine log)"); }

}  // namespace coredumpd::test
