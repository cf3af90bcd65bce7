#include "daemon/proc/lock_release.h"

#include <dirent.h>
#include <linux/kcmp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <sstream>

#include "daemon/proc/collect.h"
#include "daemon/proc/partial_facts.h"
#include "store/dump_record.h"
#include "util/text.h"

namespace coredumpd {

namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

// The collector's own bound: the scan is one kcmp per process (plus one per descriptor when a
// flock/OFD lock must be matched), and the crashing task waits for it.
constexpr auto kScanBudget = std::chrono::milliseconds(200);

// A lock line ("1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF", fs/locks.c lock_get_status) as
// tokens without the ordinal; empty for a blocked waiter ("1: -> POSIX ...") or junk.
std::vector<std::string> lock_tokens(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> t;
  for (std::string w; in >> w;) t.push_back(w);
  if (!t.empty() && t.front().back() == ':') t.erase(t.begin());
  if (t.size() < 5 || t.front() == "->") return {};
  return t;
}

std::string join(const std::vector<std::string>& t) {
  std::string s;
  for (const auto& w : t) s += (s.empty() ? "" : " ") + w;
  return s;
}

long kcmp(pid_t a, pid_t b, int type, unsigned long ia, unsigned long ib) {
  return ::syscall(SYS_kcmp, a, b, type, ia, ib);
}

// True if the scan must end here (limit reached): `s.incomplete` then says so.
bool over_limits(Sharing& s, const SharingScanLimits& limits, std::size_t fds_seen) {
  if (s.processes_scanned >= limits.max_processes)
    s.incomplete = "stopped after " + std::to_string(s.processes_scanned) + " processes: cap";
  else if (fds_seen >= limits.max_fds)
    s.incomplete = "stopped after " + std::to_string(fds_seen) + " descriptors of " +
                   std::to_string(s.processes_scanned) + " processes: cap";
  else if (Clock::now() >= limits.stop_at)
    s.incomplete = "stopped after " + std::to_string(s.processes_scanned) + " processes: time budget";
  return !s.incomplete.empty();
}

const char* lock_family(const std::string& type) { return type == "OFDLCK" ? "OFD" : type == "FLOCK" ? "flock" : "lease"; }

}  // namespace

std::vector<HeldLock> held_locks(const json& fds, const json& proc_locks) {
  std::vector<HeldLock> out;
  auto add = [&out](const std::vector<std::string>& t, const std::string& target, std::optional<int> fd) {
    const std::string line = join(t);
    auto it = std::find_if(out.begin(), out.end(), [&](const HeldLock& l) { return l.line == line; });
    if (it == out.end()) {
      out.push_back({t[0], t[2], target, line, {}});
      it = std::prev(out.end());
    }
    if (fd && std::find(it->fds.begin(), it->fds.end(), *fd) == it->fds.end()) it->fds.push_back(*fd);
  };
  if (fds.is_array()) {
    for (const json& fd : fds) {
      if (!fd.is_object() || !fd.contains("locks") || !fd["locks"].is_array() || !fd.value("fd", json()).is_number_integer()) continue;
      const std::string target = bytes_from_json(fd.value("target", json())).value_or("");
      for (const json& l : fd["locks"])
        if (l.is_string())
          if (const auto t = lock_tokens(l.get<std::string>()); !t.empty()) add(t, target, fd["fd"].get<int>());
    }
  }
  if (proc_locks.is_array()) {
    for (const json& l : proc_locks)
      if (l.is_string())
        if (const auto t = lock_tokens(l.get<std::string>()); !t.empty()) add(t, t[4], std::nullopt);
  }
  return out;
}

Sharing scan_sharing(pid_t crasher, std::span<const int> fds, const SharingScanLimits& limits) {
  Sharing s;
  DIR* proc = ::opendir("/proc");
  if (!proc) {
    s.incomplete = std::string("/proc: ") + std::strerror(errno);
    return s;
  }
  const pid_t self = ::getpid();
  std::size_t fds_seen = 0;
  while (const dirent* de = ::readdir(proc)) {
    if (!is_digit(de->d_name[0])) continue;
    const auto pid = static_cast<pid_t>(std::strtol(de->d_name, nullptr, 10));
    if (pid == crasher || pid == self) continue;
    if (over_limits(s, limits, fds_seen)) break;
    ++s.processes_scanned;
    const long same_table = kcmp(crasher, pid, KCMP_FILES, 0, 0);
    if (same_table < 0) {
      if (errno == ESRCH) continue;  // gone meanwhile
      if (errno == EPERM || errno == EACCES) {
        if (s.not_compared.size() < 16) s.not_compared[pid] = std::strerror(errno);
        continue;
      }
      s.incomplete = "kcmp(KCMP_FILES) with pid " + std::to_string(pid) + ": " + std::strerror(errno);
      break;  // ENOSYS: no CONFIG_KCMP, no process can be compared
    }
    if (same_table == 0) {
      s.table_shared_with = pid;
      break;  // nothing in the table is closed: no other comparison matters
    }
    if (s.file_shared_with.size() == fds.size()) continue;
    DIR* theirs = ::opendir(("/proc/" + std::string(de->d_name) + "/fd").c_str());
    if (!theirs) continue;  // gone, or a kernel thread
    while (const dirent* fe = ::readdir(theirs)) {
      if (!is_digit(fe->d_name[0])) continue;
      if (++fds_seen > limits.max_fds) break;
      const auto their_fd = std::strtoul(fe->d_name, nullptr, 10);
      for (const int mine : fds)
        if (!s.file_shared_with.contains(mine) && kcmp(crasher, pid, KCMP_FILE, static_cast<unsigned long>(mine), their_fd) == 0)
          s.file_shared_with[mine] = pid;
    }
    ::closedir(theirs);
  }
  ::closedir(proc);
  return s;
}

const char* release_name(Release r) {
  switch (r) {
    case Release::Released: return "released";
    case Release::Kept: return "kept";
    case Release::Unknown: return "unknown";
  }
  return "?";
}

ReleaseVerdict close_files_verdict(const HeldLock& lock, const Sharing& sharing) {
  if (lock.fds.empty()) return {Release::Kept, "not held through the crasher's fd table"};
  if (sharing.table_shared_with)
    return {Release::Kept, "fd table shared with pid " + std::to_string(*sharing.table_shared_with) + " (CLONE_FILES)"};
  if (lock.type != "POSIX") {
    for (const int fd : lock.fds)
      if (const auto it = sharing.file_shared_with.find(fd); it != sharing.file_shared_with.end())
        return {Release::Kept, "open file shared with pid " + std::to_string(it->second) + " (" + lock_family(lock.type) + ")"};
  }
  if (!sharing.incomplete.empty()) return {Release::Unknown, "scan of other processes incomplete: " + sharing.incomplete};
  return {Release::Released, ""};
}

json lock_release_json(const std::vector<HeldLock>& locks, const Sharing& sharing) {
  json out = json::array();
  for (const HeldLock& l : locks) {
    const ReleaseVerdict v = close_files_verdict(l, sharing);
    json j = {{"type", l.type}, {"access", l.access}, {"target", bytes_to_json(l.target)}, {"fds", l.fds},
              {"line", l.line}, {"close_files", release_name(v.release)}};
    if (!v.why.empty()) j["why"] = v.why;
    out.push_back(std::move(j));
  }
  return out;
}

void collect_lock_release(const ProcDir& proc, HandshakeFacts& f, const CollectLimits& limits, const PartialFacts& so_far) {
  const auto [fds, proc_locks] = so_far.read([](const HandshakeFacts& s) {
    return std::pair(s.proc.value("fds", json::array()), s.proc.value("locks", json::array()));
  });
  const std::vector<HeldLock> locks = held_locks(fds, proc_locks);
  if (locks.empty()) return;
  std::vector<int> to_match;  // descriptors of flock/OFD locks: only their open files matter
  for (const HeldLock& l : locks)
    if (l.type != "POSIX") to_match.insert(to_match.end(), l.fds.begin(), l.fds.end());
  SharingScanLimits scan;
  scan.stop_at = std::min(limits.deadline, Clock::now() + std::min<Clock::duration>(limits.per_collector, kScanBudget));
  const Sharing sharing = scan_sharing(proc.pid(), to_match, scan);
  f.proc["lock_release"] = lock_release_json(locks, sharing);
  std::string notes = sharing.incomplete;
  if (!sharing.not_compared.empty()) {
    notes += std::string(notes.empty() ? "" : "; ") + "kcmp refused for pid";
    for (const auto& [pid, why] : sharing.not_compared) notes += " " + std::to_string(pid) + " (" + why + ")";
    notes += ": not compared";
  }
  if (!notes.empty()) f.errors["lock_release"] = notes;
}

}  // namespace coredumpd
