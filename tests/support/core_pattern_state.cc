#include "tests/support/core_pattern_state.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include "tests/support/test_support.h"

namespace coredumpd::test {

namespace {

constexpr const char* kStateDir = "/run/coredumpd-test";
constexpr const char* kPatternPath = "/proc/sys/kernel/core_pattern";
// Where the tests' sockets live: TempDir (test_support.cc) and tests/systemd/lib.sh.
constexpr std::string_view kTestTempPrefixes[] = {"/tmp/cdt-", "/tmp/cdd-systemd."};

struct State {
  long pid = 0;
  std::string start;  // /proc/<pid>/stat starttime: tells a reused pid apart
  std::string set, previous;
};

// Field 22 of /proc/<pid>/stat (starttime), or "" if the process is gone.
std::string start_time_of(long pid) {
  const auto f = proc_stat_fields("/proc/" + std::to_string(pid) + "/stat");
  return f.size() >= 22 ? f[21] : "";
}

std::optional<State> read_state() {
  const auto text = read_file(kCorePatternStatePath);
  if (!text) return std::nullopt;
  State s;
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    const auto sp = line.find(' ');
    const std::string key = line.substr(0, sp), value = sp == std::string::npos ? "" : line.substr(sp + 1);
    if (key == "pid") s.pid = std::atol(value.c_str());
    if (key == "start") s.start = value;
    if (key == "set") s.set = value;
    if (key == "previous") s.previous = value;
  }
  if (s.pid <= 0 || s.set.empty()) return std::nullopt;  // torn or foreign: treat as absent
  return s;
}

std::string current_pattern() {
  std::string p = read_file(kPatternPath).value_or("");
  while (!p.empty() && p.back() == '\n') p.pop_back();
  return p;
}

bool write_pattern_logged(const std::string& pattern, const std::string& why) {
  std::ofstream out(kPatternPath);
  out << pattern;
  out.flush();
  std::fprintf(stderr, "CorePatternLock: %s; %s core_pattern \"%s\"\n", why.c_str(),
               out ? "restored" : "FAILED to restore", pattern.c_str());
  return static_cast<bool>(out);
}

std::string cmdline_of(long pid) {
  std::string c = read_file("/proc/" + std::to_string(pid) + "/cmdline").value_or("");
  while (!c.empty() && c.back() == '\0') c.pop_back();
  for (auto& ch : c)
    if (ch == '\0') ch = ' ';
  return c.size() > 200 ? c.substr(0, 200) + "..." : c;
}

}  // namespace

void record_core_pattern_state(const std::string& set, const std::string& previous) {
  ::mkdir(kStateDir, 0755);
  const std::string tmp = std::string(kCorePatternStatePath) + ".new";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "pid " << ::getpid() << "\nstart " << start_time_of(::getpid()) << "\nset " << set << "\nprevious "
        << previous << "\n";
    out.flush();
    if (!out) throw std::runtime_error(std::string("cannot write ") + tmp);
  }
  if (::rename(tmp.c_str(), kCorePatternStatePath) != 0)
    throw std::runtime_error(std::string("rename to ") + kCorePatternStatePath + ": " + std::strerror(errno));
}

void clear_core_pattern_state() noexcept { ::unlink(kCorePatternStatePath); }

std::string core_pattern_socket_path(const std::string& pattern) {
  if (pattern.rfind("@@/", 0) == 0) return pattern.substr(2);
  if (pattern.rfind("@/", 0) == 0) return pattern.substr(1);
  return "";
}

bool socket_has_listener(const std::string& path) {
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) return true;  // not ours to judge
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return true;
  const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  const int err = errno;
  ::close(fd);
  return rc == 0 || (err != ECONNREFUSED && err != ENOENT && err != ENOTDIR);
}

void recover_stale_core_pattern() {
  const std::string current = current_pattern();
  const std::string socket = core_pattern_socket_path(current);
  const auto state = read_state();
  // We hold the lock, so whoever wrote a state file no longer does: its holder died without the
  // destructor or signal handler running (SIGKILL). Its record is spent either way.
  if (state) clear_core_pattern_state();
  if (state && !state->start.empty() && start_time_of(state->pid) == state->start) {
    std::fprintf(stderr, "CorePatternLock: state file of pid %ld, which still runs, left alone: \"%s\"\n",
                 state->pid, current.c_str());
    return;
  }
  if (socket.empty() || socket_has_listener(socket)) {
    if (state && current == state->set)
      std::fprintf(stderr, "CorePatternLock: core_pattern \"%s\" of dead test pid %ld is %s; left as it is\n",
                   current.c_str(), state->pid, socket.empty() ? "not a socket" : "still listened on");
    return;
  }
  if (state) {
    if (current != state->set) {
      std::fprintf(stderr, "CorePatternLock: dead test pid %ld set \"%s\", but core_pattern is now \"%s\"; left\n",
                   state->pid, state->set.c_str(), current.c_str());
      return;
    }
    write_pattern_logged(state->previous, "test pid " + std::to_string(state->pid) +
                                              " died holding core_pattern \"" + current +
                                              "\" (nobody listens there)");
    return;
  }
  for (const auto prefix : kTestTempPrefixes)
    if (socket.rfind(prefix, 0) == 0) {
      write_pattern_logged("core", "core_pattern \"" + current +
                                       "\" is a dead test socket and no test recorded what it replaced");
      return;
    }
}

std::string flock_holder(int fd) {
  struct stat sb {};
  if (::fstat(fd, &sb) != 0) return "";
  char id[64];
  std::snprintf(id, sizeof(id), " %02x:%02x:%lu ", ::major(sb.st_dev), ::minor(sb.st_dev),
                static_cast<unsigned long>(sb.st_ino));
  // /proc/locks names the pid that called flock(), often gone (flock(1), or a parent whose child
  // inherited the descriptor); the processes that hold it now show it in /proc/<pid>/fdinfo/<fd>.
  std::string holders;
  std::error_code ec;
  for (const auto& proc : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string pid = proc.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code fec;
    for (const auto& info : std::filesystem::directory_iterator(proc.path() / "fdinfo", fec)) {
      const auto text = read_file(info.path());
      const auto at = text ? text->find(id) : std::string::npos;
      if (at == std::string::npos) continue;
      const auto line = text->rfind('\n', at);
      if (text->substr(line + 1, at - line).find("->") != std::string::npos) continue;  // a waiter
      holders += (holders.empty() ? "" : ", ") + ("pid " + pid + " (" + cmdline_of(std::atol(pid.c_str())) + ")");
      break;
    }
  }
  if (!holders.empty()) return holders;
  std::istringstream in(read_file("/proc/locks").value_or(""));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string num, kind, mode, rw, pid, file;
    // "1: FLOCK  ADVISORY  WRITE 1234 00:1a:5678 0 EOF"; waiters are listed as "1: -> FLOCK ...".
    if ((f >> num >> kind >> mode >> rw >> pid >> file) && kind == "FLOCK" && " " + file + " " == id)
      return "pid " + pid + " (not found: the lock lives on in a descriptor it passed on)";
  }
  return "";
}

}  // namespace coredumpd::test
