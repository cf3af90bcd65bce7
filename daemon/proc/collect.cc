#include "daemon/proc/collect.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <sstream>

#include <spdlog/spdlog.h>

#include "daemon/proc/lock_release.h"
#include "daemon/proc/partial_facts.h"
#include "daemon/proc/thread_names.h"
#include "store/dump_record.h"
#include "util/dir.h"
#include "util/text.h"
#include "util/time.h"

namespace coredumpd {

namespace {

using Clock = std::chrono::steady_clock;

// Limits on what one crash may make us read: a hostile or huge process must not stall the handshake.
constexpr std::size_t kSmallFileMax = 64 * 1024;     // comm, cgroup, limits, status
constexpr std::size_t kCmdlineMax = 256 * 1024;      // argv beyond this is truncated (ARG_MAX is 2 MiB)
constexpr std::size_t kThreadsMax = 8192;            // thread table entries
constexpr std::size_t kFdsMax = 65536;               // descriptors listed
constexpr std::size_t kBigFileMax = 4 * 1024 * 1024;  // maps, mountinfo, /proc/locks

std::string chomp(std::string s) {
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

// proc.read(name), or std::nullopt with the reason filed under f.errors[name].
std::optional<std::string> read_noting(const ProcDir& proc, const char* name, std::size_t max_bytes, HandshakeFacts& f) {
  std::string err;
  auto v = proc.read(name, max_bytes, err);
  if (!v) f.errors[name] = err;
  return v;
}

// proc.readlink(name), or std::nullopt with the reason filed under f.errors[name].
std::optional<std::string> readlink_noting(const ProcDir& proc, const char* name, HandshakeFacts& f) {
  std::string err;
  auto v = proc.readlink(name, err);
  if (!v) f.errors[name] = err;
  return v;
}

// The identity, one file per collector: each publishes as it returns, so a read that stalls (a
// cmdline read waits for the task's mmap_lock) loses only itself and what comes after it.
void collect_comm(const ProcDir& proc, HandshakeFacts& f, const CollectLimits&, const PartialFacts&) {
  if (auto v = read_noting(proc, "comm", kSmallFileMax, f)) f.comm = chomp(*v);
}

void collect_exe(const ProcDir& proc, HandshakeFacts& f, const CollectLimits&, const PartialFacts&) {
  if (auto v = readlink_noting(proc, "exe", f)) f.exe = *v;
}

void collect_cmdline(const ProcDir& proc, HandshakeFacts& f, const CollectLimits&, const PartialFacts&) {
  if (auto v = read_noting(proc, "cmdline", kCmdlineMax, f)) f.argv = split_cmdline(*v);
}

void collect_cwd(const ProcDir& proc, HandshakeFacts& f, const CollectLimits&, const PartialFacts&) {
  if (auto v = readlink_noting(proc, "cwd", f)) f.cwd = *v;
}

void collect_cgroup(const ProcDir& proc, HandshakeFacts& f, const CollectLimits&, const PartialFacts&) {
  if (auto v = read_noting(proc, "cgroup", kSmallFileMax, f)) f.cgroup = chomp(*v);
}

void collect_limits(const ProcDir& proc, HandshakeFacts& f, const CollectLimits&, const PartialFacts&) {
  if (auto v = read_noting(proc, "limits", kSmallFileMax, f)) {
    f.rlimit_core = parse_rlimit_core(*v);
    f.proc["limits"] = bytes_to_json(*v);
  }
}

// The hostname as the crashing process sees it: its UTS namespace's nodename. When that namespace is
// not ours, a short-lived thread joins it (setns affects only the calling thread) and asks uname().
void collect_hostname(const ProcDir& proc, HandshakeFacts& f, const CollectLimits&, const PartialFacts&) {
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
void collect_threads(const ProcDir& proc, HandshakeFacts& f, const CollectLimits&, const PartialFacts&) {
  std::string err;
  const auto failed = for_each_dir_entry(proc.dirfd(), "task", [&](std::string_view name) {
    if (!is_digit(name[0])) return true;
    if (f.threads.size() >= kThreadsMax) {
      f.errors["threads"] = "more than " + std::to_string(kThreadsMax) + " threads; list truncated";
      return false;
    }
    if (auto st = proc.read("task/" + std::string(name) + "/status", kSmallFileMax, err))
      if (auto ids = parse_nspid(*st)) f.threads.push_back(*ids);
    return true;
  });
  // A readdir failure part way keeps the threads seen so far, as before.
  if (failed && failed->step == DirError::Step::Open)
    f.errors["threads"] = std::string("task/: ") + std::strerror(failed->error);
}

// Every thread's name, by the TIDs the threads collector listed (its NSpid lines map them into the
// task's pid namespace, so no status is read twice), within the collector budget.
void collect_thread_names(const ProcDir& proc, HandshakeFacts& f, const CollectLimits& limits, const PartialFacts& so_far) {
  const auto [threads, truncated] = so_far.read([](const HandshakeFacts& s) {
    return std::pair(s.threads, s.errors.contains("threads"));
  });
  if (threads.empty()) {
    f.errors["thread_names"] = "no thread list (see threads)";
    return;
  }
  std::optional<std::size_t> total;  // only needed when the list stopped at its cap: one more read
  std::string err;
  if (truncated)
    if (auto st = proc.read("status", kSmallFileMax, err)) total = parse_status_threads(*st);
  auto r = read_thread_names(proc, threads, kThreadNamesMax, std::min(limits.deadline, Clock::now() + limits.per_collector), total);
  if (!r.error.empty()) f.errors["thread_names"] = r.error;
  f.thread_names = std::move(r.names);
  f.thread_names_incomplete = std::move(r.incomplete);
}

// Open descriptors with their targets and fdinfo (pos, flags, mnt_id, ino, lock lines). This is the
// collector COREDUMP_CLOSE_FILES makes urgent: after the ack the fd table is gone (docs/PROTOCOL.md §6.4).
void collect_fds(const ProcDir& proc, HandshakeFacts& f, const CollectLimits& limits, const PartialFacts&) {
  const auto start = Clock::now();
  auto fds = nlohmann::json::array();
  std::string err;
  const auto failed = for_each_dir_entry(proc.dirfd(), "fd", [&](std::string_view name) {
    if (!is_digit(name[0])) return true;
    if (fds.size() >= kFdsMax || Clock::now() - start > limits.per_collector) {
      f.errors["fds"] = "stopped after " + std::to_string(fds.size()) + " descriptors: collector budget";
      return false;
    }
    const std::string number(name);
    nlohmann::json fd = {{"fd", std::stoi(number)}};
    if (auto target = proc.readlink("fd/" + number, err)) fd["target"] = bytes_to_json(*target);
    if (auto info = proc.read("fdinfo/" + number, kSmallFileMax, err)) {
      std::istringstream in(*info);
      std::string line;
      while (std::getline(in, line)) {
        const auto colon = line.find(':');
        if (colon == std::string::npos) continue;
        const auto key = line.substr(0, colon);
        auto value = line.substr(colon + 1);
        value.erase(0, value.find_first_not_of(" \t"));
        if (key == "lock") fd["locks"].push_back(value);
        else if (key == "pos" || key == "mnt_id" || key == "ino") fd[key] = std::strtoull(value.c_str(), nullptr, 10);
        else if (key == "flags") fd[key] = value;  // octal, as the kernel prints it
      }
    }
    fds.push_back(std::move(fd));
    return true;
  });
  if (failed && failed->step == DirError::Step::Open) {
    f.errors["fds"] = std::string("fd/: ") + std::strerror(failed->error);
    return;
  }
  f.proc["fds"] = std::move(fds);
}

// True if collect_fds read every descriptor and none of their fdinfo had a lock line. fdinfo lists
// each lock whose file is that descriptor's open file and whose owner is this fd table or that file
// (fs/locks.c show_fd_locks), and a process cannot keep a POSIX lock on a file it no longer has open:
// so then the process holds no lock at all, and /proc/locks (system-wide, often the slowest read of
// the handshake) has nothing for it.
bool fds_show_no_lock(const HandshakeFacts& f) {
  if (f.errors.contains("fds")) return false;
  const auto it = f.proc.find("fds");
  if (it == f.proc.end()) return false;
  return std::none_of(it->begin(), it->end(), [](const nlohmann::json& fd) { return fd.contains("locks"); });
}

// The process's entries in /proc/locks (POSIX and flock locks name the owner's pid; OFD locks show
// -1 and appear in the owning descriptor's fdinfo lock lines instead). Skipped when the fdinfo of
// every descriptor shows that there is none.
void collect_locks(const ProcDir& proc, HandshakeFacts& f, const CollectLimits&, const PartialFacts& so_far) {
  if (so_far.read(fds_show_no_lock)) {
    f.proc["locks"] = nlohmann::json::array();
    return;
  }
  UniqueFd fd(::open("/proc/locks", O_RDONLY | O_CLOEXEC));
  std::string text;
  char buf[16384];
  ssize_t n = 0;
  while (fd && text.size() < kBigFileMax && (n = ::read(fd.get(), buf, sizeof(buf))) > 0) text.append(buf, static_cast<std::size_t>(n));
  if (!fd || n < 0) {
    f.errors["locks"] = std::string("/proc/locks: ") + std::strerror(errno);
    return;
  }
  f.proc["locks"] = locks_of_pid(text, proc.pid());
}

void collect_maps(const ProcDir& proc, HandshakeFacts& f, const CollectLimits&, const PartialFacts&) {
  if (auto v = read_noting(proc, "maps", kBigFileMax, f)) {
    f.estimated_core_bytes = estimate_core_bytes(*v);
    f.proc["maps"] = bytes_to_json(*v);
  }
}

void collect_status(const ProcDir& proc, HandshakeFacts& f, const CollectLimits&, const PartialFacts&) {
  if (auto v = read_noting(proc, "status", kSmallFileMax, f)) {
    f.status = *v;
    f.proc["status"] = bytes_to_json(*v);
  }
  if (auto v = read_noting(proc, "uid_map", kSmallFileMax, f)) f.uid_map = *v;
  if (auto v = read_noting(proc, "gid_map", kSmallFileMax, f)) f.gid_map = *v;
  if (auto v = read_noting(proc, "mountinfo", kBigFileMax, f)) f.proc["mountinfo"] = bytes_to_json(*v);
}

// Namespace inodes ("uts" -> 4026531838), to tell a container's crash from the host's.
void collect_namespaces(const ProcDir& proc, HandshakeFacts& f, const CollectLimits&, const PartialFacts&) {
  static constexpr const char* kNamespaces[] = {"cgroup", "ipc", "mnt", "net", "pid", "time", "user", "uts"};
  std::string err;
  for (const char* ns : kNamespaces) {
    auto link = proc.readlink(std::string("ns/") + ns, err);  // "uts:[4026531838]"
    if (!link) continue;
    const auto open = link->find('[');
    if (open != std::string::npos) f.proc["namespaces"][ns] = std::strtoull(link->c_str() + open + 1, nullptr, 10);
  }
}

void collect_environ(const ProcDir& proc, HandshakeFacts& f, const CollectLimits&, const PartialFacts&) {
  if (auto v = read_noting(proc, "environ", kCmdlineMax, f)) f.environ = split_cmdline(*v);
}

void collect_test_delay(const ProcDir&, HandshakeFacts&, const CollectLimits& limits, const PartialFacts&) {
  if (limits.test_delay.count() > 0 && limits.test_delay_collector.empty()) sleep_test_delay(limits);
}

struct Collector {
  const char* name;
  void (*run)(const ProcDir&, HandshakeFacts&, const CollectLimits&, const PartialFacts&);
};

// Order matters when the deadline cuts the list short: what only exists before the ack comes first
// (the identity, then the fd table COREDUMP_CLOSE_FILES takes away); the core's own notes can
// later stand in for comm, cmdline (psargs), exe and maps (NT_FILE), never for the rest.
constexpr Collector kCollectors[] = {
    {"comm", collect_comm},         {"exe", collect_exe},           {"cmdline", collect_cmdline},
    {"cwd", collect_cwd},           {"cgroup", collect_cgroup},     {"limits", collect_limits},
    {"fds", collect_fds},           {"locks", collect_locks},       {"lock_release", collect_lock_release},
    {"threads", collect_threads},
    {"thread_names", collect_thread_names},                         {"hostname", collect_hostname},
    {"namespaces", collect_namespaces},                             {"status", collect_status},
    {"test_delay", collect_test_delay}, {"maps", collect_maps},     {"environ", collect_environ},
};

constexpr auto kCollectorNames = [] {
  std::array<const char*, std::size(kCollectors)> names{};
  for (std::size_t i = 0; i < names.size(); ++i) names[i] = kCollectors[i].name;
  return names;
}();

}  // namespace

std::span<const char* const> handshake_collector_names() { return kCollectorNames; }

bool sleep_test_delay(const CollectLimits& limits) {
  // Not sleep_for: a stop must end the sleep (condition_variable_any wakes on the stop_token).
  std::mutex mu;
  std::condition_variable_any never_notified;
  std::unique_lock lock(mu);
  spdlog::info("test hook: a collector sleeps {} ms", limits.test_delay.count());  // every use shows in the log
  const auto start = Clock::now();
  // The predicate never holds: this returns at the timeout, or at once when the stop is requested.
  (void)never_notified.wait_for(lock, limits.stop, limits.test_delay, [] { return false; });
  if (limits.stop.stop_requested()) {
    spdlog::info("test hook: collector delay cut short by the stop after {} of {} ms", us_since(start) / 1000,
                 limits.test_delay.count());
    return false;
  }
  return true;
}

void collect_handshake_facts(const ProcDir& proc, const CollectLimits& limits, PartialFacts& out) {
  for (const auto& c : kCollectors) {
    const auto start = Clock::now();
    if (start >= limits.deadline) {
      out.note_error(c.name, "skipped: handshake deadline");
      continue;
    }
    if (limits.test_delay.count() > 0 && limits.test_delay_collector == c.name) sleep_test_delay(limits);
    HandshakeFacts delta;
    c.run(proc, delta, limits, out);
    delta.timings_us[c.name] = us_since(start);
    out.publish(c.name, std::move(delta));
  }
  out.finish(proc.still_ours());
}

HandshakeFacts collect_handshake_facts(const ProcDir& proc, const CollectLimits& limits) {
  PartialFacts out;
  collect_handshake_facts(proc, limits, out);
  return out.take("skipped: handshake deadline");
}

}  // namespace coredumpd
