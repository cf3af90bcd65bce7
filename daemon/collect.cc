#include "daemon/collect.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <sstream>
#include <thread>

namespace coredumpd {

namespace {

using Clock = std::chrono::steady_clock;

// Limits on what one crash may make us read: a hostile or huge process must not stall the handshake.
constexpr std::size_t kSmallFileMax = 64 * 1024;     // comm, cgroup, limits, status
constexpr std::size_t kCmdlineMax = 256 * 1024;      // argv beyond this is truncated (ARG_MAX is 2 MiB)
constexpr std::size_t kThreadsMax = 8192;            // thread table entries

std::string chomp(std::string s) {
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

void collect_identity(const ProcDir& proc, HandshakeFacts& f) {
  std::string err;
  if (auto v = proc.read("comm", kSmallFileMax, err)) f.comm = chomp(*v); else f.errors["comm"] = err;
  if (auto v = proc.readlink("exe", err)) f.exe = *v; else f.errors["exe"] = err;
  if (auto v = proc.read("cmdline", kCmdlineMax, err)) f.argv = split_cmdline(*v); else f.errors["cmdline"] = err;
  if (auto v = proc.readlink("cwd", err)) f.cwd = *v; else f.errors["cwd"] = err;
  if (auto v = proc.read("cgroup", kSmallFileMax, err)) f.cgroup = chomp(*v); else f.errors["cgroup"] = err;
  if (auto v = proc.read("limits", kSmallFileMax, err)) f.rlimit_core = parse_rlimit_core(*v); else f.errors["limits"] = err;
}

// The hostname as the crashing process sees it: its UTS namespace's nodename. When that namespace is
// not ours, a short-lived thread joins it (setns affects only the calling thread) and asks uname().
void collect_hostname(const ProcDir& proc, HandshakeFacts& f) {
  struct stat theirs{}, ours{};
  if (::fstatat(proc.dirfd(), "ns/uts", &theirs, 0) < 0 || ::stat("/proc/self/ns/uts", &ours) < 0) {
    f.errors["hostname"] = std::string("ns/uts: ") + std::strerror(errno);
    return;
  }
  if (theirs.st_ino == ours.st_ino && theirs.st_dev == ours.st_dev) {
    utsname u{};
    ::uname(&u);
    f.hostname = u.nodename;
    return;
  }
  UniqueFd ns(::openat(proc.dirfd(), "ns/uts", O_RDONLY | O_CLOEXEC));
  if (!ns) {
    f.errors["hostname"] = std::string("open ns/uts: ") + std::strerror(errno);
    return;
  }
  std::string name, err;
  std::thread([&] {
    if (::setns(ns.get(), CLONE_NEWUTS) < 0) {
      err = std::string("setns(CLONE_NEWUTS): ") + std::strerror(errno);
      return;
    }
    utsname u{};
    ::uname(&u);
    name = u.nodename;
  }).join();
  if (err.empty()) f.hostname = name; else f.errors["hostname"] = err;
}

// Host and namespace TIDs of every thread, so the crashing thread named in NT_PRSTATUS (a TID in the
// task's own pid namespace) can be mapped to a host TID.
void collect_threads(const ProcDir& proc, HandshakeFacts& f) {
  UniqueFd task(::openat(proc.dirfd(), "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  DIR* dir = task ? ::fdopendir(task.get()) : nullptr;
  if (!dir) {
    f.errors["threads"] = std::string("task/: ") + std::strerror(errno);
    return;
  }
  task.release();  // owned by dir now
  std::string err;
  while (dirent* e = ::readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    if (f.threads.size() >= kThreadsMax) {
      f.errors["threads"] = "more than " + std::to_string(kThreadsMax) + " threads; list truncated";
      break;
    }
    if (auto st = proc.read(std::string("task/") + e->d_name + "/status", kSmallFileMax, err))
      if (auto ids = parse_nspid(*st)) f.threads.push_back(*ids);
  }
  ::closedir(dir);
}

struct Collector {
  const char* name;
  void (*run)(const ProcDir&, HandshakeFacts&);
};

constexpr Collector kCollectors[] = {
    {"identity", collect_identity},
    {"hostname", collect_hostname},
    {"threads", collect_threads},
};

}  // namespace

HandshakeFacts collect_handshake_facts(const ProcDir& proc, Clock::time_point deadline) {
  HandshakeFacts f;
  for (const auto& c : kCollectors) {
    const auto start = Clock::now();
    if (start >= deadline) {
      f.errors[c.name] = "skipped: handshake deadline";
      continue;
    }
    c.run(proc, f);
    f.timings_us[c.name] = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
  }
  f.verified = proc.still_ours();
  if (!f.verified) f.errors["verify"] = "process behind the pidfd is gone; metadata may be incomplete";
  return f;
}

std::vector<std::string> split_cmdline(const std::string& raw) {
  std::vector<std::string> argv;
  if (raw.empty()) return argv;
  std::string_view rest(raw);
  if (rest.back() == '\0') rest.remove_suffix(1);
  while (true) {
    const auto nul = rest.find('\0');
    argv.emplace_back(rest.substr(0, nul));
    if (nul == std::string_view::npos) break;
    rest.remove_prefix(nul + 1);
  }
  return argv;
}

std::optional<ThreadIds> parse_nspid(const std::string& status) {
  const auto pos = status.find("\nNSpid:");
  if (pos == std::string::npos) return std::nullopt;
  std::istringstream line(status.substr(pos + 7, status.find('\n', pos + 1) - pos - 7));
  std::int64_t id = 0;
  ThreadIds ids;
  bool any = false;
  while (line >> id) {
    if (!any) ids.host_tid = id;
    ids.ns_tid = id;
    any = true;
  }
  if (!any) return std::nullopt;
  return ids;
}

std::optional<std::uint64_t> parse_rlimit_core(const std::string& limits) {
  const auto pos = limits.find("Max core file size");
  if (pos == std::string::npos) return std::nullopt;
  std::istringstream line(limits.substr(pos + 18, limits.find('\n', pos) - pos - 18));
  std::string soft;
  if (!(line >> soft)) return std::nullopt;
  if (soft == "unlimited") return std::numeric_limits<std::uint64_t>::max();
  try {
    return std::stoull(soft);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace coredumpd
